"""A compressed-tensors checkpoint's sparsity_config and the marlin-24 layout, as each vLLM release reads them
(catalog: vllm.yaml `sparse_checkpoint_checks`, held to each release's own functions run on probes in
tests/golden/vllm_sparse_checkpoints.json and tests/golden/vllm_scheme_choice.json)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ContainerImage, Gpu, ModelFacts, version_tuple
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.gpu_support import container_runs_on_gpu

MARLIN_24_SCHEME = "w4a16_sparse24"


@dataclass(frozen=True)
class LoadProblem:
    """Why a release does not load the checkpoint, in vLLM's words where it has them. `gpu_bound`: the GPU is
    the cause (the release loads it on another GPU); otherwise the release refuses it on any GPU."""

    text: str
    gpu_bound: bool


def sparse_checkpoint_problem(release: str, sparsity: str, compute_capability: str) -> LoadProblem | None:
    """Why this release does not load a checkpoint of this sparsity (CheckpointSparsity) on a GPU of this
    compute capability; None where it loads."""
    checks = load_catalog().vllm.sparse_checkpoint_checks
    when = checks.refused_when(release, sparsity)
    if when == "config":
        return LoadProblem(
            f"vLLM {release} refuses it when it reads the checkpoint's config ('{checks.sparsity_config_refusal}')",
            gpu_bound=False,
        )
    if when == "layers":
        return LoadProblem(
            f"vLLM {release} refuses it when it builds the model's layers: its 2:4 scheme (CompressedTensors24) "
            f"raises '{checks.sparse_24_refusal}'",
            gpu_bound=False,
        )
    if not checks.runs_sparse_24_scheme(release, sparsity):
        return None
    cc, floor = version_tuple(compute_capability), checks.sparse_24_min_capability
    if cc < version_tuple(floor):
        return LoadProblem(
            f"vLLM {release} runs its layers on the 2:4 sparse kernel (CompressedTensors24), which needs "
            f"compute capability >= {floor}",
            gpu_bound=True,
        )
    built_for = checks.sparse_24_kernel_compute_capability
    if cc != version_tuple(built_for):
        return LoadProblem(
            f"vLLM {release} runs its layers on the 2:4 sparse kernel, which its build compiles for compute "
            f"capability {built_for} alone (sm_90a, 'only work on Hopper' in vLLM's CMakeLists.txt), so no "
            "kernel runs on another GPU",
            gpu_bound=True,
        )
    return None


def marlin_24_problem(release: str, compute_capability: str) -> LoadProblem | None:
    """Why this release does not load int4 weights in the marlin-24 layout on a GPU of this compute
    capability; None where it loads."""
    checks = load_catalog().vllm.sparse_checkpoint_checks
    refusal = checks.marlin_24_refusal_in(release)
    if refusal is not None:
        return LoadProblem(f"vLLM {release} has no scheme for that layout ('{refusal}')", gpu_bound=False)
    floor = checks.marlin_24_min_capability
    if version_tuple(compute_capability) < version_tuple(floor):
        return LoadProblem(
            f"vLLM {release} builds it as W4A16Sparse24, which needs compute capability >= {floor}",
            gpu_bound=True,
        )
    return None


def checkpoint_load_problems(model: ModelFacts, release: str, compute_capability: str) -> list[LoadProblem]:
    """Every reason, of the two rules here, why this release does not load the model's checkpoint on this GPU:
    a fix must clear them all (a marlin-24 checkpoint can carry a sparsity_config too)."""
    if model.quantization != "compressed-tensors":
        return []
    found = [
        sparse_checkpoint_problem(release, model.sparsity, compute_capability) if model.sparsity else None,
        marlin_24_problem(release, compute_capability)
        if model.quantization_scheme == MARLIN_24_SCHEME
        else None,
    ]
    return [p for p in found if p is not None]


def _name(image: ContainerImage) -> str:
    if image.framework == "vllm":
        return f"a container with vLLM {image.version}"
    return f"DJL LMI v{image.version} (vLLM {image.vllm_version})"


def _loading_fix(d: ResolvedDeployment, loads: Callable[[str, str], bool], otherwise: str) -> str:
    """The fix: the newest container of the deployment's framework that loads the checkpoint on its GPU (and
    runs there: SI200, SI201, SI204), else the newest that does on other families, named; then `otherwise`."""
    assert d.container is not None and d.instance is not None
    cat = load_catalog()
    images = cat.container_images(d.container.framework)
    cc = d.instance.gpu.compute_capability

    def fits(image: ContainerImage, on: str) -> bool:
        return container_runs_on_gpu(image, on) and loads(image.vllm_version, on)

    def on_its_gpu(image: ContainerImage) -> Callable[[Gpu], bool]:
        return lambda gpu: fits(image, gpu.compute_capability)

    here = [image for image in images if fits(image, cc)]
    if here:
        return f"use {_name(here[-1])}, or {otherwise}"
    for image in reversed(images):
        families = cat.families_where(on_its_gpu(image))
        if families:
            which = "a family" if len(families) > 1 else "the family"
            return f"use {_name(image)} on {which} whose GPU loads it ({', '.join(families)}), or {otherwise}"
    return otherwise


def _model_loads(model: ModelFacts) -> Callable[[str, str], bool]:
    return lambda release, cc: not checkpoint_load_problems(model, release, cc)


@rule(
    code="SI205",
    name="sparse-checkpoint-supported",
    severity=Severity.ERROR,
    title="The container's vLLM loads the checkpoint's sparsity_config",
    rationale="A compressed-tensors checkpoint's sparsity_config decides, when the engine reads the model, "
    "whether its layers run on vLLM's 2:4 sparse kernel: only up to vLLM 0.18.1 (from 0.19.0 the layers' "
    "scheme raises 'Sparse24 models are no longer supported by vLLM'), from compute capability 9.0 (the "
    "scheme's floor) and on Hopper alone (vLLM compiles the kernel for sm_90a only and sends every later GPU "
    "to it). From 0.22.0 vLLM refuses any sparsity_config that names layers when it reads the checkpoint's "
    "config, also one whose weights are stored dense. Read from each release's wheel and build files.",
)
def sparse_checkpoint_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    model, release = d.model, d.vllm_release.vllm_version if d.vllm_release is not None else None
    if model is None or model.sparsity is None or model.quantization != "compressed-tensors":
        return
    if release is None or d.instance is None or d.container is None:
        return
    cc = d.instance.gpu.compute_capability
    problem = sparse_checkpoint_problem(release, model.sparsity, cc)
    if problem is None:
        return
    what = "2:4 sparse weights" if model.sparsity == "2:4" else "a sparsity_config naming target layers"
    gpu = f", and the {d.instance.gpu_name} of {d.instance.name} has {cc}" if problem.gpu_bound else ""
    yield Violation(
        message=f"{d.model_id} is a compressed-tensors checkpoint with {what}; {problem.text}{gpu}",
        fix=_loading_fix(
            d,
            _model_loads(model),
            "serve a checkpoint without quantization_config.sparsity_config (where its format is dense, the "
            "weights are stored whole and a copy without that key loads as a plain checkpoint)",
        ),
        field="model.id",
    )


@rule(
    code="SI206",
    name="marlin-24-layout-supported",
    severity=Severity.ERROR,
    title="The container's vLLM loads int4 weights in the marlin-24 layout",
    rationale="A compressed-tensors checkpoint with format marlin-24 (2:4 sparse int4 weights) runs on vLLM's "
    "W4A16Sparse24 scheme, compute capability 8.0 and up, up to vLLM 0.15.1; from 0.16.0 no scheme builds that "
    "layout and the engine stops while loading the model. Read from each release's wheel.",
)
def marlin_24_layout_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    model, release = d.model, d.vllm_release.vllm_version if d.vllm_release is not None else None
    if (
        model is None
        or model.quantization != "compressed-tensors"
        or model.quantization_scheme != MARLIN_24_SCHEME
    ):
        return
    if release is None or d.instance is None or d.container is None:
        return
    cc = d.instance.gpu.compute_capability
    problem = marlin_24_problem(release, cc)
    if problem is None:
        return
    gpu = f", and the {d.instance.gpu_name} of {d.instance.name} has {cc}" if problem.gpu_bound else ""
    yield Violation(
        message=f"{d.model_id} is a compressed-tensors checkpoint with int4 weights in the marlin-24 layout; "
        f"{problem.text}{gpu}",
        fix=_loading_fix(
            d, _model_loads(model), "serve the checkpoint's dense int4 (pack-quantized) or 16-bit version"
        ),
        field="model.quantization_scheme" if d.spec.model.quantization_scheme else "model.id",
    )
