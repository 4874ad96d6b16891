"""Package discovery only (everything else is in pyproject.toml).

The Lambda handlers live in the top-level `lambda/` folder, which cannot be a package name (`lambda` is a
keyword): it installs as `speculative_infra_lambda`. pyproject's `packages.find` cannot map a folder to
another name, so the list is built here, with every function folder found automatically.
"""

from setuptools import find_packages, setup

LAMBDA_PACKAGE = "speculative_infra_lambda"

setup(
    packages=[
        *find_packages(include=["speculative_infra", "speculative_infra.*"]),
        LAMBDA_PACKAGE,
        *(f"{LAMBDA_PACKAGE}.{name}" for name in find_packages("lambda")),
    ],
    package_dir={LAMBDA_PACKAGE: "lambda"},
)
