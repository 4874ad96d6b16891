"""A Hugging Face config.json (plus the repository's size and gated flag) -> the facts the rules use.

Two kinds of repository: a target model (its architecture, attention shape, context, vocabulary and
multi-token-prediction layers) and a speculative-decoding draft (an EAGLE/EAGLE3 head: the method and
the target's hidden size and vocabulary it was built for, and the target it names, if any).

A config.json comes from a server or folder we do not control, and cdk.context.json is a file anyone can
edit, so the facts are checked for consistency where they are built (FetchedFacts' validator runs both
when `facts fetch` builds them and when `check` or the constructs read them back): counts and sizes are
positive integers within the bounds below, the attention shape holds together, and no number is NaN or
infinite. The bounds sit far above every published checkpoint (the largest have 128 attention heads,
~130 layers, head_dim 256, a 16384 hidden size, ~262k vocabulary entries, 10M tokens of context and
~2 TB of weights) and far below what would overflow the memory model's arithmetic.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from speculative_infra.catalog.loader import load_catalog
from speculative_infra.catalog.models import ConfigLengths, Draft, ModelFacts, RopeParameters
from speculative_infra.context_limit import rope_parameters
from speculative_infra.model_consistency import (
    MAX_HIDDEN_SIZE,
    MAX_PARAMETERS_BILLION,
    MAX_VOCAB_SIZE,
    MAX_WEIGHTS_GB,
    model_facts_problems,
)
from speculative_infra.quantization_methods import (
    checkpoint_sparsity,
    compressed_tensors_scheme,
    from_quantization_config,
)
from speculative_infra.sizing import dtype_bytes
from speculative_infra.spec.repo_id import MAX_PART, repo_id_problem

# Config keys holding the number of multi-token-prediction layers: num_nextn_predict_layers (DeepSeek-V3,
# GLM-4.5, MiMo, ERNIE; what vLLM's SpeculativeConfig reads) and mtp_num_hidden_layers (Qwen3-Next's
# config). Absent: no MTP layers.
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
_DTYPES = ("bfloat16", "float16", "float32")

# Upper bounds of the facts (see the module's docstring for what real checkpoints reach).
MAX_PARAMETERS = int(MAX_PARAMETERS_BILLION * 1e9)  # safetensors.total of a listing
MAX_WEIGHTS_BYTES = int(MAX_WEIGHTS_GB * 1e9)
MAX_NAME_CHARS = 256  # an architecture or model type (the longest real ones: ~60)

REPO_ID_PART_MAX = MAX_PART
# A branch, tag or commit: what git accepts in a ref name, at most 255 characters (URL-quoted when sent).
REVISION_MAX = 255
_REVISION_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


class IdError(ValueError):
    """A repository id or revision the Hub would not accept; the message names it and what is allowed."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= 120 else value[:120] + "...")


def validate_repo_id(repo_id: str) -> str:
    """A repository id as the Hub accepts it (spec/repo_id.py: the spec's own rule, as the id names a URL
    path and a context key); IdError naming the value and the rule otherwise."""
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise IdError(f"repository id {problem}")
    return repo_id


def validate_revision(revision: str) -> str:
    """A branch, tag or commit as git names them; IdError naming the value and the rule otherwise."""
    allowed = (
        f"allowed: a branch, tag or commit of 1-{REVISION_MAX} characters, without whitespace, control "
        "characters, '..', '//', '@{' or any of ~^:?*[\\, not starting with '/' or '-', not ending with '/' or "
        "'.'"
    )
    if (
        not revision
        or len(revision) > REVISION_MAX
        or _REVISION_FORBIDDEN.search(revision)
        or revision[0] in "/-"
        or revision[-1] in "/."
    ):
        raise IdError(f"revision {_shown(revision)} is not a valid git revision; {allowed}")
    return revision


