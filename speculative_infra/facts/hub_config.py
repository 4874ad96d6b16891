"""A Hugging Face config.json (plus the repository's size and gated flag) -> the facts the rules use.

Two kinds of repository: a target model (its architecture, attention shape, context, vocabulary and
multi-token-prediction layers) and a speculative-decoding draft (an EAGLE/EAGLE3 head: the method and
the target's hidden size and vocabulary it was built for, and the target it names, if any).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from speculative_infra.catalog.models import Draft, ModelFacts
from speculative_infra.quantization_methods import compressed_tensors_scheme, from_quantization_config
from speculative_infra.sizing import dtype_bytes

# Config keys holding the number of multi-token-prediction layers: num_nextn_predict_layers (DeepSeek-V3,
# GLM-4.5, MiMo, ERNIE; what vLLM's SpeculativeConfig reads) and mtp_num_hidden_layers (Qwen3-Next's
# config). Absent: no MTP layers.
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
_DTYPES = ("bfloat16", "float16", "float32")


class FetchedFacts(BaseModel):
    """What `facts fetch` learned about one repository, as stored in cdk.context.json."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    repo_id: str
    revision: str
    origin: str  # the URL or folder the facts were read from
    kind: Literal["model", "draft"]
    model: ModelFacts | None = None
    draft: Draft | None = None


class ConfigError(ValueError):
    """config.json lacks a fact the rules need."""


def _is_draft(config: dict[str, Any]) -> bool:
    architectures = " ".join(config.get("architectures") or []).lower()
    return "speculators_config" in config or "eagle" in architectures or "speculator" in architectures


def _text_config(config: dict[str, Any]) -> dict[str, Any]:
    # Multimodal checkpoints keep the language model's shape under text_config.
    text = config.get("text_config")
    return {**config, **text} if isinstance(text, dict) else config


def _dtype(config: dict[str, Any]) -> Literal["bfloat16", "float16", "float32"]:
    value = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    if value not in _DTYPES:
        return "bfloat16"
    return value  # type: ignore[return-value]


def _required(config: dict[str, Any], key: str, repo_id: str) -> int:
    value = config.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{repo_id}: config.json has no positive integer {key!r} (got {value!r})")
    return value


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
    quantization = from_quantization_config(c.get("quantization_config"))
    scheme = (
        compressed_tensors_scheme(c.get("quantization_config"))
        if quantization == "compressed-tensors"
        else None
    )
    if parameters is None:
        if weights_bytes is None:
            raise ConfigError(f"{repo_id}: neither the parameter count nor the weights' size is known")
        parameters = int(weights_bytes // dtype_bytes(dtype))
    architectures = c.get("architectures") or [""]
    return ModelFacts(
        architecture=str(architectures[0]),
        model_type=str(c.get("model_type", "")),
        parameters_billion=parameters / 1e9,
        num_hidden_layers=_required(c, "num_hidden_layers", repo_id),
        num_attention_heads=heads,
        num_key_value_heads=int(c.get("num_key_value_heads") or heads),
        head_dim=int(c.get("head_dim") or hidden // heads),
        hidden_size=hidden,
        max_position_embeddings=_required(c, "max_position_embeddings", repo_id),
        dtype=dtype,
        weights_gb=None if weights_bytes is None else weights_bytes / 1e9,
        quantization=quantization,
        quantization_scheme=scheme,
        vocab_size=c.get("vocab_size"),
        mtp_layers=next((int(c[k]) for k in _MTP_KEYS if isinstance(c.get(k), int)), 0),
        gated=gated,
        source=source,
        confidence="reported",
    )


def draft_facts_from_config(config: dict[str, Any], *, source: str, weights_bytes: int | None) -> Draft:
    speculators = config.get("speculators_config") or {}
    layer = config.get("transformer_layer_config") or {}
    shape = {**config, **layer}
    kind = str(config.get("speculators_model_type") or "").lower()
    architectures = " ".join(config.get("architectures") or []).lower()
    method = "eagle3" if "eagle3" in kind or "eagle3" in architectures else "eagle"
    verifier = (speculators.get("verifier") or {}).get("name_or_path")
    hidden = shape.get("target_hidden_size") or shape.get("hidden_size")
    return Draft(
        method=method,
        target=str(verifier) if verifier else None,
        # The files' size stands in for what stays on the GPU (an upper bound: a shared embedding is less).
        size_gb=None if weights_bytes is None else weights_bytes / 1e9,
        download_gb=None if weights_bytes is None else weights_bytes / 1e9,
        parallel_drafting=bool(config.get("parallel_drafting", False)),
        target_hidden_size=int(hidden) if isinstance(hidden, int) else None,
        target_vocab_size=int(shape["vocab_size"]) if isinstance(shape.get("vocab_size"), int) else None,
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
    source = f"{origin} (config.json at revision {revision}, read by `speculative-infra facts fetch`)"
    try:
        return _facts(config, repo_id, revision, origin, source, weights_bytes, parameters, gated)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in err.errors())
        raise ConfigError(f"{repo_id}: config.json gives facts the checks cannot use ({problems})") from None


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
    if _is_draft(config):
        draft = draft_facts_from_config(config, source=source, weights_bytes=weights_bytes)
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
