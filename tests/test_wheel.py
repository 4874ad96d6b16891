"""The wheel works inside someone else's CDK app: built, installed outside the repo, synthesized."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.cfn import cfn_lint_errors
from tests.conftest import REPO, built_wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return built_wheel(tmp_path_factory.mktemp("build") / "dist")


def test_wheel_contents(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "speculative_infra/py.typed" in names
    assert "speculative_infra/catalog/data/instances.yaml" in names
    assert "speculative_infra/catalog/data/vllm/0.15.1.json" in names
    assert "speculative_infra_lambda/optimization_job/handler.py" in names
    assert "speculative_infra_lambda/endpoint_benchmark/handler.py" in names
    assert "speculative_infra_lambda/endpoint_canary/prompts.jsonl" in names  # package data, not code
    assert "speculative_infra/catalog/data/monitoring.yaml" in names
    assert not any("__pycache__" in n or n.startswith("tests/") for n in names)


@pytest.fixture(scope="module")
def consumer_assembly(wheel, tmp_path_factory) -> Path:
    """A fresh venv outside the repo with only the wheel installed; dependencies come from this
    environment's site-packages through a .pth file (that path does not activate this repo's
    editable install), so the test needs no network."""
    root = tmp_path_factory.mktemp("consumer")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], text=True
        ).strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    with zipfile.ZipFile(wheel) as archive:  # what `pip install --no-deps` does for a pure wheel
        archive.extractall(site)
    app_dir = root / "app"
    shutil.copytree(REPO / "examples" / "consumer-app", app_dir)
    env = {
        **os.environ,
        "CDK_OUTDIR": str(app_dir / "cdk.out"),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    env.pop("PYTHONPATH", None)
    where = subprocess.check_output(
        [str(python), "-c", "import speculative_infra; print(speculative_infra.__file__)"],
        cwd=app_dir,
        env=env,
        text=True,
    ).strip()
    assert where.startswith(str(site)), where
    subprocess.run([str(python), "app.py"], cwd=app_dir, env=env, check=True, capture_output=True)
    return app_dir / "cdk.out"


def test_consumer_template_passes_cfn_lint(consumer_assembly):
    template = json.loads((consumer_assembly / "ConsumerLlm.template.json").read_text())
    assert cfn_lint_errors(template, ["us-east-1"]) == []
    types = {r["Type"] for r in template["Resources"].values()}
    assert {
        "Custom::EagleOptimizationJob",
        "AWS::SageMaker::Endpoint",
        "AWS::SageMaker::InferenceComponent",
    } <= types


def test_consumer_lambda_assets_contain_handlers(consumer_assembly):
    assets = json.loads((consumer_assembly / "ConsumerLlm.assets.json").read_text())["files"]
    folders = [
        consumer_assembly / a["source"]["path"]
        for a in assets.values()
        if a["source"].get("packaging") == "zip"
    ]
    handler_folders = [f for f in folders if (f / "optimization_job" / "handler.py").is_file()]
    assert handler_folders, folders
    assert not any((f / "optimization_job" / "__pycache__").exists() for f in handler_folders)
    assert not any((f / "endpoint_benchmark").exists() for f in handler_folders)  # one handler per asset
    bench = [f for f in folders if (f / "endpoint_benchmark" / "handler.py").is_file()]
    assert bench and (bench[0] / "speculative_infra" / "benchmark" / "sweep.py").is_file()
    canary = [f for f in folders if (f / "endpoint_canary" / "handler.py").is_file()]
    assert canary and (canary[0] / "endpoint_canary" / "prompts.jsonl").is_file()
    assert not (canary[0] / "endpoint_benchmark").exists()


def test_import_is_cheap():
    """`import speculative_infra` loads no CDK, no pydantic, no catalog until a name is used."""
    code = (
        "import sys, speculative_infra\n"
        "heavy = [m for m in ('aws_cdk', 'jsii', 'pydantic', 'yaml') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert speculative_infra.__version__\n"
        "assert callable(speculative_infra.check)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_public_api_is_exported():
    import speculative_infra

    for name in speculative_infra.__all__:
        assert getattr(speculative_infra, name) is not None, name
