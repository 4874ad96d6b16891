"""SI416 against the draft's own config: what each release's draft ModelConfig derives from it and refuses,
held to the wheels' own code run in order (tests/golden/vllm_draft_max_model_len.json, written by
scripts/probe_vllm_draft_max_model_len.py), then boundaries through `check` with fetched draft facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.probe_vllm_draft_max_model_len import CASES as PROBE_CONFIGS
from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ConfigLengths
from speculative_infra.check import check
from speculative_infra.context_limit import draft_context_limit, rope_parameters
from speculative_infra.facts.hub_config import FetchedFacts, draft_facts_from_config
from speculative_infra.rules.speculative_max_len import draft_config_refusal, speculative_max_len_refusal
from tests.conftest import LLAMA_8B_SHAPE, REFERENCE_SPEC, deep_merge, fetched_eagle3_head

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_draft_max_model_len.json").read_text())
FACTS = load_catalog().vllm.speculative_max_model_len_checks
LENGTH_KEYS = load_catalog().vllm.max_model_len_derivation.length_keys


def _lengths(config: dict[str, Any]) -> ConfigLengths:
    """A probe's stand-in config as the catalog's facts hold it."""
    rope = rope_parameters(config.get("rope"))
    assert rope is not None
    return ConfigLengths(
        model_type=config.get("model_type", ""),
        max_position_embeddings=config.get("max_position_embeddings"),
        other_length_keys={
            k: config[k] for k in LENGTH_KEYS if k != "max_position_embeddings" and k in config
        },
        rope=rope,
        original_max_position_embeddings=config.get("original_max_position_embeddings"),
    )


PROBES = [
    pytest.param(release, probe, id=f"{release}-{i}")
    for release, record in GOLDEN["releases"].items()
    for i, probe in enumerate(record["probes"])
]


@pytest.mark.parametrize(("release", "probe"), PROBES)
def test_the_verdict_matches_the_release(release: str, probe: dict[str, Any]) -> None:
    draft = draft_context_limit(_lengths(PROBE_CONFIGS[probe["case"]]["config"]), probe["target"], release)
    assert draft is not None
    verdict, value, target = probe["verdict"], probe["speculative"], probe["target"]
    if value is None:
        # Unset: the draft runs with its default, capped by the target's max_model_len.
        assert verdict == {"draft_max_model_len": draft.default, "max_model_len": min(draft.default, target)}
        return
    found = draft_config_refusal(release, value, draft)
    if found is None:
        target_refusal = speculative_max_len_refusal(release, value, target=target)
        found = target_refusal[1] if target_refusal else None
    assert found == verdict.get("message")


def test_the_releases_give_the_draft_its_length_where_the_catalog_says() -> None:
    for release, record in GOLDEN["releases"].items():
        assert (
            record["draft_given_max_model_len"] == "self.max_model_len"
        ) is FACTS.draft_verifies_given_length(release), release
        # With no length key, the draft runs with the target's max_model_len (draft_context_limit's default).
        assert record["draft_spec_target_max_model_len"] == "self.target_model_config.max_model_len", release
        assert record["verify_reads_spec_target"] is True, release


def test_the_golden_table_refuses_at_both_steps() -> None:
    steps = {
        (FACTS.draft_verifies_given_length(r), p["verdict"].get("step"))
        for r, record in GOLDEN["releases"].items()
        for p in record["probes"]
        if "error" in p["verdict"]
    }
    assert (False, "_maybe_override_draft_max_model_len") in steps
    assert (True, "draft ModelConfig") in steps
    assert (False, "draft ModelConfig") not in steps  # before 0.21.0 the draft derives its default only


# A fetched EAGLE-3 head for the reference target (Qwen3-32B), its config.json's lengths varied.
HEAD = "acme/Qwen3-32B-head.eagle3"


def _fetched(lengths: ConfigLengths | None) -> dict[str, FetchedFacts]:
    return fetched_eagle3_head(
        HEAD, "Qwen/Qwen3-32B", lengths, hidden_size=5120, vocab_size=151936, size_gb=1.56
    )


def _findings(
    version: str, lengths: ConfigLengths | None, speculative: Any, max_model_len: int = 4096
) -> list[Any]:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": version},
            "engine": {"max_model_len": max_model_len},
            "speculative": {"model": HEAD, **({} if speculative is None else {"max_model_len": speculative})},
        },
    )
    return check(spec, _fetched(lengths)).findings


def _si416(*args: Any, **kwargs: Any) -> Any:
    return next((f for f in _findings(*args, **kwargs) if f.code == "SI416"), None)


HEAD_2048 = ConfigLengths(model_type="llama", max_position_embeddings=2048)


def test_boundary_at_a_2048_token_head_before_the_draft_is_given_the_length() -> None:
    assert _si416("0.20.2", HEAD_2048, 2048) is None
    found = _si416("0.20.2", HEAD_2048, 2049)
    assert found is not None and found.field == "speculative.max_model_len"
    assert "speculative_max_model_len=2049 cannot be larger than draft_max_model_len=2048" in found.message
    assert HEAD in found.message and "at most 2048" in found.fix


def test_boundary_at_a_2048_token_head_once_the_draft_verifies_the_length() -> None:
    assert _si416("0.21.0", HEAD_2048, 2048) is None
    found = _si416("0.21.0", HEAD_2048, 2049)
    assert found is not None
    assert (
        "User-specified max_model_len (2049) is greater than the derived max_model_len "
        "(max_position_embeddings=2048 or model_max_length=None in model's config.json)." in found.message
    )
    assert "the draft's ModelConfig" in found.message and "at most 2048" in found.fix


LONGROPE = ConfigLengths(
    model_type="phi3",
    max_position_embeddings=131072,
    original_max_position_embeddings=4096,
    rope=(rope_parameters({"rope_type": "longrope"}) or ())[0:1],
)


def test_a_longrope_head_is_held_to_its_default_then_to_its_whole_context() -> None:
    # Up to 0.20.2 the draft runs with its default (the original 4096 from 0.11.1) and the speculative
    # length is compared with it; from 0.21.0 the draft's ModelConfig admits up to 131072.
    assert _si416("0.20.2", LONGROPE, 4096, max_model_len=8192) is None
    found = _si416("0.20.2", LONGROPE, 4097, max_model_len=8192)
    assert found is not None and "draft_max_model_len=4096" in found.message and "at most 4096" in found.fix
    assert _si416("0.21.0", LONGROPE, 8192, max_model_len=8192) is None


def test_the_target_still_bounds_a_head_that_admits_more() -> None:
    found = _si416("0.21.0", LONGROPE, 8193, max_model_len=8192)
    assert found is not None and "target_max_model_len=8192" in found.message and "at most 8192" in found.fix


@pytest.mark.parametrize("lengths", [None, ConfigLengths(model_type="speculators")])
def test_a_head_without_known_lengths_is_held_to_the_target_only(lengths: ConfigLengths | None) -> None:
    # No lengths read, or a config with no length key (vLLM then keeps what it is given).
    assert _si416("0.21.0", lengths, 4096) is None
    assert _si416("0.20.2", lengths, 4096) is None
    assert "target_max_model_len=4096" in _si416("0.21.0", lengths, 4097).message


def test_the_users_hf_overrides_do_not_reach_the_draft() -> None:
    # Dict overrides stay on the target's config (vllm.yaml speculative_max_model_len_checks.draft_source).
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": "0.21.0"},
            "engine": {"hf_overrides": {"max_position_embeddings": 65536}},
            "speculative": {"model": HEAD, "max_model_len": 2049},
        },
    )
    assert any(f.code == "SI416" and "=2048 " in f.message for f in check(spec, _fetched(HEAD_2048)).findings)


def test_an_unset_speculative_length_is_not_judged_against_the_draft() -> None:
    assert _si416("0.21.0", HEAD_2048, None) is None


@pytest.mark.parametrize("version", ["0.20.2", "0.21.0"])
@pytest.mark.parametrize("lengths", [HEAD_2048, LONGROPE])
@pytest.mark.parametrize("value", [2049, 4097, 8192, 131073])
def test_the_fix_passes_every_rule(version: str, lengths: ConfigLengths, value: int) -> None:
    before = _findings(version, lengths, value, max_model_len=8192)
    found = next((f for f in before if f.code == "SI416"), None)
    if found is None:
        return
    fixed = int(found.fix.split("at most ", 1)[1].split(",", 1)[0])
    after = _findings(version, lengths, fixed, max_model_len=8192)
    errors = {f.code for f in before if f.severity.value == "error"} - {"SI416"}
    assert {f.code for f in after if f.severity.value == "error"} == errors


def test_facts_fetch_reads_a_speculators_head_from_its_layer_config() -> None:
    config = {
        "speculators_model_type": "eagle3",
        "max_position_embeddings": 131072,  # not what vLLM reads: the layer config is
        "transformer_layer_config": {
            "model_type": "llama",
            "hidden_size": 4096,
            "max_position_embeddings": 2048,
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
        },
        "speculators_config": {"verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}},
    }
    lengths = draft_facts_from_config(config, source="test", weights_bytes=None).config_lengths
    assert lengths is not None and lengths.max_position_embeddings == 2048
    assert [r.rope_type for r in lengths.rope] == ["llama3"]
    draft = draft_context_limit(lengths, 8192, "0.21.0")
    assert draft is not None and draft.limit == 2048


def test_facts_fetch_reads_any_other_head_from_its_top_level() -> None:
    config = {
        "architectures": ["LlamaForCausalLMEagle3"],
        "model_type": "llama",
        "hidden_size": 4096,
        "max_position_embeddings": 2048,
        "seq_length": 1024,
    }
    lengths = draft_facts_from_config(config, source="test", weights_bytes=None).config_lengths
    assert lengths is not None and lengths.max_position_embeddings == 2048
    assert lengths.other_length_keys == {"seq_length": 1024}
    draft = draft_context_limit(lengths, 8192, "0.20.2")
    assert draft is not None and draft.default == 1024


def test_facts_fetch_reads_the_layer_config_only_for_a_speculators_config() -> None:
    # vLLM's get_config takes the speculators path on speculators_config, not on transformer_layer_config.
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "max_position_embeddings": 4096,
        "transformer_layer_config": {"max_position_embeddings": 2048},
    }
    lengths = draft_facts_from_config(config, source="test", weights_bytes=None).config_lengths
    assert lengths is not None and lengths.max_position_embeddings == 4096


def test_facts_fetch_reads_an_eagle_config_from_its_nested_model() -> None:
    # EAGLEConfig builds the nested `model` and sets the top-level keys it has over it.
    config = {
        "model_type": "eagle",
        "architectures": ["EAGLEModel"],
        "model": {"model_type": "llama", "hidden_size": 4096, "max_position_embeddings": 2048},
    }
    lengths = draft_facts_from_config(config, source="test", weights_bytes=None).config_lengths
    assert lengths is not None and lengths.max_position_embeddings == 2048 and lengths.model_type == "llama"
    config["max_position_embeddings"] = 8192
    lengths = draft_facts_from_config(config, source="test", weights_bytes=None).config_lengths
    assert lengths is not None and lengths.max_position_embeddings == 8192


def test_the_releases_make_the_target_the_draft_where_the_catalog_says() -> None:
    for release, record in GOLDEN["releases"].items():
        when = " ".join(record["draft_is_target_when"])
        for method in FACTS.draft_is_target_since:
            assert (f"self.method == {method!r}" in when) is FACTS.draft_is_target(method, release), (
                release,
                method,
            )
    assert FACTS.draft_is_target("deepseek_mtp", "0.21.0")  # model-specific names become mtp


# An MTP target described in the spec, 32768 tokens in its config.json, served longer through hf_overrides.
MTP_TARGET = {
    "id": "acme/mtp-8b",
    **LLAMA_8B_SHAPE,
    "max_position_embeddings": 32768,
    "mtp_layers": 1,
}


def _mtp_si416(version: str, speculative: int, overrides: dict[str, Any] | None) -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": version},
            "model": MTP_TARGET,
            "engine": {"max_model_len": 65536, **({"hf_overrides": overrides} if overrides else {})},
            "speculative": {
                "method": "mtp",
                "model": None,
                "num_speculative_tokens": 1,
                "max_model_len": speculative,
            },
        },
    )
    spec["model"] = MTP_TARGET  # replace the reference target's id, not merge into it
    return next((f for f in check(spec).findings if f.code == "SI416"), None)


def test_an_mtp_draft_reads_the_targets_config_without_the_users_overrides() -> None:
    longer = {"max_position_embeddings": 65536}
    assert _mtp_si416("0.21.0", 32768, longer) is None
    found = _mtp_si416("0.21.0", 32769, longer)
    assert found is not None and "max_position_embeddings=32768" in found.message
    assert "acme/mtp-8b's own config.json" in found.message and "at most 32768" in found.fix
    found = _mtp_si416("0.20.2", 32769, longer)
    assert found is not None and "draft_max_model_len=32768" in found.message


# SI417: with VLLM_ALLOW_LONG_MAX_MODEL_LEN set, a release whose draft ModelConfig verifies the length lets
# the draft run past its own context (the golden table's "allowed_long" probes of the 2048-token head).
ALLOW_LONG = load_catalog().vllm.max_model_len_derivation.allow_long_env
DLC_RELEASES = set(load_catalog().vllm_dlc_versions())


def _draft_codes(
    version: str, speculative: int, environment: dict[str, str], max_model_len: int = 8192
) -> dict[str, Any]:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": version},
            "engine": {"max_model_len": max_model_len},
            "environment": environment,
            "speculative": {"model": HEAD, "max_model_len": speculative},
        },
    )
    return {f.code: f for f in check(spec, _fetched(HEAD_2048)).findings}


ALLOWED_LONG = [
    pytest.param(release, probe, id=f"{release}-{probe['speculative']}")
    for release, record in GOLDEN["releases"].items()
    if release in DLC_RELEASES
    for probe in record["allowed_long"]
]


@pytest.mark.parametrize(("release", "probe"), ALLOWED_LONG)
def test_the_variable_turns_the_draft_refusal_into_a_warning_where_the_release_does(
    release: str, probe: dict[str, Any]
) -> None:
    found = _draft_codes(release, probe["speculative"], {ALLOW_LONG: "1"}, probe["target"])
    starts = "error" not in probe["verdict"]
    assert ("SI416" not in found) is starts, found.get("SI416")
    past_the_head = probe["speculative"] > HEAD_2048.max_position_embeddings
    assert ("SI417" in found) is (starts and past_the_head)


def test_the_draft_warning_boundary_and_words() -> None:
    assert "SI417" not in _draft_codes("0.21.0", 2048, {ALLOW_LONG: "1"})
    warning = _draft_codes("0.21.0", 2049, {ALLOW_LONG: "true"})["SI417"]
    assert warning.severity.value == "warning" and warning.field == "speculative.max_model_len"
    assert "2048 tokens vLLM 0.21.0 derives from the config.json of the draft" in warning.message
    assert HEAD in warning.message and "lead to nan" in warning.message and "at most 2048" in warning.fix
    # Without the variable (or with a value vLLM does not read as true) the refusal stands, with no warning.
    for environment in ({}, {ALLOW_LONG: "yes"}):
        found = _draft_codes("0.21.0", 2049, environment)
        assert "SI416" in found and "SI417" not in found
    # Past the target's max_model_len the target's own comparison refuses, variable or not.
    found = _draft_codes("0.21.0", 8193, {ALLOW_LONG: "1"})
    assert "SI416" in found and "SI417" not in found


def test_the_draft_warning_needs_the_draft_s_lengths() -> None:
    found = _draft_codes("0.21.0", 2049, {ALLOW_LONG: "1"})
    assert "SI417" in found
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": "0.21.0"},
            "engine": {"max_model_len": 8192},
            "environment": {ALLOW_LONG: "1"},
            "speculative": {"model": HEAD, "max_model_len": 2049},
        },
    )
    assert "SI417" not in {f.code for f in check(spec, _fetched(None)).findings}
