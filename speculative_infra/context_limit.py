"""The longest max_model_len a vLLM release accepts for a model, and the one it uses when unset.

vLLM's ModelConfig derives both from the model's config when the engine starts (`_get_and_verify_max_len`):

    length  = the smallest of the config's length keys (max_position_embeddings, seq_length, ...);
              the config's model_max_length instead, where it sets one (none: nothing is refused, and
              an unset max_model_len is 2048, or a draft's target's)
    length *= the RoPE factor, unless the type is one the release leaves unscaled (llama3, longrope; YaRN
              from 0.30.0) or the model is Gemma 3; up to 0.29.0 a YaRN length is its original context first
    refused = max_model_len > length, unless the config's model_max_length admits it

engine.hf_overrides (and engine.rope_scaling, which up to 0.11.0 vLLM turns into one) replace the
config's keys first. tokenizer_config.json's model_max_length caps the length only for pooling models with
absolute position embeddings (ModelConfig passes it in no other case), so a generating endpoint never sees
it. The per-release facts are catalog facts (vllm.yaml max_model_len_derivation), held
to each wheel's own function by tests/golden/vllm_max_model_len.json.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from speculative_infra.catalog.loader import load_catalog
from speculative_infra.catalog.models import ConfigLengths, ModelFacts, RopeParameters
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.catalog.vllm_startup_checks import MaxModelLenDerivation

# vLLM's patch_rope_parameters renames these legacy types before the derivation reads them.
_LEGACY_ROPE_TYPES = {"su": "longrope", "mrope": "default"}
_ROPE_KEYS = ("rope_scaling", "rope_parameters")


@dataclass(frozen=True)
class ContextLimit:
    """What a release derives: `limit` (a longer max_model_len is refused), the config key vLLM names in
    its refusal, the value it runs with when max_model_len is unset, and the config's model_max_length
    (a max_model_len up to it passes even above the limit). `failure` is set where vLLM's own arithmetic
    raises instead (a null RoPE factor before 0.18.0)."""

    limit: float
    key: str | None
    default: int
    config_model_max_length: int | None
    failure: str | None = None

    def refuses(self, max_model_len: int) -> bool:
        if max_model_len <= self.limit:
            return False
        return self.config_model_max_length is None or max_model_len > self.config_model_max_length


@dataclass(frozen=True)
class _Config:
    """The config as the derivation reads it, after overrides."""

    model_type: str
    lengths: dict[str, int]
    rope: tuple[RopeParameters, ...]
    original_max_position_embeddings: int | None


def rope_parameters(value: Any) -> tuple[RopeParameters, ...] | None:
    """A config.json's rope_scaling / rope_parameters as vLLM reads it: one entry, or one per layer type
    where nested (entries that are null skipped, as vLLM's iter_rope_parameters does); None where it is not
    something vLLM reads (no rope_type or type, a factor that is not a positive number)."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        return None
    nested = bool(value) and all(isinstance(v, Mapping) or v is None for v in value.values())
    entries = [v for v in value.values() if v is not None] if nested else [value]
    out: list[RopeParameters] = []
    for entry in entries:
        rope_type = entry.get("rope_type", entry.get("type"))
        if not isinstance(rope_type, str) or not rope_type or len(rope_type) > 64:
            return None
        factor = entry.get("factor")
        if factor is not None and (
            isinstance(factor, bool)
            or not isinstance(factor, int | float)
            or not math.isfinite(factor)
            or factor <= 0
        ):
            return None
        original = entry.get("original_max_position_embeddings")
        if original is not None and (
            isinstance(original, bool) or not isinstance(original, int) or original < 1
        ):
            return None
        out.append(
            RopeParameters(
                rope_type=_LEGACY_ROPE_TYPES.get(rope_type, rope_type),
                factor=factor,
                factor_is_null="factor" in entry and factor is None,
                original_max_position_embeddings=original,
            )
        )
    return tuple(out)


def _overrides(engine: Mapping[str, Any]) -> dict[str, Any] | None:
    """engine.hf_overrides (a mapping, or JSON as vllm serve reads it) plus engine.rope_scaling; None where
    they cannot be read."""
    raw = engine.get("hf_overrides", {})
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, Mapping):
        return None
    overrides = dict(raw)
    if "rope_scaling" in engine:
        rope = engine["rope_scaling"]
        if isinstance(rope, str):
            try:
                rope = json.loads(rope)
            except ValueError:
                return None
        overrides["rope_scaling"] = rope
    return overrides


def _config(
    model: ModelFacts | ConfigLengths, engine: Mapping[str, Any], rules: MaxModelLenDerivation
) -> _Config | None:
    if isinstance(model, ModelFacts):
        model = config_lengths_of(model)
    lengths = dict(model.other_length_keys)
    if model.max_position_embeddings is not None:
        lengths["max_position_embeddings"] = model.max_position_embeddings
    rope = model.rope
    original = model.original_max_position_embeddings
    model_type = model.model_type
    overrides = _overrides(engine)
    if overrides is None:
        return None
    for key, value in overrides.items():
        if key in rules.length_keys or key == "original_max_position_embeddings":
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                return None
            if key == "original_max_position_embeddings":
                original = value
            else:
                lengths[key] = value
        elif key in _ROPE_KEYS:
            parsed = rope_parameters(value)
            if parsed is None or sum(k in overrides for k in _ROPE_KEYS) > 1:
                return None
            rope = parsed
        elif key == "model_type":
            if not isinstance(value, str):
                return None
            model_type = value
    return _Config(model_type, lengths, rope, original)


