"""VLLM_ALLOW_LONG_MAX_MODEL_LEN: vLLM starts (warning) with a max_model_len past the context it derives.
Held to each wheel's own reader in vllm/envs.py and its _get_and_verify_max_len run with the variable set
(tests/golden/vllm_max_model_len.json, vllm_draft_max_model_len.json); SI320 steps aside, SI321 warns,
and SI416's draft step follows the release."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.probe_vllm_max_model_len import ALLOW_LONG, CASES
from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.context_limit import context_limit, draft_context_limit
from speculative_infra.rules.speculative_max_len import draft_config_refusal, speculative_max_len_refusal
from tests.conftest import REFERENCE_SPEC, deep_merge
from tests.rules.test_context_limit import _facts
from tests.rules.test_draft_max_model_len import HEAD, HEAD_2048, _fetched

GOLDEN = Path(__file__).parent.parent / "golden"
DERIVATION = json.loads((GOLDEN / "vllm_max_model_len.json").read_text())["releases"]
DRAFTS = json.loads((GOLDEN / "vllm_draft_max_model_len.json").read_text())["releases"]
RULES = load_catalog().vllm.max_model_len_derivation


@pytest.mark.parametrize("release", list(DERIVATION))
def test_the_variable_is_read_as_each_release_reads_it(release: str) -> None:
    for value, parsed in DERIVATION[release][f"{ALLOW_LONG}_parsed"].items():
        environment = {ALLOW_LONG: value} if value else {}
        assert RULES.allows_long(environment) is parsed, (release, value)


@pytest.mark.parametrize("release", list(DERIVATION))
def test_each_refusal_starts_with_the_variable_set(release: str) -> None:
    probes = DERIVATION[release]["allowed_long"]
    assert len(probes) >= 10
    for probe in probes:
        derived = context_limit(_facts(CASES[probe["case"]]), {}, release, RULES)
        assert derived is not None and derived.refuses(probe["max_model_len"])  # refused without it
        assert probe["verdict"] == {"max_model_len": probe["max_model_len"]}


@pytest.mark.parametrize("release", list(DRAFTS))
def test_the_draft_step_obeys_the_variable_only_where_the_draft_verifies_the_length(release: str) -> None:
    for probe in DRAFTS[release]["allowed_long"]:
        draft = draft_context_limit(HEAD_2048, probe["target"], release)
        assert draft is not None
        found = draft_config_refusal(release, probe["speculative"], draft, allow_long=True)
        if found is None:
            target = speculative_max_len_refusal(release, probe["speculative"], target=probe["target"])
            found = target[1] if target else None
        assert found == probe["verdict"].get("message"), (release, probe)


def _codes(environment: dict[str, str], max_model_len: int = 40961, **changes: Any) -> dict[str, Any]:
    # The reference target, Qwen3-32B, derives 40960 tokens (max_position_embeddings, no RoPE scaling).
    spec = deep_merge(
        REFERENCE_SPEC,
        {"engine": {"max_model_len": max_model_len}, "environment": environment, **changes},
    )
    return {f.code: f for f in check(spec).findings}


@pytest.mark.parametrize("value", ["1", "true", " TRUE "])
def test_the_variable_turns_the_refusal_into_a_warning(value: str) -> None:
    found = _codes({ALLOW_LONG: value})
    assert "SI320" not in found
    warning = found["SI321"]
    assert warning.severity.value == "warning" and warning.field == "engine.max_model_len"
    assert "40960 tokens" in warning.message and "lead to nan" in warning.message
    assert "at most 40960" in warning.fix


@pytest.mark.parametrize("environment", [{}, {ALLOW_LONG: "yes"}, {ALLOW_LONG: "0"}, {"OTHER": "1"}])
def test_without_a_value_vllm_reads_as_true_the_refusal_stands(environment: dict[str, str]) -> None:
    found = _codes(environment)
    assert "SI320" in found and "SI321" not in found


def test_boundary_at_the_derived_context() -> None:
    found = _codes({ALLOW_LONG: "1"}, max_model_len=40960)
    assert "SI320" not in found and "SI321" not in found


def test_the_fix_clears_both_rules() -> None:
    fixed = _codes({}, max_model_len=40960)
    assert "SI320" not in fixed and "SI321" not in fixed


def _draft_codes(version: str, environment: dict[str, str]) -> dict[str, Any]:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": version},
            "environment": environment,
            "speculative": {"model": HEAD, "max_model_len": 2049},
        },
    )
    return {f.code: f for f in check(spec, _fetched(HEAD_2048)).findings}


def test_the_draft_takes_a_longer_speculative_length_with_the_variable_from_0_21_0() -> None:
    assert "SI416" not in _draft_codes("0.21.0", {ALLOW_LONG: "1"})
    assert "SI416" in _draft_codes("0.21.0", {})
    # Up to 0.20.2 SpeculativeConfig compares with the draft's default itself, whatever the environment.
    assert "draft_max_model_len=2048" in _draft_codes("0.20.2", {ALLOW_LONG: "1"})["SI416"].message
