"""The checkpoint quantizations the library can describe, by vLLM's --quantization names, and how a Hugging Face
config.json names them. Shared by the spec, the catalog and `facts fetch`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

# modelopt: NVIDIA ModelOpt FP8; modelopt_fp4: ModelOpt NVFP4 (4-bit E2M1 values, one FP8 scale per 16).
QuantizationMethod = Literal["mxfp4", "fp8", "awq", "gptq", "modelopt", "modelopt_fp4", "compressed-tensors"]
QUANTIZATION_METHODS: tuple[str, ...] = get_args(QuantizationMethod)

# The compressed-tensors schemes vLLM picks per layer (CompressedTensorsConfig._get_scheme_from_parts):
# w4a16 / w8a16 = int4 / int8 weights with 16-bit activations (both vLLM's WNA16 scheme); w8a16_fp8 / w8a8_fp8 = FP8 weights with 16-bit / FP8
# activations; w8a8_int8; w4a16_nvfp4 / w4a4_nvfp4 = NVFP4 weights with 16-bit / NVFP4 activations;
# w4a16_sparse24 = int4 weights in 2:4 sparse Marlin layout (format marlin-24, vLLM's W4A16Sparse24).
CompressedTensorsScheme = Literal[
    "w4a16", "w8a16", "w8a16_fp8", "w8a8_fp8", "w8a8_int8", "w4a16_nvfp4", "w4a4_nvfp4", "w4a16_sparse24"
]
SCHEME_BITS: dict[str, float] = {
    "w4a16": 4.25,
    "w8a16": 8.25,
    "w8a16_fp8": 8.0,
    "w8a8_fp8": 8.0,
    "w8a8_int8": 8.0,
    "w4a16_nvfp4": 4.5,
    "w4a4_nvfp4": 4.5,
    "w4a16_sparse24": 4.25,  # counted dense: an upper bound on the half that 2:4 keeps plus its metadata
}
# The scheme class vLLM runs each as, by the names the catalog's per-release floors use.
SCHEME_FLOOR_NAME: dict[str, str] = {"w4a16": "wna16", "w8a16": "wna16"}

# What a compressed-tensors checkpoint's `sparsity_config` asks of vLLM: "2:4", layers vLLM would run on its
# 2:4 sparse kernel (CompressedTensorsConfig.supports_cutlass_24 says yes); "other", a sparsity_config
# naming target layers that vLLM otherwise reads densely. None: no sparsity_config, or one without targets.
CheckpointSparsity = Literal["2:4", "other"]
_SPARSE_24_FORMATS = ("dense", "sparse-24-bitmask")  # compressed-tensors CompressionFormat values


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


def compressed_tensors_scheme(config: Mapping[str, Any] | None) -> str | None:
    """The scheme of a compressed-tensors checkpoint's first config group, or None where it is another one.

    Read from `config_groups.<group>.weights` / `input_activations` (type int / float, num_bits)."""
    groups = (config or {}).get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return None
    group = next(iter(groups.values()))
    if not isinstance(group, Mapping) or not isinstance(group.get("weights"), Mapping):
        return None
    weights, inputs = group["weights"], group.get("input_activations")
    kind, bits = str(weights.get("type", "int")), weights.get("num_bits")
    in_kind = (
        None if not isinstance(inputs, Mapping) else (str(inputs.get("type", "int")), inputs.get("num_bits"))
    )
    # The group's format, else the config's (compressed-tensors writes either).
    layout = group.get("format") or (config or {}).get("format")
    if layout == "marlin-24":  # vLLM builds only int4 weight-only layers in this layout
        return "w4a16_sparse24" if (kind, bits, in_kind) == ("int", 4, None) else None
    if kind == "float" and bits == 4:
        return "w4a16_nvfp4" if in_kind is None else "w4a4_nvfp4" if in_kind == ("float", 4) else None
    if kind == "float" and bits == 8:
        return "w8a16_fp8" if in_kind is None else "w8a8_fp8" if in_kind == ("float", 8) else None
    if kind == "int" and bits in (4, 8) and in_kind is None:
        return f"w{bits}a16"
    if kind == "int" and bits == 8 and in_kind == ("int", 8):
        return "w8a8_int8"
    return None


def checkpoint_sparsity(config: Mapping[str, Any] | None) -> str | None:
    """What the checkpoint's quantization_config.sparsity_config asks of vLLM (CheckpointSparsity).

    As CompressedTensorsConfig reads it: the layers a sparsity_config's `targets` name take the 2:4 kernel
    where its sparsity_structure is "2:4" (compressed-tensors' default is "unstructured"), its format dense
    or sparse-24-bitmask, and the first config group unquantized, or 8-bit weights per tensor or channel
    with 8-bit activations per tensor or token (supports_cutlass_24)."""
    sparsity = (config or {}).get("sparsity_config")
    if not isinstance(sparsity, Mapping) or not sparsity.get("targets"):
        return None
    structure = sparsity.get("sparsity_structure", "unstructured")
    if structure != "2:4" or sparsity.get("format") not in _SPARSE_24_FORMATS:
        return "other"
    groups = (config or {}).get("config_groups")
    if groups is not None and not isinstance(groups, Mapping):
        return "other"  # not groups vLLM reads: nothing says its layers take the 2:4 kernel
    group = next(iter(groups.values())) if groups else None
    if groups and not isinstance(group, Mapping):
        return "other"
    weights = group.get("weights") if group is not None else None
    inputs = group.get("input_activations") if group is not None else None
    if weights is None and inputs is None:
        return "2:4"
    if not isinstance(weights, Mapping) or not isinstance(inputs, Mapping):
        return "other"  # weight-only quantization: not the 2:4 kernel
    if _strategy(weights) not in ("tensor", "channel") or _strategy(inputs) not in ("tensor", "token"):
        return "other"
    return "2:4" if weights.get("num_bits", 8) == inputs.get("num_bits", 8) == 8 else "other"


def _strategy(args: Mapping[str, Any]) -> str | None:
    """QuantizationArgs' strategy, inferred from group_size where unset (None: tensor, > 0: group, -1:
    channel), as compressed-tensors' validator does."""
    if args.get("strategy") is not None:
        return str(args["strategy"]).lower()
    group_size = args.get("group_size")
    return "tensor" if group_size is None else "channel" if group_size == -1 else "group"
