"""num_speculative_tokens defaults per method (catalog vllm.yaml speculative_token_defaults): applied and
reported when the spec leaves it out, never over a value the spec gives, and never an error of the
speculative rules (SI4xx) for any catalog draft or defaulted method."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from speculative_infra.rules import Severity

CAT = load_catalog()
NEWEST = CAT.vllm_dlc_versions()[-1]
# A model the spec describes, with one MTP layer (MiMo-7B's shape), for method mtp.
MTP_MODEL = {
    "id": "example/mimo-7b-like",
    "architecture": "MiMoForCausalLM",
    "model_type": "mimo",
    "parameters_billion": 7.8,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 32768,
    "mtp_layers": 1,
}


def _spec(
    model: str | dict[str, Any], speculative: dict[str, Any], version: str = NEWEST, max_model_len: int = 4096
) -> dict[str, Any]:
    return {
        "region": "us-east-1",
        "instance_type": "ml.p5e.48xlarge",
        "container": {"framework": "vllm", "version": version},
        "model": {"id": model} if isinstance(model, str) else model,
        "engine": {"max_model_len": max_model_len},
        "hf_token_secret": "hf-token",
        "speculative": speculative,
    }


def _speculative_errors(result: Any) -> list[str]:
    return [
        f"{f.code}: {f.message}"
        for f in result.findings
        if f.severity is Severity.ERROR and f.code.startswith("SI4")
    ]


def _runs(version: str, method: str, parallel: bool) -> bool:
    facts = load_vllm_release(version).speculative
    return (
        method in facts.methods
        and method not in facts.refused_methods
        and (not parallel or "parallel_drafting" in facts.fields)
    )


def test_every_default_is_sourced_positive_and_a_method_vllm_knows():
    assert CAT.vllm.speculative_token_defaults
    newest = load_vllm_release(NEWEST).speculative.methods
    keys = [(d.method, d.parallel_drafting) for d in CAT.vllm.speculative_token_defaults]
    assert len(keys) == len(set(keys))  # one default per method (and P-EAGLE)
    for default in CAT.vllm.speculative_token_defaults:
        assert default.value >= 1 and default.source.strip()
        assert default.method in newest, default.method
    # The reference benchmark's EAGLE3 setting.
    assert CAT.vllm.speculative_tokens_default("eagle3", False).value == 4


CATALOG_DRAFTS = sorted(CAT.drafts)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(CATALOG_DRAFTS), version=st.sampled_from(CAT.vllm_dlc_versions()), data=st.data())
def test_every_catalog_draft_with_the_default_passes_the_speculative_rules(name, version, data):
    draft = CAT.drafts[name]
    if not _runs(version, draft.method, draft.parallel_drafting):
        version = NEWEST  # a release that runs the method: the default is what is under test
    give_method = data.draw(st.booleans())
    speculative: dict[str, Any] = {"model": name, **({"method": draft.method} if give_method else {})}
    # Within the draft's own context, where its config gives one (older releases do not stretch a draft's
    # rotary cache to the target's: SI418).
    lengths = draft.config_lengths
    own = lengths.max_position_embeddings if lengths is not None else None
    result = check(_spec(draft.target, speculative, version, min(4096, own or 4096)))
    expected = CAT.vllm.speculative_tokens_default(draft.method, draft.parallel_drafting)
    assert expected is not None  # every catalog draft's method has a default
    assert result.deployment.speculative["num_speculative_tokens"] == expected.value
    assert any(
        d.startswith(f"speculative.num_speculative_tokens={expected.value} ")
        for d in result.deployment.defaults
    )
    assert _speculative_errors(result) == []


@pytest.mark.parametrize(
    ("model", "speculative"),
    [
        ("Qwen/Qwen3-8B", {"method": "ngram"}),
        (MTP_MODEL, {"method": "mtp"}),
        ("Qwen/Qwen3-8B", {"method": "draft_model", "model": "Qwen/Qwen3-0.6B"}),
        ("meta-llama/Llama-3.1-8B-Instruct", {"method": "eagle", "model": "example/llama-eagle-head"}),
        ("Qwen/Qwen3-32B", {"method": "eagle3", "model": "RedHatAI/Qwen3-32B-speculator.eagle3"}),
        ("openai/gpt-oss-20b", {"method": "eagle3", "model": "amazon/GPT-OSS-20B-P-EAGLE"}),
    ],
)
def test_every_defaulted_method_passes_the_speculative_rules(model, speculative):
    result = check(_spec(model, speculative))
    method = speculative["method"]
    parallel = bool(result.deployment.speculative.get("parallel_drafting"))
    expected = CAT.vllm.speculative_tokens_default(method, parallel)
    assert result.deployment.speculative["num_speculative_tokens"] == expected.value
    assert _speculative_errors(result) == []


def test_the_default_is_listed_under_defaults_applied(run_cli, tmp_path):
    import yaml

    path = tmp_path / "spec.yaml"
    speculative = {"method": "eagle3", "model": "RedHatAI/Qwen3-32B-speculator.eagle3"}
    path.write_text(yaml.safe_dump(_spec("Qwen/Qwen3-32B", speculative, "0.15.1")))
    _, out, _ = run_cli("check", str(path))
    applied = out.split("Defaults applied", 1)[1].split("\n\n", 1)[0]
    assert "speculative.num_speculative_tokens=4 (the catalog's default for eagle3; source: " in applied


def test_p_eagle_gets_its_own_default():
    result = check(_spec("openai/gpt-oss-20b", {"model": "amazon/GPT-OSS-20B-P-EAGLE"}))
    assert result.deployment.speculative["parallel_drafting"] is True
    assert result.deployment.speculative["num_speculative_tokens"] == 5
    assert any("default for P-EAGLE (eagle3 with parallel_drafting)" in d for d in result.deployment.defaults)


@pytest.mark.parametrize("given_tokens", [1, 7])
def test_a_value_the_spec_gives_is_kept(given_tokens):
    speculative = {
        "method": "eagle3",
        "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
        "num_speculative_tokens": given_tokens,
    }
    result = check(_spec("Qwen/Qwen3-32B", speculative))
    assert result.deployment.speculative["num_speculative_tokens"] == given_tokens
    assert not any("num_speculative_tokens" in d for d in result.deployment.defaults)


def test_an_invalid_value_is_not_replaced_by_the_default():
    speculative = {
        "method": "eagle3",
        "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
        "num_speculative_tokens": 0,
    }
    result = check(_spec("Qwen/Qwen3-32B", speculative))
    assert any(f.code == "SI404" for f in result.findings)


def test_a_method_without_a_default_still_needs_the_value():
    # medusa has no catalog default: SI404 asks for num_speculative_tokens as before.
    result = check(_spec("Qwen/Qwen3-8B", {"method": "medusa", "model": "example/qwen3-medusa"}, "0.19.1"))
    assert result.deployment.speculative.get("num_speculative_tokens") is None
    assert any(f.code == "SI404" for f in result.findings)


def test_a_draft_method_without_its_draft_gets_no_default():
    # The missing draft is the problem to report (SI409), not the number of tokens.
    result = check(_spec("Qwen/Qwen3-32B", {"method": "eagle3"}))
    assert "num_speculative_tokens" not in result.deployment.speculative
    assert any(f.code == "SI409" for f in result.findings)
