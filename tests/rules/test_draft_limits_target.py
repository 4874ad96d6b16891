"""SI419: a draft whose max_model_len is shorter than the target's, where vLLM 0.33.0's VllmConfig lowers the
engine's max_model_len to it. Held to each wheel's own functions run on stand-in configs
(tests/golden/vllm_draft_limits_target.json, written by scripts/probe_vllm_draft_limits_target.py), then
boundaries through the rule on a resolved deployment."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ConfigLengths
from speculative_infra.check import check
from speculative_infra.context_limit import rope_parameters
from speculative_infra.rules.draft_limits_target import max_model_len_lowered_to_draft
from tests.conftest import REFERENCE_SPEC, deep_merge, fetched_eagle3_head

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_draft_limits_target.json").read_text())
FACTS = load_catalog().vllm.max_model_len_lowered_to_draft


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_the_catalog_says_which_releases_lower_the_target(release: str) -> None:
    record = GOLDEN["releases"][release]
    # VllmConfig.__post_init__ calls the function with no guard around it where it has one at all.
    assert record["lowers_when"] in ([], [""])
    assert FACTS.applies_to(release) is (record["lowers_when"] == [""]), release


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_lowers_exactly_where_the_release_s_own_function_does(release: str) -> None:
    for probe in GOLDEN["releases"][release]["probes"]:
        rope = {probe["rope_type"]} if probe["rope_type"] is not None else set()
        target = probe["target_max_model_len"]
        left = probe.get("left", target)  # releases without the function keep the target's
        expected = left if left != target else None
        got = FACTS.lowered_to(
            release, probe["method"], rope, probe["draft_max_model_len"], target, probe["v2_model_runner"]
        )
        assert got == expected, (release, probe)
        if "shares_target_positions" in probe:
            assert FACTS.shares_target_positions(probe["method"], rope) is probe["shares_target_positions"]


def _env(value: bool | None) -> str | None:
    # The golden records the variable as maybe_convert_bool leaves it; the spec's environment holds text.
    return None if value is None else ("1" if value else "0")


def test_the_runner_choice_is_the_wheel_s() -> None:
    probes = GOLDEN["releases"]["0.33.0"]["runner_probes"]
    assert len(probes) >= 9
    for probe in probes:
        got = FACTS.v2_runner(
            _env(probe["VLLM_USE_V2_MODEL_RUNNER"]),
            probe["method"],
            parallel_drafting=probe["parallel_drafting"],
            heterogeneous_vocab=probe["use_heterogeneous_vocab"],
            ubatching=probe["enable_dbo"],
        )
        assert got is probe["v2_model_runner"], probe


def test_the_variable_is_read_as_vllm_s_int() -> None:
    assert (
        FACTS.v2_runner(" 0 ", "eagle3", parallel_drafting=False, heterogeneous_vocab=False, ubatching=False)
        is False
    )
    assert (
        FACTS.v2_runner("2", "eagle3", parallel_drafting=True, heterogeneous_vocab=False, ubatching=False)
        is True
    )
    assert (
        FACTS.v2_runner("true", "eagle3", parallel_drafting=False, heterogeneous_vocab=False, ubatching=False)
        is None
    )


LLAMA = {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}}
HEAD = "acme/Llama-3.1-8B-head.eagle3"
YARN = rope_parameters({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192})
assert YARN is not None


def _si419(
    max_model_len: int,
    speculative: dict[str, Any] | None = None,
    *,
    rope: Any = YARN,
    release: str = "0.33.0",
    **changes: Any,
) -> Any:
    lengths = ConfigLengths(model_type="llama", max_position_embeddings=32768, rope=rope)
    fetched = fetched_eagle3_head(
        HEAD, "meta-llama/Llama-3.1-8B-Instruct", lengths, hidden_size=4096, vocab_size=128256, size_gb=0.9
    )
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            **LLAMA,
            "container": {"version": "0.31.0"},
            "engine": {"max_model_len": max_model_len},
            "speculative": {"model": HEAD, **(speculative or {})},
            **changes,
        },
    )
    d = check(spec, fetched).deployment
    assert d is not None and d.container is not None
    # No catalogued container ships 0.33.0 yet: the resolved deployment is given that release.
    d = d.model_copy(update={"container": d.container.model_copy(update={"vllm_version": release})})
    return next(iter(max_model_len_lowered_to_draft(d)), None)


def test_boundary_at_speculative_max_model_len() -> None:
    assert _si419(8192, {"max_model_len": 8192}) is None
    found = _si419(8192, {"max_model_len": 8191})
    assert found is not None and found.field == "speculative.max_model_len"
    assert "max_model_len 8191, not 8192" in found.message and "RoPE (yarn)" in found.message
    assert "reducing max_model_len to 8191." in found.message
    assert "VLLM_USE_V2_MODEL_RUNNER=0" in found.fix and "engine.max_model_len to 8191" in found.fix
    assert "leave out speculative.max_model_len" in found.fix  # the head's own context covers 8192


def test_each_suggested_fix_passes() -> None:
    assert _si419(8191, {"max_model_len": 8191}) is None
    assert _si419(8192, {"max_model_len": 8191}, environment={"VLLM_USE_V2_MODEL_RUNNER": "0"}) is None
    assert _si419(8192) is None


def test_a_draft_that_shares_the_target_s_positions_is_not_lowered() -> None:
    llama3 = rope_parameters({"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192})
    assert _si419(8192, {"max_model_len": 2048}, rope=llama3) is None
    assert _si419(8192, {"max_model_len": 2048}, rope=()) is None
    assert _si419(8192, {"max_model_len": 2048, "method": "draft_model"}, rope=()) is not None


def test_the_v1_runner_and_older_releases_keep_the_target_s_length() -> None:
    short = {"max_model_len": 2048}
    assert _si419(8192, short, release="0.32.0") is None
    assert _si419(8192, {**short, "parallel_drafting": True}) is None  # P-EAGLE runs on V1
    forced = _si419(8192, {**short, "parallel_drafting": True}, environment={"VLLM_USE_V2_MODEL_RUNNER": "1"})
    assert forced is not None
    assert _si419(8192, short, engine={"max_model_len": 8192, "enable_dbo": True}) is None
    assert _si419(8192, short, engine={"max_model_len": 8192, "ubatch_size": 2}) is None
    assert _si419(8192, short, engine={"max_model_len": 8192, "ubatch_size": 1}) is not None


def test_a_draft_whose_own_context_is_shorter_is_named() -> None:
    lengths = ConfigLengths(model_type="llama", max_position_embeddings=4096)
    fetched = fetched_eagle3_head(
        HEAD, "meta-llama/Llama-3.1-8B-Instruct", lengths, hidden_size=4096, vocab_size=128256, size_gb=0.9
    )
    spec = deep_merge(
        REFERENCE_SPEC,
        {**LLAMA, "engine": {"max_model_len": 8192}, "speculative": {"model": HEAD, "method": "draft_model"}},
    )
    d = check(spec, fetched).deployment
    assert d is not None and d.container is not None
    for release, expected in (("0.33.0", True), ("0.32.0", False)):
        at = d.model_copy(update={"container": d.container.model_copy(update={"vllm_version": release})})
        found = next(iter(max_model_len_lowered_to_draft(at)), None)
        assert (found is not None) is expected
    at = d.model_copy(update={"container": d.container.model_copy(update={"vllm_version": "0.33.0"})})
    [found] = max_model_len_lowered_to_draft(at)
    assert found.field == "speculative.model" and "max_model_len 4096, not 8192" in found.message
    assert (
        f"the config.json of the draft {HEAD}" in found.message
        and "draft_model keeps its own" in found.message
    )
    assert "leave out" not in found.fix
    # Leaving out a shorter speculative.max_model_len would still leave the draft's 4096: not offered.
    given = d.model_copy(update={"speculative": {**at.speculative, "max_model_len": 2048}})
    given = given.model_copy(update={"container": at.container})
    [found] = max_model_len_lowered_to_draft(given)
    assert "max_model_len 2048, not 8192" in found.message and "leave out" not in found.fix
