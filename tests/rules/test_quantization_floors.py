"""SI203 per release: each quantization method's get_min_capability(), as each wheel returns it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_model_interfaces.json").read_text())
FP8_QWEN = {
    "id": "acme/qwen3-1.7b-fp8",
    "architecture": "Qwen3ForCausalLM",
    "model_type": "qwen3",
    "parameters_billion": 2.0,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 2048,
    "max_position_embeddings": 40960,
    "quantization": "fp8",
}


def _si203(version: str, model: dict[str, Any], instance: str = "ml.g4dn.xlarge") -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"version": version},
            "model": model,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16", "max_model_len": 4096},
        },
    )
    return next((f for f in check(spec).findings if f.code == "SI203"), None)


def test_fp8_on_a_t4_from_0_14_0() -> None:
    # Fp8Config.get_min_capability() returned 80 up to 0.13.0 and 75 from 0.14.0 (T4: 7.5).
    found = _si203("0.13.0", FP8_QWEN)
    assert (
        found is not None and "compute capability >= 8.0" in found.message and "vLLM 0.13.0" in found.message
    )
    assert "vLLM 0.14.0 or newer" in found.fix
    assert _si203("0.14.0", FP8_QWEN) is None


def test_fp8_never_on_a_v100() -> None:
    found = _si203("0.19.1", FP8_QWEN, "ml.p3.2xlarge")
    assert found is not None and ">= 7.5" in found.message and "or newer" not in found.fix


def test_mxfp4_on_a_t4_in_every_release() -> None:
    for version in load_catalog().vllm_dlc_versions():
        found = _si203(version, {"id": "openai/gpt-oss-20b"})
        assert found is not None and ">= 8.0" in found.message, version


def test_the_catalog_holds_what_each_wheel_returns() -> None:
    catalog = load_vllm_model_interfaces().releases
    for version, record in GOLDEN["releases"].items():
        numeric = {
            name: f"{value // 10}.{value % 10}"
            for name, value in record["quantization_method_min_capability"].items()
            if isinstance(value, int) and value > 0
        }
        assert catalog[version].quantization_min_capability == numeric, version


def test_the_catalog_mxfp4_figure_is_what_the_releases_ask() -> None:
    # The catalog's release-independent figure (from vLLM's source at a commit) is what every release from
    # 0.10.1 returns.
    static = load_catalog().vllm.quantization["mxfp4"].min_compute_capability
    for version, record in load_vllm_model_interfaces().releases.items():
        if version != "0.10.0":
            assert record.quantization_min_capability["mxfp4"] == static, version
