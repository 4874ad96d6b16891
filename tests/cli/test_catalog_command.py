"""`speculative-infra catalog ...`."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        (
            "instances",
            ["ml.g7e.2xlarge", "RTX-PRO-6000-Blackwell-Server", "4.2039 (us-east-1)", "undocumented"],
        ),
        (
            "containers",
            ["vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker", "djl-inference:0.36.0-lmi20.0.0-cu128"],
        ),
        ("models", ["Qwen/Qwen3-32B", "Qwen3ForCausalLM", "64/8"]),
        (
            "drafts",
            ["RedHatAI/Qwen3-32B-speculator.eagle3", "amazon/GPT-OSS-20B-P-EAGLE", "eagle3 (P-EAGLE)"],
        ),
    ],
)
def test_catalog_tables(run_cli, what, expected):
    code, out, _ = run_cli("catalog", what)
    assert code == 0
    for text in expected:
        assert text in out


def test_vllm_flags_one_per_line_sorted(run_cli):
    code, out, _ = run_cli("catalog", "vllm-flags", "0.15.1")
    flags = out.splitlines()
    assert code == 0
    assert len(flags) == 207 and flags == sorted(flags)
    assert "--speculative-config" in flags and all(f.startswith("--") for f in flags)


def test_vllm_flags_unknown_version(run_cli):
    code, _, err = run_cli("catalog", "vllm-flags", "0.99.0")
    assert code == 2
    assert "no flag data for vLLM '0.99.0'" in err and "0.15.1" in err
