"""SI204: the container's vLLM carries machine code for the GPU (kernel lists read from the wheels)."""

from __future__ import annotations

from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_kernels import cubin_runs_on, load_vllm_kernels
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

# NVIDIA's binary-compatibility rule (CUDA C Programming Guide, "Binary Compatibility" and "Feature
# Availability"): cubin X.y runs on X.z for z >= y; an arch-specific cubin runs on exactly X.y.
COMPATIBILITY = [
    ("8.0", "8.0", True),
    ("8.0", "8.6", True),  # A10G runs the sm_80 build
    ("8.0", "8.9", True),
    ("8.6", "8.0", False),  # never downwards
    ("8.9", "8.6", False),
    ("8.0", "9.0", False),  # never across a major version
    ("9.0", "10.0", False),
    ("9.0a", "9.0", True),
    ("10.0", "10.3", True),  # B300 runs plain sm_100 code
    ("10.0a", "10.3", False),  # but not sm_100a code
    ("10.0a", "10.0", True),
    ("12.0", "12.0", True),
    ("7.0", "7.5", True),
    ("7.5", "7.0", False),
]


@pytest.mark.parametrize(("cubin", "gpu", "runs"), COMPATIBILITY)
def test_binary_compatibility(cubin: str, gpu: str, runs: bool) -> None:
    assert cubin_runs_on(cubin, gpu) is runs


def _codes(changes: dict[str, Any]) -> set[str]:
    return {f.code for f in check(deep_merge(REFERENCE_SPEC, changes)).findings}


V100 = {
    "instance_type": "ml.p3.2xlarge",
    "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
    "hf_token_secret": "hf-token",
    "speculative": None,
    "engine": {"tensor_parallel_size": 1, "dtype": "float16"},
}


def test_volta_loses_its_kernels_at_the_first_cuda_13_release() -> None:
    # 0.19.1's wheel still carries sm_70 code; 0.20.0's (CUDA 13) starts at sm_75.
    assert "SI204" not in _codes({**V100, "container": {"version": "0.19.1"}})
    assert "SI204" in _codes({**V100, "container": {"version": "0.20.0"}})


def test_message_names_the_gpu_the_module_and_what_it_carries() -> None:
    findings = check(deep_merge(REFERENCE_SPEC, {**V100, "container": {"version": "0.20.0"}})).findings
    (finding,) = [f for f in findings if f.code == "SI204"]
    assert "compute capability 7.0" in finding.message
    assert "_C.abi3.so" in finding.message and "7.5" in finding.message
    assert "vLLM 0.19.1 or older" in finding.fix
    assert finding.field == "container.version"


def test_every_catalog_gpu_newer_than_volta_runs_every_release() -> None:
    # What the wheels say today: no release drops a GPU the catalog offers, apart from Volta at CUDA 13.
    kernels = load_vllm_kernels().releases
    for name, gpu in load_catalog().gpus.items():
        broken = [v for v, k in kernels.items() if k.missing_for(gpu.compute_capability)]
        if gpu.compute_capability == "7.0":
            assert broken and broken[0] == "0.20.0", name
        else:
            assert broken == [], (name, broken)


def test_the_image_cuda_agrees_with_the_runtime_its_vllm_links() -> None:
    # The catalog's CUDA per vLLM DLC release (from AWS's image lists) against the CUDA runtime the
    # release's compiled modules link (libcudart.so.12 / .13), read from the wheel.
    kernels = load_vllm_kernels().releases
    for release in load_catalog().vllm_dlc.releases:
        built = kernels[release.version].cuda_runtime_major()
        assert built == int(release.cuda.split(".")[0]), (release.version, release.cuda, built)


def test_every_vllm_dlc_release_has_kernel_data() -> None:
    kernels = load_vllm_kernels().releases
    missing = [r.version for r in load_catalog().vllm_dlc.releases if r.version not in kernels]
    assert missing == []
