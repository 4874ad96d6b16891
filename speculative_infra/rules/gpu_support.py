"""Does the container's CUDA build (and vLLM itself) support the instance's GPU generation?"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ContainerImage, version_tuple
from speculative_infra.catalog.vllm_kernels import ReleaseKernels, load_vllm_kernels
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.quantization_methods import SCHEME_FLOOR_NAME
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI200",
    name="cuda-supports-gpu",
    severity=Severity.ERROR,
    title="Container CUDA supports the GPU's compute capability",
    rationale="A CUDA toolkit older than the GPU generation (or one that dropped it) has no kernels for it.",
)
def cuda_supports_gpu(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.instance is None:
        return
    cat = load_catalog()
    cc = d.instance.gpu.compute_capability
    cuda = d.container.cuda
    minimum = cat.cuda.min_cuda_by_compute_capability.get(cc)
    maximum = cat.cuda.max_cuda_by_compute_capability.get(cc)
    where = f"{d.instance.gpu_name} (compute capability {cc}) on {d.instance.name}"
    if minimum is not None and version_tuple(cuda) < version_tuple(minimum):
        yield Violation(
            message=f"{d.container.label} cannot run on {where}: CUDA {cuda} is older than {minimum}, the first "
            "CUDA that supports it",
            fix=f"use a container built with CUDA >= {minimum}",
            field="container.version",
        )
    if maximum is not None and version_tuple(cuda) > version_tuple(maximum):
        yield Violation(
            message=f"{d.container.label} cannot run on {where}: CUDA {cuda} dropped this GPU generation "
            f"(last supported: CUDA {maximum})",
            fix=f"use a container built with CUDA <= {maximum}, or a newer instance family",
            field="container.version",
        )


@rule(
    code="SI201",
    name="flashinfer-cuda-floor",
    severity=Severity.ERROR,
    title="FlashInfer's CUDA floor for the GPU generation",
    rationale="vLLM's default sampling kernels (FlashInfer) refuse compute capability 12.x below CUDA 12.9.",
)
def flashinfer_cuda_floor(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.instance is None:
        return
    cat = load_catalog()
    major = d.instance.gpu.compute_capability.split(".")[0]
    floor = cat.cuda.flashinfer_min_cuda_by_major_compute_capability.get(major)
    if floor is not None and version_tuple(d.container.cuda) < version_tuple(floor):
        yield Violation(
            message=f"{d.container.label} on {d.instance.name} ({d.instance.gpu_name}, compute capability "
            f"{d.instance.gpu.compute_capability}): FlashInfer needs CUDA >= {floor} on compute capability "
            f"{major}.x, the image has CUDA {d.container.cuda}",
            fix=f"use a container built with CUDA >= {floor} ({cat.first_releases_with_cuda(floor)})",
            field="container.version",
        )


@rule(
    code="SI202",
    name="vllm-min-compute-capability",
    severity=Severity.ERROR,
    title="vLLM supports the GPU generation",
    rationale="vLLM's CUDA builds need compute capability 7.0 or newer.",
)
def vllm_min_compute_capability(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is None:
        return
    floor = load_catalog().vllm.min_compute_capability.value
    cc = d.instance.gpu.compute_capability
    if version_tuple(cc) < version_tuple(floor):
        yield Violation(
            message=f"{d.instance.gpu_name} on {d.instance.name} has compute capability {cc}; vLLM needs >= {floor}",
            fix=f"choose a newer GPU family ({_families_with_compute_capability(floor)})",
            field="instance_type",
        )


@rule(
    code="SI203",
    name="quantization-supported-on-gpu",
    severity=Severity.ERROR,
    title="The GPU runs the checkpoint's quantization",
    rationale="vLLM refuses to start when the GPU's compute capability is below what the checkpoint's "
    "quantization method asks for (its get_min_capability(), read per release from the wheels: fp8 asked "
    "for 8.0 up to 0.13.0 and 7.5 from 0.14.0; MXFP4 8.0, so gpt-oss does not start on T4 or V100), or "
    "when the activation dtype is one the method does not run. A compressed-tensors checkpoint is held to "
    "the scheme each release builds for it (W8A8 FP8 runs weight-only below 8.9; NVFP4 W4A4 as W4A16 "
    "below 10.0 up to 0.15.1).",
)
def quantization_supported_on_gpu(d: ResolvedDeployment) -> Iterator[Violation]:
    method = d.model.quantization if d.model is not None else None
    if d.model is None or method is None or d.instance is None:
        return
    support = load_catalog().vllm.quantization.get(method)
    release = d.vllm_release.vllm_version if d.vllm_release is not None else None
    sparse = load_catalog().vllm.sparse_checkpoint_checks
    if release is not None and sparse.runs_sparse_24_scheme(release, d.model.sparsity):
        return  # its layers run the 2:4 sparse kernel's scheme, whose floor SI205 judges
    cc = d.instance.gpu.compute_capability
    floor, runs_as = _quantization_floor(
        method, d.model.quantization_scheme if d.model else None, release, cc
    )
    if floor is not None and version_tuple(cc) < version_tuple(floor):
        scheme = d.model.quantization_scheme if d.model else None
        framework = d.container.framework if d.container is not None else "vllm"
        lower = [
            v
            for v in load_catalog().container_vllm_versions(framework)
            if release is not None
            and version_tuple(v) > version_tuple(release)
            and (later := _quantization_floor(method, scheme, v, cc)[0]) is not None
            and version_tuple(later) <= version_tuple(cc)
        ]
        where = f"vLLM {release}" if release is not None else "vLLM"
        yield Violation(
            message=f"{d.model_id} is quantized with {_method_label(d)}, which {where} runs on compute capability >= "
            f"{floor}{_runs_as_note(scheme, runs_as)}; the {d.instance.gpu_name} of {d.instance.name} has {cc}",
            fix=(
                f"use a container with vLLM {lower[0]} or newer (it asks {method} for less), or "
                if lower
                else ""
            )
            + f"choose a family with compute capability >= {floor} ({_families_with_compute_capability(floor)})",
            field="instance_type",
        )
        return
    dtype = d.engine.get("dtype")
    if support is not None and dtype is not None and dtype not in support.activation_dtypes:
        yield Violation(
            message=f"{d.model_id} is quantized with {method}, which vLLM runs with "
            f"{' or '.join(support.activation_dtypes)} activations only; engine.dtype is {dtype}",
            fix=f"set engine.dtype: {support.activation_dtypes[0]} (or leave it unset)",
            field="engine.dtype",
        )


def _runs_as_note(scheme: str | None, runs_as: str | None) -> str:
    """How the release builds the checkpoint's layers where not by its own scheme's class."""
    if runs_as is None or scheme is None:
        return ""
    fallback = load_catalog().vllm.compressed_tensors_fallbacks.fallbacks.get(
        SCHEME_FLOOR_NAME.get(scheme, scheme)
    )
    if fallback is not None and fallback.always:
        return f" (its layers are built by the {runs_as} scheme's class, on every GPU)"
    return f" (as {runs_as}, the weight-only scheme it falls back to)"


def _method_label(d: ResolvedDeployment) -> str:
    scheme = d.model.quantization_scheme if d.model is not None else None
    method = d.model.quantization if d.model is not None else None
    return f"{method} ({scheme})" if method == "compressed-tensors" and scheme else str(method)


def _quantization_floor(
    method: str, scheme: str | None, release: str | None, cc: str
) -> tuple[str | None, str | None]:
    """The lowest compute capability vLLM runs this checkpoint on in this release (read from its wheel; else the
    catalog's figure), and the scheme it swaps in below the checkpoint's own where there is one."""
    per_release = load_vllm_model_interfaces().releases.get(release) if release is not None else None
    if method == "compressed-tensors" and scheme and release is not None and per_release is not None:
        floors = per_release.compressed_tensors_scheme_min_capability
        scheme = SCHEME_FLOOR_NAME.get(scheme, scheme)
        fallback = load_catalog().vllm.compressed_tensors_fallbacks.fallbacks.get(scheme)
        if (
            fallback is not None
            and fallback.runs_as in floors
            and fallback.swaps(release, cc, floors.get(scheme))
        ):
            return floors[fallback.runs_as], fallback.runs_as
        if scheme in floors:
            return floors[scheme], None
    if per_release is not None and method in per_release.quantization_min_capability:
        return per_release.quantization_min_capability[method], None
    support = load_catalog().vllm.quantization.get(method)
    return (support.min_compute_capability if support is not None else None), None


@rule(
    code="SI204",
    name="container-has-kernels-for-gpu",
    severity=Severity.ERROR,
    title="The container's vLLM carries kernels for the GPU",
    rationale="vLLM's compiled operators hold machine code for a fixed list of GPU architectures; on any other "
    "GPU the engine stops at its first kernel launch ('no kernel image is available for execution on the "
    "device'). The lists are read from each release's wheel.",
)
def container_has_kernels_for_gpu(d: ResolvedDeployment) -> Iterator[Violation]:
    # The vLLM DLC image is built from vLLM's own image, compiled from the same Dockerfile and arguments as
    # the wheel; LMI images carry a vLLM build of their own, whose kernels no public source lists.
    if d.container is None or d.instance is None or d.container.framework != "vllm":
        return
    kernels = load_vllm_kernels().releases.get(d.container.vllm_version)
    if kernels is None:
        return
    cc = d.instance.gpu.compute_capability
    missing = kernels.missing_for(cc)
    if not missing:
        return
    releases = load_vllm_kernels().releases
    runs = [
        v for v in load_catalog().vllm_dlc_versions() if v in releases and not releases[v].missing_for(cc)
    ]
    later = [v for v in runs if version_tuple(v) > version_tuple(d.container.vllm_version)]
    earlier = [v for v in runs if version_tuple(v) < version_tuple(d.container.vllm_version)]
    choice = f"vLLM {later[0]} or newer" if later else f"vLLM {earlier[-1]} or older" if earlier else None
    yield Violation(
        message=f"{d.container.label} has no kernels for the {d.instance.gpu_name} of {d.instance.name} "
        f"(compute capability {cc}): vLLM {d.container.vllm_version}'s {', '.join(m.rsplit('/', 1)[-1] for m in missing)} "
        f"carries machine code for {', '.join(kernels.architectures())} only (read from {kernels.wheel})",
        fix=(f"use a container with {choice}, or " if choice else "")
        + f"an instance family whose GPU is one of those architectures ({_families_with_kernels(kernels)})",
        field="container.version",
    )


def _families_with_kernels(kernels: ReleaseKernels) -> str:
    return ", ".join(load_catalog().families_where(lambda g: not kernels.missing_for(g.compute_capability)))


def _families_with_compute_capability(floor: str) -> str:
    """The catalog's instance families whose GPU has at least this compute capability, for fix messages."""
    return ", ".join(
        load_catalog().families_where(lambda g: version_tuple(g.compute_capability) >= version_tuple(floor))
    )


def container_runs_on_gpu(container: ContainerImage, compute_capability: str) -> bool:
    """Whether this image passes SI200, SI201 and SI204 on a GPU of this compute capability: what a fix
    that names another container or family is held to (tests/rules/test_container_fit.py keeps the two
    in step)."""
    cuda = load_catalog().cuda
    built = version_tuple(container.cuda)
    minimum = cuda.min_cuda_by_compute_capability.get(compute_capability)
    maximum = cuda.max_cuda_by_compute_capability.get(compute_capability)
    flashinfer = cuda.flashinfer_min_cuda_by_major_compute_capability.get(compute_capability.split(".")[0])
    if minimum is not None and built < version_tuple(minimum):
        return False
    if maximum is not None and built > version_tuple(maximum):
        return False
    if flashinfer is not None and built < version_tuple(flashinfer):
        return False
    if container.framework != "vllm":
        return True  # no public list of an LMI build's kernels (SI204)
    kernels = load_vllm_kernels().releases.get(container.vllm_version)
    return kernels is None or not kernels.missing_for(compute_capability)
