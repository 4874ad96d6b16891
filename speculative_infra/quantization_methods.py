"""The checkpoint quantizations the library can describe, by vLLM's --quantization names, and how a Hugging Face
config.json names them. Shared by the spec, the catalog and `facts fetch`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

# modelopt: NVIDIA ModelOpt FP8; modelopt_fp4: ModelOpt NVFP4 (4-bit E2M1 values, one FP8 scale per 16).
QuantizationMethod = Literal["mxfp4", "fp8", "awq", "gptq", "modelopt", "modelopt_fp4"]
QUANTIZATION_METHODS: tuple[str, ...] = get_args(QuantizationMethod)


def from_quantization_config(config: Mapping[str, Any] | None) -> str | None:
    """The method vLLM picks for a checkpoint's quantization_config, or None where it is none of the above.

    ModelOpt checkpoints say quant_method "modelopt" with quant_algo "FP8" or "NVFP4"; vLLM serves the latter
    as modelopt_fp4 (ModelOptNvFp4Config.override_quantization_method)."""
    if not config:
        return None
    method = str(config.get("quant_method", "")).lower()
    if method == "modelopt":
        algo = str(config.get("quant_algo", "")).upper()
        return "modelopt_fp4" if "NVFP4" in algo else "modelopt" if "FP8" in algo else None
    return method if method in QUANTIZATION_METHODS else None
