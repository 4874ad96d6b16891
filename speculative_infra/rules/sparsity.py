"""A compressed-tensors checkpoint's sparsity_config, as each vLLM release reads it (catalog: vllm.yaml
`sparse_checkpoint_checks`, held to each release's own functions run on probes in
tests/golden/vllm_sparse_checkpoints.json)."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def sparse_checkpoint_problem(release: str, sparsity: str, compute_capability: str) -> str | None:
    """Why this release does not load a checkpoint of this sparsity (CheckpointSparsity) on a GPU of this
    compute capability, in vLLM's words where it has them; None where it loads."""
    checks = load_catalog().vllm.sparse_checkpoint_checks
    refusal = checks.refusal(release, sparsity)
    if refusal is not None:
        return f"vLLM {release} refuses it when it reads the checkpoint's config ('{refusal}')"
    floor = checks.sparse_24_min_capability
    if checks.runs_sparse_24_scheme(release, sparsity) and version_tuple(compute_capability) < version_tuple(
        floor
    ):
        return (
            f"vLLM {release} runs its layers on the 2:4 sparse kernel (CompressedTensors24), which needs "
            f"compute capability >= {floor}"
        )
    return None


@rule(
    code="SI205",
    name="sparse-checkpoint-supported",
    severity=Severity.ERROR,
    title="The container's vLLM loads the checkpoint's sparsity_config",
    rationale="A compressed-tensors checkpoint's sparsity_config decides, when the engine reads the model, "
    "whether its layers run on vLLM's 2:4 sparse kernel: compute capability 9.0 and up (the kernel is built "
    "for Hopper; the fix suggests only Hopper families), and only up to "
    "vLLM 0.18.1 (later releases raise 'Sparse24 models are no longer supported by vLLM'). From 0.22.0 vLLM "
    "refuses any sparsity_config that names layers, also one whose weights are stored dense. Read from each "
    "release's wheel.",
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
    cat = load_catalog()
    versions = cat.container_vllm_versions(d.container.framework)
    here = [v for v in versions if sparse_checkpoint_problem(v, model.sparsity, cc) is None]
    floor = cat.vllm.sparse_checkpoint_checks.sparse_24_min_capability
    elsewhere = [v for v in versions if sparse_checkpoint_problem(v, model.sparsity, floor) is None]
    # Only Hopper: the kernel vLLM dispatches to from 9.0 up is built for sm_90a alone, and no public run
    # shows it on Blackwell, so a fix must not send the user there.
    families = cat.families_where(
        lambda g: version_tuple(floor) <= version_tuple(g.compute_capability) < (10, 0)
    )
    if here:
        fix = f"use a container with vLLM {here[-1]}, or "
    elif elsewhere and families:
        fix = f"use a container with vLLM {elsewhere[-1]} on a Hopper family ({', '.join(families)}), or "
    else:
        fix = ""
    what = "2:4 sparse weights" if model.sparsity == "2:4" else "a sparsity_config naming target layers"
    yield Violation(
        message=f"{d.model_id} is a compressed-tensors checkpoint with {what}; {problem}"
        + (f", and the {d.instance.gpu_name} of {d.instance.name} has {cc}" if "kernel" in problem else ""),
        fix=fix + "serve a checkpoint without quantization_config.sparsity_config (where its format is "
        "dense, the weights are stored whole and a copy without that key loads as a plain checkpoint)",
        field="model.id",
    )


def marlin_24_problem(release: str, compute_capability: str) -> str | None:
    """Why this release does not load int4 weights in the marlin-24 layout on a GPU of this compute
    capability; None where it loads."""
    checks = load_catalog().vllm.sparse_checkpoint_checks
    refusal = checks.marlin_24_refusal_in(release)
    if refusal is not None:
        return f"vLLM {release} has no scheme for that layout ('{refusal}')"
    floor = checks.marlin_24_min_capability
    if version_tuple(compute_capability) < version_tuple(floor):
        return f"vLLM {release} builds it as W4A16Sparse24, which needs compute capability >= {floor}"
    return None


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
        or model.quantization_scheme != "w4a16_sparse24"
    ):
        return
    if release is None or d.instance is None or d.container is None:
        return
    cc = d.instance.gpu.compute_capability
    problem = marlin_24_problem(release, cc)
    if problem is None:
        return
    cat = load_catalog()
    versions = cat.container_vllm_versions(d.container.framework)
    here = [v for v in versions if marlin_24_problem(v, cc) is None]
    floor = cat.vllm.sparse_checkpoint_checks.marlin_24_min_capability
    elsewhere = [v for v in versions if marlin_24_problem(v, floor) is None]
    families = cat.families_where(lambda g: version_tuple(g.compute_capability) >= version_tuple(floor))
    if here:
        fix = f"use a container with vLLM {here[-1]}, or "
    elif elsewhere:
        fix = (
            f"use a container with vLLM {elsewhere[-1]} on a family with compute capability >= {floor} "
            f"({', '.join(families)}), or "
        )
    else:
        fix = ""
    yield Violation(
        message=f"{d.model_id} is a compressed-tensors checkpoint with int4 weights in the marlin-24 layout; "
        f"{problem}"
        + (f", and the {d.instance.gpu_name} of {d.instance.name} has {cc}" if "needs" in problem else ""),
        fix=fix + "serve the checkpoint's dense int4 (pack-quantized) or 16-bit version",
        field="model.quantization_scheme" if d.spec.model.quantization_scheme else "model.id",
    )
