"""The six seed cells of the reference benchmark, through the CLI (as run: on SageMaker's default host)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import EXAMPLE_SPECS

SEED_CELLS = [
    # spec file, deployable?, error codes that must be among the findings
    ("lmi-g5-12xlarge.yaml", True, set()),
    ("lmi-g6e-12xlarge.yaml", True, set()),
    ("lmi-g7e-2xlarge.yaml", False, {"SI201"}),
    ("vllm-g5-12xlarge.yaml", False, {"SI210"}),
    ("vllm-g6e-12xlarge.yaml", True, set()),
    ("vllm-g7e-2xlarge.yaml", True, set()),
]


@pytest.mark.parametrize(("spec_file", "deployable", "codes"), SEED_CELLS)
def test_seed_cell(run_cli, spec_file, deployable, codes):
    code, out, _ = run_cli("check", str(EXAMPLE_SPECS / spec_file), "--format", "json")
    result = json.loads(out)
    errors = {f["code"] for f in result["findings"] if f["severity"] == "error"}
    assert result["ok"] is deployable, result["findings"]
    assert code == (0 if deployable else 1)
    assert codes <= errors
    if deployable:
        assert errors == set()


def test_g5_vllm_failure_names_driver_and_fix(run_cli):
    _, out, _ = run_cli("check", str(EXAMPLE_SPECS / "vllm-g5-12xlarge.yaml"), "--format", "json")
    finding = next(f for f in json.loads(out)["findings"] if f["code"] == "SI210")
    assert "driver 470" in finding["message"]
    assert "al2-ami-sagemaker-inference-gpu-3-1" in finding["fix"]


def test_g5_vllm_passes_with_the_recommended_host_image(run_cli, tmp_path):
    spec = (EXAMPLE_SPECS / "vllm-g5-12xlarge.yaml").read_text()
    assert "inference_ami_version: default\n" in spec
    spec = spec.replace("inference_ami_version: default\n", "inference_ami_version: auto\n")
    path = tmp_path / "spec.yaml"
    path.write_text(spec)
    code, out, _ = run_cli("check", str(path), "--format", "json")
    result = json.loads(out)
    assert code == 0, result["findings"]
    assert result["resolved"]["host"]["inference_ami_version"] == "al2-ami-sagemaker-inference-gpu-3-1"


def test_text_output_has_resolved_deployment_and_verdict(run_cli):
    code, out, _ = run_cli("check", str(EXAMPLE_SPECS / "lmi-g7e-2xlarge.yaml"))
    assert code == 1
    assert "Resolved deployment" in out
    assert "SI201" in out
    assert "NOT DEPLOYABLE" in out