class FetchedFacts(BaseModel):
    """What `facts fetch` learned about one repository, as stored in cdk.context.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_id: str
    revision: str
    origin: str  # the URL or folder the facts were read from
    kind: Literal["model", "draft"]
    model: ModelFacts | None = None
    draft: Draft | None = None

    @field_validator("repo_id")
    @classmethod
    def _valid_repo_id(cls, value: str) -> str:
        return validate_repo_id(value)

    @field_validator("revision")
    @classmethod
    def _valid_revision(cls, value: str) -> str:
        return validate_revision(value)

    @model_validator(mode="after")
    def _consistent(self) -> FetchedFacts:
        if self.kind == "model" and (self.model is None or self.draft is not None):
            raise ValueError("kind 'model' holds the model's facts under 'model' and no 'draft'")
        if self.kind == "draft" and (self.draft is None or self.model is not None):
            raise ValueError("kind 'draft' holds the draft's facts under 'draft' and no 'model'")
        problems = model_problems(self.model) if self.model is not None else []
        problems += draft_problems(self.draft) if self.draft is not None else []
        if problems:
            raise ValueError("; ".join(problems))
        return self


def _bounded(problems: list[str], name: str, value: float | None, low: float, high: float) -> None:
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        problems.append(f"{name} is {value!r}; allowed: a finite number from {low:g} to {high:g}")
    elif not low <= value <= high:
        problems.append(f"{name} is {value!r}; allowed: {low:g} to {high:g}")


def model_problems(m: ModelFacts) -> list[str]:
    """What is out of bounds or inconsistent in a model's facts (empty when they hold together): the
    bounds and relations of model_consistency.py, which the spec and rule SI331 apply too."""
    return [f"{name} {reason}" for name, reason in model_facts_problems(m.model_dump())]


def _valid_id(value: str) -> bool:
    try:
        validate_repo_id(value)
    except IdError:
        return False
    return True


def draft_problems(d: Draft) -> list[str]:
    """What is out of bounds in a draft's facts (empty when they hold together)."""
    problems: list[str] = []
    _bounded(problems, "size_gb", d.size_gb, 0, MAX_WEIGHTS_GB)
    _bounded(problems, "download_gb", d.download_gb, 0, MAX_WEIGHTS_GB)
    _bounded(problems, "target_hidden_size", d.target_hidden_size, 1, MAX_HIDDEN_SIZE)
    _bounded(problems, "target_vocab_size", d.target_vocab_size, 1, MAX_VOCAB_SIZE)
    if d.target is not None:
        try:
            validate_repo_id(d.target)
        except IdError as err:
            problems.append(f"target: {err}")
    return problems


class ConfigError(ValueError):
    """config.json lacks a fact the rules need, or gives one of the wrong type or out of bounds."""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _object(config: dict[str, Any], key: str, repo_id: str) -> dict[str, Any]:
    value = config.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{repo_id}: config.json's {key!r} is {_kind(value)}; allowed: a JSON object")
    return value


def _strings(config: dict[str, Any], key: str, repo_id: str) -> list[str]:
    value = config.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(_is_name(item) for item in value):
        raise ConfigError(
            f"{repo_id}: config.json's {key!r} is {_kind(value)}; allowed: a list of names (printable "
            f"strings of at most {MAX_NAME_CHARS} characters)"
        )
    return value


def _is_name(value: object) -> bool:
    # Names reach terminals and context files: no control characters (an escape sequence), bounded.
    return isinstance(value, str) and len(value) <= MAX_NAME_CHARS and value.isprintable()


def _kind(value: Any) -> str:
    shown = repr(value)
    return f"{type(value).__name__} {shown if len(shown) <= 60 else shown[:60] + '...'}"


def _is_draft(config: dict[str, Any], repo_id: str) -> bool:
    architectures = " ".join(_strings(config, "architectures", repo_id)).lower()
    return "speculators_config" in config or "eagle" in architectures or "speculator" in architectures


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    # Multimodal checkpoints keep the language model's shape under text_config.
    text = config.get("text_config")
    return {**config, **text} if isinstance(text, dict) else config


def _dtype(config: dict[str, Any]) -> Literal["bfloat16", "float16", "float32"]:
    value = config.get("torch_dtype") or config.get("dtype") or "bfloat16"
    if not isinstance(value, str) or value not in _DTYPES:
        return "bfloat16"
    return value  # type: ignore[return-value]


def _required(config: dict[str, Any], key: str, repo_id: str) -> int:
    value = config.get(key)
    if not _is_int(value) or value < 1:
        raise ConfigError(f"{repo_id}: config.json has no positive integer {key!r} (got {_kind(value)})")
    return int(value)


