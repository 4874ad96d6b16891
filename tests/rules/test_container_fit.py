"""container_runs_on_gpu, which the fixes of SI205/SI206 are held to, agrees with the rules it stands for
(SI200, SI201, SI204) on every catalog image and family."""

from __future__ import annotations

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import resolve
from speculative_infra.rules.gpu_support import (
    container_has_kernels_for_gpu,
    container_runs_on_gpu,
    cuda_supports_gpu,
    flashinfer_cuda_floor,
)
from speculative_infra.spec import DeploymentSpec
from tests.conftest import REFERENCE_SPEC

CATALOG = load_catalog()
BASE = resolve(DeploymentSpec.model_validate(REFERENCE_SPEC))


@pytest.mark.parametrize("framework", ["vllm", "lmi"])
def test_agrees_with_the_rules_on_every_image_and_family(framework: str) -> None:
    verdicts = set()
    for image in CATALOG.container_images(framework):
        for family, info in CATALOG.families.items():
            size = next(iter(info.sizes))
            instance = CATALOG.instance_type(f"ml.{family}.{size}")
            d = BASE.model_copy(update={"container": image, "instance": instance})
            rules_pass = not [
                *cuda_supports_gpu(d),
                *flashinfer_cuda_floor(d),
                *container_has_kernels_for_gpu(d),
            ]
            runs = container_runs_on_gpu(image, CATALOG.gpus[info.gpu].compute_capability)
            assert runs == rules_pass, (image.label, family)
            verdicts.add(runs)
    assert verdicts == {True, False}  # both sides are reached


def test_every_image_of_each_framework_in_order() -> None:
    assert [i.version for i in CATALOG.container_images("vllm")] == CATALOG.vllm_dlc_versions()
    assert [i.version for i in CATALOG.container_images("lmi")] == CATALOG.lmi_versions()


def test_missing_kernels_alone_refuse(monkeypatch: pytest.MonkeyPatch) -> None:
    # In the catalog every image without kernels for a GPU (Volta from vLLM 0.20.0) is also built with a
    # CUDA that dropped it, so the comparison above cannot see the kernel term: without the CUDA bounds,
    # the kernels alone must still refuse.
    from speculative_infra.rules import gpu_support

    no_bounds = CATALOG.model_copy(
        update={
            "cuda": CATALOG.cuda.model_copy(
                update={"min_cuda_by_compute_capability": {}, "max_cuda_by_compute_capability": {}}
            )
        }
    )
    monkeypatch.setattr(gpu_support, "load_catalog", lambda: no_bounds)
    image = CATALOG.container("vllm", "0.20.0")
    assert image is not None
    assert not container_runs_on_gpu(image, "7.0")
    assert container_runs_on_gpu(image, "7.5")
