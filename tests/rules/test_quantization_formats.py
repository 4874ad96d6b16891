"""ModelOpt FP8 / NVFP4 checkpoints: named as vLLM names them, sized at their bits, judged at each release's floor."""

from __future__ import annotations

from typing import Any

import pytest

from speculative_infra.catalog.models import ModelFacts
from speculative_infra.check import check
from speculative_infra.quantization_methods import from_quantization_config
from speculative_infra.sizing import weights_mib
from tests.conftest import REFERENCE_SPEC, deep_merge


@pytest.mark.parametrize(
    ("config", "method"),
    [
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "modelopt_fp4"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "modelopt"),
        ({"quant_method": "modelopt", "quant_algo": "W4A8_AWQ"}, None),  # not described: left out
        ({"quant_method": "mxfp4"}, "mxfp4"),
        ({"quant_method": "FP8"}, "fp8"),
        ({"quant_method": "compressed-tensors"}, None),
        (None, None),
        ({}, None),
    ],
)
def test_hub_quantization_config_names(config: Any, method: Any) -> None:
    assert from_quantization_config(config) == method


NVFP4_LLAMA = {
    "id": "acme/llama-3.1-8b-nvfp4",
    "architecture": "LlamaForCausalLM",
    "model_type": "llama",
    "parameters_billion": 8.0,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 131072,
    "quantization": "modelopt_fp4",
}


def test_nvfp4_weights_are_4_5_bits() -> None:
    facts = ModelFacts.model_validate({k: v for k, v in NVFP4_LLAMA.items() if k != "id"} | {"source": "test"})
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
