"""SI203 on compressed-tensors checkpoints, held to each release's own scheme choice: the class
CompressedTensorsConfig._get_scheme_from_parts picks for a quantization on a GPU, and that class's
get_min_capability(), run by scripts/probe_vllm_scheme_choice.py (tests/golden/vllm_scheme_choice.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The probes' inputs, as the probe script defines them (imported so the two cannot drift apart).
from scripts.probe_vllm_scheme_choice import COMPUTE_CAPABILITIES, QUANTIZATION
from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.check import check
from speculative_infra.quantization_methods import SCHEME_FLOOR_NAME, compressed_tensors_scheme
from speculative_infra.rules.finding import Severity
from speculative_infra.rules.gpu_support import _quantization_floor
from speculative_infra.rules.sparsity import marlin_24_problem
from tests.conftest import REFERENCE_SPEC, deep_merge, llama_8b

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_scheme_choice.json").read_text())
RELEASES: dict[str, Any] = GOLDEN["releases"]

# vLLM's scheme classes by the names the catalog's floors use.
CLASS_SCHEME = {
    "CompressedTensorsW8A8Fp8": "w8a8_fp8",
    "CompressedTensorsW8A16Fp8": "w8a16_fp8",
    "CompressedTensorsW8A8Int8": "w8a8_int8",
    "CompressedTensorsWNA16": "wna16",
    "CompressedTensorsW4A16Fp4": "w4a16_nvfp4",
    "CompressedTensorsW4A4Fp4": "w4a4_nvfp4",
    "CompressedTensorsW4A16Sparse24": "w4a16_sparse24",
}
MARLIN_24 = "w4a16_sparse24"  # judged by SI206, not SI203


def _hub_config(weights: dict[str, Any], inputs: dict[str, Any] | None, layout: str) -> dict[str, Any]:
    group: dict[str, Any] = {"targets": ["Linear"], "weights": weights}
    if inputs is not None:
        group["input_activations"] = inputs
    return {"quant_method": "compressed-tensors", "format": layout, "config_groups": {"group_0": group}}


def test_the_probe_covers_every_release_and_the_nvfp4_swap() -> None:
    assert len(RELEASES) == 38
    choices = {c.get("returns") for r in RELEASES.values() for c in r["choice"].values()}
    assert set(CLASS_SCHEME) <= choices
    # Only the marlin-24 layout stops being built (from 0.16.0); every other probe gets a scheme.
    raised = {k.split(" | ")[0] for r in RELEASES.values() for k, c in r["choice"].items() if "raises" in c}
    assert raised == {MARLIN_24}


@pytest.mark.parametrize("name", list(QUANTIZATION))
def test_the_library_reads_each_probe_config_as_its_scheme(name: str) -> None:
    layout, weights, inputs = QUANTIZATION[name]
    assert compressed_tensors_scheme(_hub_config(weights, inputs, layout)) == name


@pytest.mark.parametrize("release", list(RELEASES))
def test_the_scheme_and_floor_are_each_release_own(release: str) -> None:
    # For every quantization x GPU: the scheme SI203 judges (the checkpoint's own or the one vLLM swaps
    # in) is the class the release picks, and its verdict is that class's get_min_capability()'s. The
    # floor itself must agree too, except where the catalog has none for the scheme (W4A4 FP4 up to
    # 0.15.1 asks for 10.0, or 8.0 under VLLM_USE_NVFP4_CT_EMULATIONS, so the interface probe left it
    # unread) and SI203 falls back to compressed-tensors' own floor: there vLLM picks W4A4 only from 10.0.
    for key, choice in RELEASES[release]["choice"].items():
        scheme, cc = key.split(" | ")
        if scheme == MARLIN_24:
            continue
        chosen = CLASS_SCHEME[choice["returns"]]
        floor, runs_as = _quantization_floor("compressed-tensors", scheme, release, cc)
        assert (runs_as or SCHEME_FLOOR_NAME.get(scheme, scheme)) == chosen, (release, key)
        expected = choice["min_capability"]["returns"]
        vllm_floor = f"{expected // 10}.{expected % 10}"
        assert floor is not None
        assert (version_tuple(cc) >= version_tuple(floor)) == (version_tuple(cc) >= version_tuple(vllm_floor))
        if chosen in load_vllm_model_interfaces().releases[release].compressed_tensors_scheme_min_capability:
            assert floor == vllm_floor, (release, key)


W4A4_NVFP4 = llama_8b(
    "acme/llama-3.1-8b-nvfp4-w4a4", quantization="compressed-tensors", quantization_scheme="w4a4_nvfp4"
)


def _si203(version: str, instance: str, model: dict[str, Any] = W4A4_NVFP4) -> Any:
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


def test_nvfp4_w4a4_runs_weight_only_below_blackwell_up_to_0_15_1() -> None:
    # Up to 0.15.1 vLLM runs W4A16 FP4 (8.0) where its CUTLASS FP4 kernels do not run; from 0.16.0 the
    # W4A4 scheme itself, at 7.5. Before, the T4 passed on compressed-tensors' own floor.
    found = _si203("0.15.1", "ml.g4dn.xlarge")  # T4: 7.5
    assert found is not None and ">= 8.0 (as w4a16_nvfp4" in found.message and "0.16.0" in found.fix
    assert _si203("0.15.1", "ml.g5.xlarge") is None  # A10G 8.0 and up: the weight-only path
    assert _si203("0.16.0", "ml.g4dn.xlarge") is None
    assert _si203("0.15.1", "ml.p3.2xlarge") is not None  # V100: 7.0


def test_nvfp4_w4a16_built_by_the_w4a4_class_is_not_called_a_fallback() -> None:
    # From 0.23.0 the W4A4 class builds NVFP4 W4A16 layers on every GPU: not a weight-only fallback.
    found = _si203("0.23.0", "ml.p3.2xlarge", {**W4A4_NVFP4, "quantization_scheme": "w4a16_nvfp4"})
    assert found is not None and "built by the w4a4_nvfp4 scheme's class, on every GPU" in found.message
    assert "falls back" not in found.message


def test_swap_thresholds_at_their_boundaries() -> None:
    fallbacks = load_catalog().vllm.compressed_tensors_fallbacks.fallbacks
    nvfp4 = fallbacks["w4a4_nvfp4"]
    assert nvfp4.swaps("0.15.1", "9.0", None) and not nvfp4.swaps("0.15.1", "10.0", None)
    assert not nvfp4.swaps("0.16.0", "9.0", None)
    a16 = fallbacks["w4a16_nvfp4"]
    assert a16.swaps("0.23.0", "12.0", "7.5") and not a16.swaps("0.22.1", "7.0", "7.5")
    fp8 = fallbacks["w8a8_fp8"]
    assert fp8.swaps("0.33.0", "8.6", "8.9") and not fp8.swaps("0.33.0", "8.9", "8.9")
    assert not fp8.swaps("0.33.0", "8.6", None)  # no floor read: nothing to compare
    assert set(COMPUTE_CAPABILITIES) >= {"9.0", "10.0", "8.6", "8.9"}  # the golden has both sides


@pytest.mark.parametrize("release", list(RELEASES))
def test_marlin_24_verdicts_are_each_release_own(release: str) -> None:
    # SI206: refused where the release builds no scheme for the layout, or where the GPU is below the
    # floor of the W4A16Sparse24 it builds.
    for cc in COMPUTE_CAPABILITIES:
        choice = RELEASES[release]["choice"][f"{MARLIN_24} | {cc}"]
        if "raises" in choice:
            refused = True
            assert choice["message"].startswith(
                load_catalog().vllm.sparse_checkpoint_checks.marlin_24_refusal
            )
        else:
            assert choice["returns"] == "CompressedTensorsW4A16Sparse24"
            floor = choice["min_capability"]["returns"]
            refused = version_tuple(cc) < version_tuple(f"{floor // 10}.{floor % 10}")
        assert (marlin_24_problem(release, cc) is not None) == refused, (release, cc)


MARLIN_LLAMA = {**W4A4_NVFP4, "id": "acme/llama-3.1-8b-2of4-marlin24", "quantization_scheme": MARLIN_24}


def _marlin(version: str, instance: str, code: str = "SI206") -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"version": version},
            "model": MARLIN_LLAMA,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16", "max_model_len": 4096},
        },
    )
    findings = check(spec).findings
    return next((f for f in findings if f.code == code), None), [
        f.code for f in findings if f.severity == Severity.ERROR
    ]


def test_marlin_24_loads_up_to_0_15_1_from_compute_capability_8_0() -> None:
    assert _marlin("0.15.1", "ml.g5.xlarge")[0] is None  # A10G 8.6
    refused, _ = _marlin("0.16.0", "ml.g5.xlarge")
    assert refused is not None and "No compressed-tensors compatible scheme was found" in refused.message
    assert refused.fix.startswith("use a container with vLLM 0.15.1,")
    below, _ = _marlin("0.15.1", "ml.g4dn.xlarge")  # T4 7.5
    assert below is not None and ">= 8.0" in below.message and "has 7.5" in below.message
    assert "0.15.1 on a family whose GPU loads it (g5, " in below.fix and "g4dn" not in below.fix
    # SI203 knows no per-release floor for the layout (compressed-tensors' own 7.0): one error, SI206's.
    assert _marlin("0.15.1", "ml.g4dn.xlarge", "SI203")[0] is None


def test_the_suggested_marlin_24_container_passes_every_rule() -> None:
    refused, _ = _marlin("0.16.0", "ml.g5.xlarge")
    version = refused.fix.removeprefix("use a container with vLLM ").split(",")[0]
    assert _marlin(version, "ml.g5.xlarge")[1] == []
