"""ModelOpt FP8 / NVFP4 checkpoints: named as vLLM names them, sized at their bits, judged at each release's floor."""

from __future__ import annotations

from typing import Any

import pytest

from speculative_infra.catalog.models import ModelFacts
from speculative_infra.check import check
from speculative_infra.quantization_methods import from_quantization_config
from speculative_infra.sizing import weights_mib
from tests.conftest import REFERENCE_SPEC, deep_merge, llama_8b


@pytest.mark.parametrize(
    ("config", "method"),
    [
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "modelopt_fp4"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "modelopt"),
        ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, None),  # not described: left out
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "FP8"}, "fp8"),
        ({"quant_method": "compressed-tensors"}, "compressed-tensors"),
        (None, None),
        ({}, None),
    ],
)
def test_hub_quantization_config_names(config: Any, method: Any) -> None:
    assert from_quantization_config(config) == method


NVFP4_LLAMA = llama_8b("acme/llama-3.1-8b-nvfp4", quantization="modelopt_fp4")


def test_nvfp4_weights_are_4_5_bits() -> None:
    facts = ModelFacts.model_validate(
        {k: v for k, v in NVFP4_LLAMA.items() if k != "id"} | {"source": "test"}
    )
    assert weights_mib(facts, 2) == pytest.approx(8.0e9 * 4.5 / 8 / 2**20)


def _si203(version: str, instance: str) -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"version": version},
            "model": NVFP4_LLAMA,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16", "max_model_len": 4096},
        },
    )
    return next((f for f in check(spec).findings if f.code == "SI203"), None)


def test_nvfp4_on_a_t4_from_0_14_0() -> None:
    # ModelOptNvFp4Config.get_min_capability(): 80 up to 0.13.0, 75 from 0.14.0 (read from the wheels).
    assert _si203("0.13.0", "ml.g4dn.xlarge") is not None
    assert _si203("0.14.0", "ml.g4dn.xlarge") is None
    assert _si203("0.19.1", "ml.p3.2xlarge") is not None  # V100: 7.0


def _ct(weights: dict[str, Any], inputs: dict[str, Any] | None) -> dict[str, Any]:
    group: dict[str, Any] = {"targets": ["Linear"], "weights": weights}
    if inputs is not None:
        group["input_activations"] = inputs
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": group}}


@pytest.mark.parametrize(
    ("config", "scheme"),
    [
        (_ct({"type": "int", "num_bits": 4, "group_size": 128}, None), "w4a16"),
        (_ct({"type": "int", "num_bits": 8}, None), "w8a16"),
        (_ct({"type": "float", "num_bits": 8}, None), "w8a16_fp8"),
        (
            _ct({"type": "float", "num_bits": 8}, {"type": "float", "num_bits": 8, "dynamic": True}),
            "w8a8_fp8",
        ),
        (_ct({"type": "int", "num_bits": 8}, {"type": "int", "num_bits": 8}), "w8a8_int8"),
        (_ct({"type": "float", "num_bits": 4, "group_size": 16}, None), "w4a16_nvfp4"),
        (_ct({"type": "float", "num_bits": 4}, {"type": "float", "num_bits": 4}), "w4a4_nvfp4"),
        (_ct({"type": "int", "num_bits": 4}, {"type": "float", "num_bits": 8}), None),  # W4A8: not described
        ({"quant_method": "compressed-tensors"}, None),
        ({"quant_method": "compressed-tensors", "config_groups": {"g": "odd"}}, None),
        # The marlin-24 layout, named by the config or by the group: vLLM builds int4 weight-only only.
        (
            {**_ct({"type": "int", "num_bits": 4, "group_size": 128}, None), "format": "marlin-24"},
            "w4a16_sparse24",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {"g": {"format": "marlin-24", "weights": {"type": "int", "num_bits": 4}}},
            },
            "w4a16_sparse24",
        ),
        ({**_ct({"type": "int", "num_bits": 8}, None), "format": "marlin-24"}, None),
    ],
)
def test_compressed_tensors_schemes(config: dict[str, Any], scheme: Any) -> None:
    from speculative_infra.quantization_methods import compressed_tensors_scheme

    assert from_quantization_config(config) == "compressed-tensors"
    assert compressed_tensors_scheme(config) == scheme


FP8_W8A8 = {**NVFP4_LLAMA, "id": "acme/llama-3.1-8b-fp8-dynamic", "quantization": "compressed-tensors"}


def _ct203(version: str, instance: str, scheme: str) -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"version": version},
            "model": {**FP8_W8A8, "quantization_scheme": scheme},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16", "max_model_len": 4096},
        },
    )
    return next((f for f in check(spec).findings if f.code == "SI203"), None)


def test_fp8_w8a8_falls_back_to_weight_only_below_8_9() -> None:
    # W8A8 FP8 needs 8.9; below it vLLM runs W8A16 FP8, which needs 8.0 up to 0.15.1 and 7.5 from 0.16.0.
    assert _ct203("0.15.1", "ml.g5.xlarge", "w8a8_fp8") is None  # A10G 8.6: the weight-only path
    found = _ct203("0.15.1", "ml.g4dn.xlarge", "w8a8_fp8")  # T4 7.5
    assert found is not None and ">= 8.0 (as w8a16_fp8" in found.message and "0.16.0 or newer" in found.fix
    assert _ct203("0.16.0", "ml.g4dn.xlarge", "w8a8_fp8") is None


def test_wna16_floor_moved_at_0_12_0() -> None:
    # Both int widths run as vLLM's CompressedTensorsWNA16: 8.0 up to 0.11.2, 7.5 from 0.12.0.
    for scheme in ("w4a16", "w8a16"):
        assert _ct203("0.11.2", "ml.g4dn.xlarge", scheme) is not None
        assert _ct203("0.12.0", "ml.g4dn.xlarge", scheme) is None


def test_scheme_bits_size_the_weights() -> None:
    base = {k: v for k, v in FP8_W8A8.items() if k != "id"} | {"source": "test"}
    w4 = ModelFacts.model_validate(base | {"quantization_scheme": "w4a16"})
    w8 = ModelFacts.model_validate(base | {"quantization_scheme": "w8a16"})
    unknown = ModelFacts.model_validate(base)
    assert weights_mib(w4, 2) == pytest.approx(8.0e9 * 4.25 / 8 / 2**20)
    assert weights_mib(w8, 2) == pytest.approx(8.0e9 * 8.25 / 8 / 2**20)
    # A scheme on a checkpoint that is not compressed-tensors does not change its size.
    fp8 = ModelFacts.model_validate(base | {"quantization": "fp8", "quantization_scheme": "w4a16"})
    assert weights_mib(fp8, 2) == pytest.approx(8.0e9 / 2**20)
    assert weights_mib(unknown, 2) == pytest.approx(8.0e9 * 8 / 8 / 2**20)
