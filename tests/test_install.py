"""A user's `pip install`: the built wheel, no extras, into a fresh virtual environment, with the oldest
aws-cdk-lib the package declares. The CLI must run (no module the plain install lacks) and a CDK app
must synthesize with the pinned CDK CLI and pass cfn-lint.

Dependencies come from the package registry as a user's install gets them (pip's cache makes a rerun
fast); the rest of the suite runs on constraints.txt, the newest aws-cdk-lib this project tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.cfn import cfn_lint_errors
from tests.conftest import REPO, built_wheel

CDK_LIB = re.compile(r"^aws-cdk-lib>=(?P<floor>[0-9.]+),<(?P<ceiling>[0-9]+)$")


def declared_cdk_floor() -> str:
    """The lower bound of aws-cdk-lib in pyproject's dependencies (a range, never a pin)."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    [spec] = [d for d in deps if d.startswith("aws-cdk-lib")]
    match = CDK_LIB.match(spec)
    assert match, f"aws-cdk-lib must be declared as a range '>=X,<3', not {spec!r}"
    return match["floor"]


def constraints_without_cdk(path: Path) -> Path:
    """constraints.txt less the CDK's own packages, which follow the aws-cdk-lib being installed."""
    kept = [
        line
        for line in (REPO / "constraints.txt").read_text().splitlines()
        if not line.lower().startswith(("aws-cdk", "jsii", "constructs", "publication", "typeguard"))
    ]
    path.write_text("\n".join(kept) + "\n")
    return path


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory) -> Path:
    """bin/ of a venv holding the wheel without extras and aws-cdk-lib at its declared floor."""
    root = tmp_path_factory.mktemp("plain-install")
    wheel = built_wheel(root / "dist")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    constraints = constraints_without_cdk(root / "constraints.txt")
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-c",
            str(constraints),
            str(wheel),
            f"aws-cdk-lib=={declared_cdk_floor()}",
        ],
        check=True,
        cwd=root,
    )
    return venv / "bin"


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20", **env}
    environment.pop("PYTHONPATH", None)  # nothing of this checkout on the path
    return subprocess.run(args, cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def test_the_plain_install_has_no_extras(plain_install, tmp_path):
    found = run([str(plain_install / "python"), "-c", "import matplotlib"], tmp_path)
    assert found.returncode != 0, "matplotlib is an extra; the plain install must not carry it"
    where = run(
        [str(plain_install / "python"), "-c", "import speculative_infra as s; print(s.__file__)"], tmp_path
    )
    assert str(REPO) not in where.stdout, where.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["check", str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml")],
        ["check", str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml"), "--format", "json"],
        ["catalog", "instances"],
        ["catalog", "vllm-flags", "0.15.1"],
        ["bench", "--help"],
        ["preflight", "--help"],
    ],
)
def test_the_cli_runs_after_a_plain_install(plain_install, tmp_path, args):
    result = run([str(plain_install / "speculative-infra"), *args], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr


def test_report_draws_svg_charts_without_matplotlib(plain_install, tmp_path):
    results = tmp_path / "results.json"
    results.write_text((REPO / "tests/benchmark/fixtures/results_v1.json").read_text())
    result = run([str(plain_install / "speculative-infra"), "report", str(results), "--out", "out"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "speculative-infra[bench]" in result.stderr
    assert (tmp_path / "out" / "report.md").is_file()
    assert sorted(p.suffix for p in (tmp_path / "out").iterdir()) >= [".md", ".svg"]


def test_an_app_synthesizes_on_the_oldest_supported_cdk_with_the_pinned_cli(plain_install, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "app.py").write_text((REPO / "examples/consumer-app/app.py").read_text())
    cli = REPO / "node_modules" / ".bin" / "cdk"
    result = run(
        [
            str(cli),
            "synth",
            "--quiet",
            "--no-notices",
            "--app",
            f"{plain_install / 'python'} app.py",
            "--output",
            "cdk.out",
        ],
        app,
        CDK_DISABLE_VERSION_CHECK="true",
        CDK_OUTDIR=str(app / "cdk.out"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    version = run(
        [
            str(plain_install / "python"),
            "-c",
            "from importlib.metadata import version; print(version('aws-cdk-lib'))",
        ],
        app,
    )
    assert version.stdout.strip() == declared_cdk_floor()
    template = json.loads((app / "cdk.out" / "ConsumerLlm.template.json").read_text())
    assert cfn_lint_errors(template, ["us-east-1"]) == []
    assert "AWS::SageMaker::InferenceComponent" in {r["Type"] for r in template["Resources"].values()}
