"""EagleOptimizationJob's input checks, directly (the construct tests run them through CDK)."""

from __future__ import annotations

from speculative_infra.rules.optimization import check_optimization_job


def _codes(**changes):
    inputs = {
        "deployment_instance_type": "ml.g6e.12xlarge",
        "architecture": "Qwen3ForCausalLM",
        "model_id": "Qwen/Qwen3-32B",
        "uri_problems": [],
        **changes,
    }
    return check_optimization_job(**inputs)


def test_allowed_inputs_pass():
    assert _codes() == []


def test_instance_type_the_api_rejects():
    [finding] = _codes(deployment_instance_type="ml.p3.2xlarge")
    assert finding.code == "SI800" and finding.field == "deployment_instance_type"
    assert "'ml.p3.2xlarge'" in finding.message and "g6e" in finding.message and finding.severity == "error"


def test_unknown_architecture():
    [finding] = _codes(architecture=None, model_id="acme/x")
    assert finding.code == "SI801" and "'acme/x'" in finding.message and finding.field == "model_architecture"


def test_architecture_without_eagle_training():
    [finding] = _codes(architecture="GemmaForCausalLM", model_id="google/gemma")
    assert (
        finding.code == "SI801"
        and "GemmaForCausalLM" in finding.message
        and "Qwen3ForCausalLM" in finding.message
    )
    assert finding.field == "model_id"


def test_every_malformed_uri_is_reported():
    findings = _codes(
        uri_problems=[("training_data", "not an S3 URI: 'x'"), ("model_data", "bucket missing")]
    )
    assert [(f.code, f.field, f.message) for f in findings] == [
        ("SI802", "training_data", "not an S3 URI: 'x'"),
        ("SI802", "model_data", "bucket missing"),
    ]
    assert findings[0].fix == "use s3://<bucket>/<prefix>"


def test_finding_as_dict():
    [finding] = _codes(deployment_instance_type="ml.p3.2xlarge")
    assert finding.as_dict() == {
        "code": "SI800",
        "severity": "error",
        "field": "deployment_instance_type",
        "message": finding.message,
        "fix": finding.fix,
    }
