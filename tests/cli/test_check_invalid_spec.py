"""Unreadable or invalid specs exit 2 with the field path and reason, never a traceback."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("region: [unclosed\n", "YAML syntax error at line"),
        (
            "instance_type: ml.g5.xlarge\ncontainer: {framework: vllm}\nmodel: {id: x}\ninstance_count: many\n",
            "instance_count",
        ),
        (
            "instance_type: ml.g5.xlarge\ncontainer: {framework: vllm}\nmodel: {id: x}\nregoin: us-east-1\n",
            "regoin: unknown field",
        ),
        ("instance_type: ml.g5.xlarge\ncontainer: {framework: tgi}\nmodel: {id: x}\n", "container.framework"),
        ("- just\n- a list\n", "expected a mapping"),
        ("", "the file is empty"),
    ],
)
def test_invalid_spec_exits_2(run_cli, tmp_path, text, expected):
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    code, out, err = run_cli("check", str(path))
    assert code == 2
    assert expected in err
    assert "Traceback" not in err + out


def test_missing_file_exits_2(run_cli, tmp_path):
    code, _, err = run_cli("check", str(tmp_path / "nope.yaml"))
    assert code == 2
    assert "cannot read the spec: No such file or directory" in err


def test_invalid_spec_json_format(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("instance_type: ml.g5.xlarge\ncontainer: {framework: vllm}\nmodel: {id: x}\nfoo: 1\n")
    code, out, _ = run_cli("check", str(path), "--format", "json")
    assert code == 2
    assert json.loads(out) == {"ok": False, "spec_errors": [{"field": "foo", "reason": "unknown field"}]}


def test_json_shape(run_cli, tmp_path, reference_spec):
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(reference_spec()))
    code, out, _ = run_cli("check", str(path), "--format", "json")
    result = json.loads(out)
    assert code == 0
    assert set(result) == {"ok", "resolved", "findings"}
    for finding in result["findings"]:
        assert {"code", "severity", "message", "fix"} <= set(finding)
    assert result["resolved"]["container"]["image"] == "vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"


def test_defaults_are_resolved_and_visible(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        "instance_type: ml.g6e.12xlarge\ncontainer: {framework: vllm, version: '0.15.1'}\n"
        "model: {id: Qwen/Qwen3-32B}\n"
    )
    code, out, _ = run_cli("check", str(path), "--format", "json")
    resolved = json.loads(out)["resolved"]
    assert code == 0
    assert resolved["engine"]["tensor_parallel_size"] == 4
    assert resolved["engine"]["dtype"] == "bfloat16"
    assert resolved["engine"]["max_model_len"] == 40960
    assert any("tensor_parallel_size=4" in d for d in resolved["defaults"])