def context_limit(
    model: ModelFacts | ConfigLengths,
    engine: Mapping[str, Any],
    release: str,
    rules: MaxModelLenDerivation,
    *,
    multimodal: bool = False,
    without_keys: int | None = None,
) -> ContextLimit | None:
    """What `release` derives for `model` with these engine args; None where it is not judged: overrides
    that cannot be read, overrides on a multimodal model (they land on its outer config, the length on its
    text config), nested RoPE parameters on a release that reads one flat dict, or a YaRN entry without
    its original context. A config without a length key bounds nothing: vLLM keeps a given max_model_len
    and runs an unset one with `without_keys` (a draft: its target's max_model_len) or its own 2048."""
    if multimodal and (_overrides(engine) or {}):
        return None
    config = _config(model, engine, rules)
    if config is None:
        return None
    derived: float = math.inf
    key: str | None = None
    for name in rules.length_keys:
        value = config.lengths.get(name)
        if value is not None and value < derived:
            derived, key = value, name
    config_mml = config.lengths.get("model_max_length")
    if config_mml:
        derived, key = config_mml, "model_max_length"
    if derived == math.inf:  # vLLM returns before any RoPE scaling
        default = without_keys if without_keys is not None else rules.length_without_keys
        return ContextLimit(limit=math.inf, key=None, default=default, config_model_max_length=None)
    if len(config.rope) > 1 and not rules.reads_nested_rope(release):
        return None
    failure = None
    if config.rope and rules.factor_skipped_for_model_types_containing not in config.model_type:
        unscaled = rules.rope_types_unscaled(release)
        factor: float | None = 1.0
        scaled = rules.reads_nested_rope(release)  # these multiply even by 1.0 (the length turns float)
        for rp in config.rope:
            if rp.rope_type in unscaled:
                continue
            scaled = True
            factor = None if rp.factor_is_null else (rp.factor if rp.factor is not None else factor)
            if rp.rope_type == "yarn" and rules.yarn_from_original(release):
                if rp.original_max_position_embeddings is None:
                    return None
                derived = rp.original_max_position_embeddings
        if factor is None:
            if not rules.null_factor_as_one(release):
                failure = "its RoPE factor is null, and vLLM multiplies the derived length by it (TypeError)"
            factor = 1.0
        if scaled:
            derived *= factor
    default = int(derived)
    if rules.longrope_defaults_to_original(release) and any(rp.rope_type == "longrope" for rp in config.rope):
        default = config.original_max_position_embeddings or int(derived)
    return ContextLimit(
        limit=derived, key=key, default=default, config_model_max_length=config_mml or None, failure=failure
    )


def _release_rules(vllm_version: str | None) -> MaxModelLenDerivation | None:
    """The catalog's derivation facts where they cover this release (None: unknown or older)."""
    if vllm_version is None:
        return None
    rules = load_catalog().vllm.max_model_len_derivation
    try:
        rules.rope_types_unscaled(vllm_version)
    except LookupError:
        return None
    return rules


def deployment_context_limit(
    model: ModelFacts, engine: Mapping[str, Any], vllm_version: str | None
) -> ContextLimit | None:
    """context_limit with the catalog's facts for the container's vLLM release; None where the release is
    unknown or older than the facts read, or where context_limit does not judge."""
    rules = _release_rules(vllm_version)
    if rules is None or vllm_version is None:
        return None
    interfaces = load_vllm_model_interfaces().releases.get(vllm_version)
    multimodal = interfaces is not None and model.architecture in interfaces.multimodal_architectures
    return context_limit(model, engine, vllm_version, rules, multimodal=multimodal)


def config_lengths_of(model: ModelFacts) -> ConfigLengths:
    """A target's config lengths as a draft's ModelConfig reads them (MTP: the target's checkpoint is the
    draft)."""
    return ConfigLengths(
        model_type=model.model_type,
        max_position_embeddings=model.max_position_embeddings,
        other_length_keys=model.other_length_keys,
        rope=model.rope,
        original_max_position_embeddings=model.original_max_position_embeddings,
    )


def draft_context_limit(
    draft: ConfigLengths, target_max_model_len: int, vllm_version: str | None
) -> ContextLimit | None:
    """What `vllm_version` derives for a draft from its own config: the draft's ModelConfig gets none of the
    user's hf_overrides, and where the config has no length key it runs with the target's max_model_len
    (spec_target_max_model_len). None where the release is unknown or context_limit does not judge."""
    rules = _release_rules(vllm_version)
    if rules is None or vllm_version is None:
        return None
    return context_limit(draft, {}, vllm_version, rules, without_keys=target_max_model_len)


def yarn_scaled_length(
    model: ModelFacts, engine: Mapping[str, Any], rules: MaxModelLenDerivation
) -> int | None:
    """YaRN's original_max_position_embeddings x factor in the config as overridden (the largest, where
    nested): the length a release that applies no YaRN factor needs as max_position_embeddings."""
    config = _config(model, engine, rules)
    if config is None:
        return None
    scaled = [
        int(rp.original_max_position_embeddings * rp.factor)
        for rp in config.rope
        if rp.rope_type == "yarn"
        and rp.factor is not None
        and rp.original_max_position_embeddings is not None
    ]
    return max(scaled, default=None)