def _optional(config: dict[str, Any], key: str, repo_id: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if not _is_int(value) or value < 0:
        raise ConfigError(
            f"{repo_id}: config.json's {key!r} is {_kind(value)}; allowed: a non-negative integer"
        )
    return int(value)


def _rope(config: dict[str, Any], repo_id: str) -> tuple[RopeParameters, ...]:
    """rope_parameters (transformers 5) or rope_scaling, as vLLM's max_model_len derivation reads it."""
    key = "rope_parameters" if config.get("rope_parameters") is not None else "rope_scaling"
    parsed = rope_parameters(config.get(key))
    if parsed is None:
        raise ConfigError(
            f"{repo_id}: config.json's {key!r} is {_kind(config.get(key))}; allowed: an object with a rope_type "
            "(or type) string, an optional positive factor and original_max_position_embeddings, or one such "
            "object per layer type"
        )
    return parsed


def _text(config: dict[str, Any], key: str, repo_id: str) -> str:
    value = config.get(key, "")
    if not _is_name(value):
        raise ConfigError(
            f"{repo_id}: config.json's {key!r} is {_kind(value)}; allowed: a printable string of at most "
            f"{MAX_NAME_CHARS} characters"
        )
    return str(value)


def model_facts_from_config(
    config: dict[str, Any],
    *,
    repo_id: str,
    source: str,
    weights_bytes: int | None,
    parameters: int | None,
    gated: bool | None,
) -> ModelFacts:
    c = _text_config(config)
    heads = _required(c, "num_attention_heads", repo_id)
    hidden = _required(c, "hidden_size", repo_id)
    dtype = _dtype(c)
    quantization_config = _object(c, "quantization_config", repo_id)
    quantization = from_quantization_config(quantization_config)
    scheme = compressed_tensors_scheme(quantization_config) if quantization == "compressed-tensors" else None
    if parameters is None:
        if weights_bytes is None:
            raise ConfigError(f"{repo_id}: neither the parameter count nor the weights' size is known")
        parameters = int(weights_bytes // dtype_bytes(dtype))
    architectures = _strings(c, "architectures", repo_id) or [""]
    mtp = next((n for n in (_optional(c, k, repo_id) for k in _MTP_KEYS) if n is not None), 0)
    max_position = _required(c, "max_position_embeddings", repo_id)  # refused in its own words first
    lengths = _config_lengths(c, repo_id)
    return ModelFacts(
        architecture=architectures[0],
        model_type=_text(c, "model_type", repo_id),
        parameters_billion=parameters / 1e9,
        num_hidden_layers=_required(c, "num_hidden_layers", repo_id),
        num_attention_heads=heads,
        num_key_value_heads=_optional(c, "num_key_value_heads", repo_id) or heads,
        head_dim=_optional(c, "head_dim", repo_id) or hidden // heads,
        hidden_size=hidden,
        max_position_embeddings=max_position,
        other_length_keys=lengths.other_length_keys,
        rope=lengths.rope,
        original_max_position_embeddings=lengths.original_max_position_embeddings,
        dtype=dtype,
        weights_gb=None if weights_bytes is None else weights_bytes / 1e9,
        quantization=quantization,
        quantization_scheme=scheme,
        sparsity=checkpoint_sparsity(quantization_config) if quantization == "compressed-tensors" else None,
        vocab_size=_optional(c, "vocab_size", repo_id),
        tie_word_embeddings=c.get("tie_word_embeddings") is True,
        mtp_layers=mtp,
        gated=gated,
        source=source,
        confidence="reported",
    )


def _draft_model_config(config: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """The config vLLM derives a draft's context from: a speculators-format head (speculators_config set) as
    its transformer_layer_config; an EAGLE config of model_type eagle as its nested `model`, with the
    top-level keys set over it (EAGLEConfig); any other head as it is."""
    if config.get("speculators_config") is not None:
        return layer
    nested = config.get("model")
    if config.get("model_type") == "eagle" and isinstance(nested, dict):
        return {
            **nested,
            **{k: v for k, v in config.items() if k not in ("model", "model_type", "architectures")},
        }
    return config


def _config_lengths(config: dict[str, Any], repo_id: str) -> ConfigLengths:
    """The keys vLLM derives a context length from, as the draft's ModelConfig reads them."""
    keys = load_catalog().vllm.max_model_len_derivation.length_keys
    return ConfigLengths(
        model_type=_text(config, "model_type", repo_id),
        max_position_embeddings=_optional(config, "max_position_embeddings", repo_id) or None,
        other_length_keys={
            k: n for k in keys if k != "max_position_embeddings" and (n := _optional(config, k, repo_id))
        },
        rope=_rope(config, repo_id),
        original_max_position_embeddings=_optional(config, "original_max_position_embeddings", repo_id)
        or None,
    )


def draft_facts_from_config(
    config: dict[str, Any], *, source: str, weights_bytes: int | None, repo_id: str = "the draft"
) -> Draft:
    speculators = _object(config, "speculators_config", repo_id)
    layer = _object(config, "transformer_layer_config", repo_id)
    shape = {**config, **layer}
    kind = _text(config, "speculators_model_type", repo_id).lower()
    architectures = " ".join(_strings(config, "architectures", repo_id)).lower()
    method = "eagle3" if "eagle3" in kind or "eagle3" in architectures else "eagle"
    verifier = _object(speculators, "verifier", repo_id).get("name_or_path")
    if verifier is not None and not isinstance(verifier, str):
        raise ConfigError(f"{repo_id}: the verifier's name_or_path is {_kind(verifier)}; allowed: a string")
    if verifier is not None and not _valid_id(verifier):
        verifier = None  # a local path the head was trained from: the target is not known
    hidden = shape.get("target_hidden_size") or shape.get("hidden_size")
    vocab = shape.get("vocab_size")
    lengths = _config_lengths(_draft_model_config(config, layer), repo_id)
    return Draft(
        method=method,
        target=verifier or None,
        # The files' size stands in for what stays on the GPU (an upper bound: a shared embedding is less).
        size_gb=None if weights_bytes is None else weights_bytes / 1e9,
        download_gb=None if weights_bytes is None else weights_bytes / 1e9,
        parallel_drafting=bool(config.get("parallel_drafting", False)),
        target_hidden_size=int(hidden) if _is_int(hidden) else None,
        target_vocab_size=int(vocab) if _is_int(vocab) else None,
        config_lengths=lengths,
        source=source,
        confidence="reported",
    )


def facts_from_config(
    config: dict[str, Any],
    *,
    repo_id: str,
    revision: str,
    origin: str,
    weights_bytes: int | None = None,
    parameters: int | None = None,
    gated: bool | None = None,
) -> FetchedFacts:
    """The facts of one repository; ConfigError naming the field, its value and what is allowed."""
    if not isinstance(config, dict):
        raise ConfigError(f"{repo_id}: config.json is {_kind(config)}; allowed: a JSON object")
    if weights_bytes is not None and (
        not _is_int(weights_bytes) or not 0 <= weights_bytes <= MAX_WEIGHTS_BYTES
    ):
        raise ConfigError(
            f"{repo_id}: the weights' size is {_kind(weights_bytes)} bytes; allowed: an integer from 0 to "
            f"{MAX_WEIGHTS_BYTES}"
        )
    if parameters is not None and (not _is_int(parameters) or not 1 <= parameters <= MAX_PARAMETERS):
        raise ConfigError(
            f"{repo_id}: the parameter count is {_kind(parameters)}; allowed: an integer from 1 to {MAX_PARAMETERS}"
        )
    source = f"{origin} (config.json at revision {revision}, read by `speculative-infra facts fetch`)"
    try:
        return _facts(config, repo_id, revision, origin, source, weights_bytes, parameters, gated)
    except ValidationError as err:
        raise ConfigError(
            f"{repo_id}: config.json gives facts the checks cannot use ({problems(err)})"
        ) from None


def problems(err: ValidationError) -> str:
    """A validation error's problems on one line, each with the field it concerns."""
    found = []
    for e in err.errors():
        where = ".".join(map(str, e["loc"]))
        message = str(e["msg"]).removeprefix("Value error, ")
        found.append(f"{where}: {message}" if where else message)
    return "; ".join(found)


def _facts(
    config: dict[str, Any],
    repo_id: str,
    revision: str,
    origin: str,
    source: str,
    weights_bytes: int | None,
    parameters: int | None,
    gated: bool | None,
) -> FetchedFacts:
    if _is_draft(config, repo_id):
        draft = draft_facts_from_config(config, source=source, weights_bytes=weights_bytes, repo_id=repo_id)
        return FetchedFacts(repo_id=repo_id, revision=revision, origin=origin, kind="draft", draft=draft)
    model = model_facts_from_config(
        config,
        repo_id=repo_id,
        source=source,
        weights_bytes=weights_bytes,
        parameters=parameters,
        gated=gated,
    )
    return FetchedFacts(repo_id=repo_id, revision=revision, origin=origin, kind="model", model=model)
