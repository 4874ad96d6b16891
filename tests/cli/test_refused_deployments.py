"""Deployments vLLM or SageMaker would refuse at start-up are refused by `check`, with the reason and a fix."""

from __future__ import annotations

import json

import pytest
import yaml

from tests.conftest import REFERENCE_SPEC, deep_merge

REFUSED = {
    "EAGLE3 head of Llama-3.1-8B on Qwen3-32B": (
        {"speculative": {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"}},
        "SI407",
        "hidden size 4096",
    ),
    "mtp on a model without MTP layers": ({"speculative": {"method": "mtp", "model": None}}, "SI408", "mtp"),
    "draft_model without a draft": (
        {"speculative": {"method": "draft_model", "model": None}},
        "SI409",
        "draft",
    ),
    "misspelt draft": (
        {"speculative": {"model": "RedHatAI/Qwen3-32B-speculatr.eagle3"}},
        "SI410",
        "did you mean",
    ),
    "gated model without a token": (
        {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "speculative": None},
        "SI531",
        "gated",
    ),
    "token in plaintext": ({"environment": {"HF_TOKEN": "hf_abc"}}, "SI530", "plaintext"),
    "environment name SageMaker rejects": ({"environment": {"has space": "1"}}, "SI510", "'has space'"),
    "longer than fits in memory": (
        {
            "instance_type": "ml.g6e.2xlarge",
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
            "engine": {"max_model_len": 40960, "kv_cache_dtype": "auto", "gpu_memory_utilization": 0.3},
        },
        "SI300",
        "per GPU",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_reason_and_fix(run_cli, tmp_path, case):
    changes, code, reason = REFUSED[case]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(deep_merge(REFERENCE_SPEC, changes)))
    exit_code, out, _ = run_cli("check", str(path), "--format", "json")
    result = json.loads(out)
    findings = [f for f in result["findings"] if f["code"] == code]
    assert exit_code == 1 and result["ok"] is False
    assert findings and findings[0]["severity"] == "error"
    assert reason in findings[0]["message"] and findings[0]["fix"]
