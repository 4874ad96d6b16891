"""SI320 and the default max_model_len: the context each vLLM release derives from a model's config, held
to each release's own _get_and_verify_max_len run on probes (tests/golden/vllm_max_model_len.json,
written by scripts/probe_vllm_max_model_len.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The probes' configs, as the probe script defines them (imported so the two cannot drift apart).
from scripts.probe_vllm_max_model_len import CASES
from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ConfigLengths, ModelFacts
from speculative_infra.check import check
from speculative_infra.context_limit import context_limit, rope_parameters
from speculative_infra.facts import catalog_with_facts
from speculative_infra.facts.hub_config import ConfigError, facts_from_config
from speculative_infra.resolve import resolve
from speculative_infra.rules.context import max_model_len_within_context
from speculative_infra.spec import DeploymentSpec
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_max_model_len.json").read_text())
RELEASES: dict[str, Any] = GOLDEN["releases"]
RULES = load_catalog().vllm.max_model_len_derivation
# ModelFacts always has max_position_embeddings, so the probe without any length key has no facts form (it is
# held as a draft's ConfigLengths below). The tokenizer cases run the function as vLLM runs it for pooling
# models only (tokenizer_config_read_when); a generating model's derivation never reads the tokenizer.
FACTS_CASES = [name for name in CASES if name != "no_length_key" and "tokenizer" not in CASES[name]]


def _facts(case: dict[str, Any]) -> ModelFacts:
    config = dict(case["config"])
    rope = rope_parameters(config.pop("rope", None))
    assert rope is not None
    return ModelFacts(
        architecture="Qwen3ForCausalLM",
        model_type=config.pop("model_type", "qwen3"),
        parameters_billion=8.0,
        num_hidden_layers=36,
        num_attention_heads=32,
        num_key_value_heads=8,
        head_dim=128,
        max_position_embeddings=config.pop("max_position_embeddings"),
        original_max_position_embeddings=config.pop("original_max_position_embeddings", None),
        other_length_keys=config,
        rope=rope,
        source="test",
        confidence="reported",
    )


def test_the_probe_covers_every_release_and_each_change() -> None:
    assert len(RELEASES) == 38
    defaults = {
        tuple(
            json.dumps(p["verdict"], sort_keys=True)
            for p in record["probes"]
            if p["max_model_len"] is None and p["case"] in ("yarn_unscaled_max", "longrope", "null_factor")
        )
        for record in RELEASES.values()
    }
    assert len(defaults) == 4  # the longrope default (0.11.1), the null factor (0.18.0), YaRN (0.30.0)


@pytest.mark.parametrize("release", list(RELEASES))
def test_the_derived_context_and_refusals_are_each_release_own(release: str) -> None:
    compared = 0
    for probe in RELEASES[release]["probes"]:
        if probe["case"] not in FACTS_CASES or probe["max_model_len"] == -1:
            continue  # -1 (auto-fit from 0.14.0) is not a length the spec accepts
        derived = context_limit(_facts(CASES[probe["case"]]), {}, release, RULES)
        assert derived is not None, (release, probe["case"])
        verdict = probe["verdict"]
        key = (release, probe["case"], probe["max_model_len"])
        if verdict.get("error") == "TypeError":
            assert derived.failure is not None, key
            continue
        assert derived.failure is None, key
        if probe["max_model_len"] is None:
            assert derived.default == verdict["max_model_len"], key
        elif verdict.get("error") == "ValueError":
            assert derived.refuses(probe["max_model_len"]), key
            words = RULES.refusal.format(
                value=probe["max_model_len"],
                key=derived.key,
                limit=derived.limit,
                model_max_length=derived.config_model_max_length,
            )
            assert verdict["message"].startswith(words), key
        else:
            assert not derived.refuses(probe["max_model_len"]), key
        compared += 1
    assert compared > 130


def test_only_pooling_models_read_the_tokenizer_config() -> None:
    # Why the library models no tokenizer cap: every release passes tokenizer_config only under this test.
    for release, record in RELEASES.items():
        (when,) = record["tokenizer_config_read_when"]
        assert "self.runner_type == 'pooling'" in when and "'absolute'" in when, release


@pytest.mark.parametrize("release", list(RELEASES))
def test_a_config_without_length_keys_bounds_nothing(release: str) -> None:
    derived = context_limit(ConfigLengths(model_type="qwen3"), {}, release, RULES)
    assert derived is not None
    for probe in RELEASES[release]["probes"]:
        if probe["case"] != "no_length_key":
            continue
        if probe["max_model_len"] is None:
            assert derived.default == probe["verdict"]["max_model_len"]
        else:
            assert probe["verdict"] == {"max_model_len": probe["max_model_len"]}
            assert not derived.refuses(probe["max_model_len"])


def _qwen3_8b_config(**changes: Any) -> dict[str, Any]:
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_hidden_layers": 36,
        "max_position_embeddings": 40960,
        "vocab_size": 151936,
        "torch_dtype": "bfloat16",
    }
    config.update(changes)
    return config


REPO = "acme/qwen3-8b-long"


def _check(config: dict[str, Any], engine: dict[str, Any], version: str = "0.15.1") -> Any:
    fetched = facts_from_config(
        config, repo_id=REPO, revision="0" * 40, origin="https://huggingface.co", weights_bytes=16_400_000_000
    )
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": "ml.g6e.2xlarge",
            "container": {"version": version},
            "model": {"id": REPO},
            "engine": {"max_model_len": None, **engine},
            "speculative": None,
        },
    )
    return check(spec, {REPO: fetched})


def _si320(result: Any) -> list[Any]:
    return [f for f in result.findings if f.code == "SI320"]


def test_yarn_in_hf_overrides_extends_the_context_up_to_its_scaled_length() -> None:
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert _si320(_check(_qwen3_8b_config(), {"hf_overrides": yarn, "max_model_len": 131072})) == []
    over = _si320(_check(_qwen3_8b_config(), {"hf_overrides": yarn, "max_model_len": 131073}))
    assert len(over) == 1 and "derives 131072" in over[0].message
    # As JSON, the way vllm serve reads the flag.
    assert (
        _si320(_check(_qwen3_8b_config(), {"hf_overrides": json.dumps(yarn), "max_model_len": 131072})) == []
    )


def test_without_overrides_the_config_s_context_bounds_max_model_len() -> None:
    assert _si320(_check(_qwen3_8b_config(), {"max_model_len": 40960})) == []
    over = _si320(_check(_qwen3_8b_config(), {"max_model_len": 40961}))
    assert len(over) == 1
    assert "max_position_embeddings=40960" in over[0].message and "at most 40960" in over[0].fix


def test_a_yarn_config_in_config_json_is_read_by_facts_fetch() -> None:
    rope = {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert _si320(_check(_qwen3_8b_config(rope_scaling=rope), {"max_model_len": 131072})) == []
    assert len(_si320(_check(_qwen3_8b_config(rope_scaling=rope), {"max_model_len": 131073}))) == 1


def test_a_linear_factor_scales_and_llama3_does_not() -> None:
    linear = {"rope_type": "linear", "factor": 2.0}
    assert _si320(_check(_qwen3_8b_config(rope_scaling=linear), {"max_model_len": 81920})) == []
    assert len(_si320(_check(_qwen3_8b_config(rope_scaling=linear), {"max_model_len": 81921}))) == 1
    llama3 = {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}
    assert len(_si320(_check(_qwen3_8b_config(rope_scaling=llama3), {"max_model_len": 40961}))) == 1


def test_a_shorter_length_key_bounds_the_context() -> None:
    assert _si320(_check(_qwen3_8b_config(seq_length=8192), {"max_model_len": 8192})) == []
    over = _si320(_check(_qwen3_8b_config(seq_length=8192), {"max_model_len": 8193}))
    assert len(over) == 1 and "seq_length=8192" in over[0].message


def test_the_config_s_model_max_length_admits_longer_lengths() -> None:
    config = _qwen3_8b_config(model_max_length=131072)
    assert _si320(_check(config, {"max_model_len": 131072})) == []
    assert len(_si320(_check(config, {"max_model_len": 131073}))) == 1


def test_the_default_max_model_len_is_the_release_s_derived_one() -> None:
    # Phi-3-mini-128k's shape: a longrope config defaults to its original context from vLLM 0.11.1.
    rope = {"type": "longrope", "short_factor": [1.0], "long_factor": [1.0]}
    config = _qwen3_8b_config(
        max_position_embeddings=131072, original_max_position_embeddings=4096, rope_scaling=rope
    )
    result = _check(config, {})
    assert result.deployment.engine["max_model_len"] == 4096
    assert result.deployment.summary()["memory"]["model_context_tokens"] == 4096
    # Set longer, up to max_position_embeddings, it passes.
    assert _si320(_check(config, {"max_model_len": 32768})) == []


def _resolved(config: dict[str, Any], engine: dict[str, Any], vllm_version: str) -> Any:
    # No catalogued image ships these releases yet: the container's release is set on the resolved deployment.
    fetched = facts_from_config(
        config, repo_id=REPO, revision="0" * 40, origin="https://huggingface.co", weights_bytes=16_400_000_000
    )
    spec = DeploymentSpec.model_validate(
        deep_merge(
            REFERENCE_SPEC,
            {"model": {"id": REPO}, "engine": {"max_model_len": None, **engine}, "speculative": None},
        )
    )
    d = resolve(spec, catalog_with_facts(load_catalog(), {REPO: fetched}))
    assert d.container is not None
    object.__setattr__(d, "container", d.container.model_copy(update={"vllm_version": vllm_version}))
    return d


def test_from_0_30_0_yarn_needs_max_position_embeddings_in_the_overrides() -> None:
    yarn = {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}
    assert (
        list(
            max_model_len_within_context(
                _resolved(_qwen3_8b_config(), {"hf_overrides": yarn, "max_model_len": 131072}, "0.29.0")
            )
        )
        == []
    )
    refused = list(
        max_model_len_within_context(
            _resolved(_qwen3_8b_config(), {"hf_overrides": yarn, "max_model_len": 131072}, "0.30.0")
        )
    )
    assert len(refused) == 1
    assert "a YaRN factor is not applied" in refused[0].message
    assert "max_position_embeddings 131072 in engine.hf_overrides" in refused[0].fix
    # Longer than YaRN's own length: only the shorter max_model_len is offered.
    beyond = {"hf_overrides": yarn, "max_model_len": 131073}
    (too_long,) = max_model_len_within_context(_resolved(_qwen3_8b_config(), beyond, "0.30.0"))
    assert too_long.fix == "set engine.max_model_len to at most 40960"
    # The fix, applied, passes.
    fixed = {"hf_overrides": {**yarn, "max_position_embeddings": 131072}, "max_model_len": 131072}
    assert list(max_model_len_within_context(_resolved(_qwen3_8b_config(), fixed, "0.30.0"))) == []


def test_a_null_factor_stops_releases_before_0_18_0() -> None:
    null = {"hf_overrides": {"rope_scaling": {"rope_type": "linear", "factor": None}}, "max_model_len": 4096}
    stops = list(max_model_len_within_context(_resolved(_qwen3_8b_config(), null, "0.17.1")))
    assert len(stops) == 1 and "TypeError" in stops[0].message
    assert list(max_model_len_within_context(_resolved(_qwen3_8b_config(), null, "0.18.0"))) == []


@pytest.mark.parametrize(
    "overrides",
    ["{not json", ["rope_scaling"], {"max_position_embeddings": "131072"}, {"rope_scaling": {"factor": 2.0}}],
)
def test_overrides_it_cannot_read_are_not_judged(overrides: Any) -> None:
    assert _si320(_check(_qwen3_8b_config(), {"hf_overrides": overrides, "max_model_len": 10**6})) == []


@pytest.mark.parametrize(
    "rope",
    [{"factor": 2.0}, {"rope_type": "linear", "factor": 0}, {"rope_type": "linear", "factor": "2"}, "yarn"],
)
def test_facts_fetch_refuses_rope_parameters_vllm_cannot_read(rope: Any) -> None:
    with pytest.raises(ConfigError, match="rope_scaling"):
        facts_from_config(
            _qwen3_8b_config(rope_scaling=rope), repo_id=REPO, revision="0" * 40, origin="x", weights_bytes=1
        )
