"""Does the container's CUDA runtime start on the host's NVIDIA driver?"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import Ami
from speculative_infra.host_fit import driver_fit, drives_gpu, host_fix
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def _host_fix(d: ResolvedDeployment) -> str:
    return host_fix(load_catalog(), d.instance, d.container, batch=d.spec.serving == "batch")


def _host_images(d: ResolvedDeployment) -> dict[str, Ami]:
    """The host images this kind of deployment can name: an endpoint's, or a batch transform job's."""
    cat = load_catalog()
    return cat.batch_amis if d.spec.serving == "batch" else cat.amis


def _named_host_image(d: ResolvedDeployment) -> tuple[str, Ami] | None:
    """The host image the spec names and its catalog entry, on a known instance type; None otherwise."""
    if d.host is None or d.host.inference_ami_version is None or d.instance is None:
        return None
    ami = _host_images(d).get(d.host.inference_ami_version)
    return None if ami is None else (d.host.inference_ami_version, ami)


@rule(
    code="SI210",
    name="host-driver-fits-cuda",
    severity=Severity.ERROR,
    title="Host NVIDIA driver can run the container's CUDA",
    rationale="A driver too old for the image fails as CannotStartContainerError with no logs, 10-20 minutes in.",
)
def host_driver_fits_cuda(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.host is None or d.host.driver is None:
        return
    cat = load_catalog()
    fit = driver_fit(cat, d.container, d.instance.gpu if d.instance else None, d.host.driver)
    if fit.ok:
        return
    host = d.host.inference_ami_version or "the default host image"
    if not d.container.forward_compat.enabled:
        compat = "and the image does not use CUDA forward-compatibility libraries"
    elif d.instance is not None and not d.instance.gpu.cuda_forward_compatible:
        compat = f"and CUDA forward compatibility does not work on the {d.instance.gpu_name}"
    else:
        compat = f"and CUDA {d.container.cuda}'s forward-compatibility libraries need driver >= {fit.needed_forward_compat}"
    yield Violation(
        message=f"{d.container.label} needs NVIDIA driver >= {fit.needed_native} (>= {fit.needed_minor_compat} "
        f"through CUDA minor-version compatibility); {host} has driver {d.host.driver} "
        f"(CUDA {d.host.cuda}), {compat}",
        fix=_host_fix(d),
        field="inference_ami_version",
    )


@rule(
    code="SI213",
    name="host-driver-drives-gpu",
    severity=Severity.ERROR,
    title="Host NVIDIA driver can drive the GPU",
    rationale="A driver branch older than the GPU's generation does not see the GPU at all, whatever the "
    "container; no CUDA compatibility package changes that. The endpoint fails to start with no logs.",
)
def host_driver_drives_gpu(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is None or d.host is None or d.host.driver is None:
        return
    gpu = d.instance.gpu
    if drives_gpu(gpu, d.host.driver, d.host.driver_build):
        return
    host = d.host.inference_ami_version or "SageMaker's default host image"
    floor = gpu.driver_floor
    needed = f"{floor.build}" if floor.build and d.host.driver == floor.branch else f"R{floor.branch}"
    yield Violation(
        message=f"{host} has NVIDIA driver {d.host.driver_build or d.host.driver}; the {d.instance.gpu_name} "
        f"({gpu.architecture}) of {d.instance.name} needs driver {needed} or later ({floor.source})",
        fix=_host_fix(d),
        field="inference_ami_version",
    )


@rule(
    code="SI211",
    name="host-driver-documented",
    severity=Severity.WARNING,
    title="Host driver is known",
    rationale="Where AWS does not document the default host driver, a driver mismatch cannot be ruled out.",
)
def host_driver_documented(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.instance is None or d.host is None or d.host.driver is not None:
        return
    if d.host.inference_ami_version is not None:
        return  # a host image the catalog does not know: SI214
    obs = load_catalog().default_host_evidence(d.container, d.instance.family)
    if obs is not None:
        return  # seen on this family's default host: SI122 reports a known failure
    yield Violation(
        message=f"the default host driver of {d.instance.family} is not documented and {d.container.label} "
        f"was never observed there",
        fix=_host_fix(d),
        field="inference_ami_version",
    )


@rule(
    code="SI212",
    name="host-driver-compat-path",
    severity=Severity.INFO,
    title="Container runs through a CUDA compatibility path",
    rationale="Minor-version or forward compatibility works but limits some features (e.g. PTX JIT).",
)
def host_driver_compat_path(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.host is None or d.host.driver is None:
        return
    if d.instance is not None and not drives_gpu(d.instance.gpu, d.host.driver, d.host.driver_build):
        return  # SI213: the driver does not drive the GPU at all
    fit = driver_fit(load_catalog(), d.container, d.instance.gpu if d.instance else None, d.host.driver)
    if fit.kind in ("minor_version_compat", "forward_compat"):
        how = (
            "CUDA minor-version compatibility"
            if fit.kind == "minor_version_compat"
            else ("the image's CUDA forward-compatibility libraries")
        )
        yield Violation(
            message=f"{d.container.label} on driver {d.host.driver} runs through {how} "
            f"(native support needs driver >= {fit.needed_native})",
            fix="nothing to do; a host image with a newer driver removes the dependency",
            field="inference_ami_version",
        )


@rule(
    code="SI214",
    name="host-image-known",
    severity=Severity.ERROR,
    title="Host image is a GPU host image SageMaker offers",
    rationale="InferenceAmiVersion is an enum in the SageMaker API; any other value fails the deployment, and "
    "the host driver the other rules check comes from the image.",
)
def host_image_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.host is None or d.host.inference_ami_version is None or d.host.driver is not None:
        return
    known = ", ".join(sorted(_host_images(d)))
    yield Violation(
        message=f"inference_ami_version {d.host.inference_ami_version!r} is not a GPU host image SageMaker offers; "
        f"allowed: auto, default, {known}",
        fix=_host_fix(d),
        field="inference_ami_version",
    )


@rule(
    code="SI215",
    name="host-image-offered-on-instance",
    severity=Severity.ERROR,
    title="SageMaker offers the host image on the instance type",
    rationale="Some host images exist only for newer GPU families; SageMaker refuses the pairing ('Invalid "
    "combination') when the endpoint is created. Only refusals on record count here.",
)
def host_image_offered_on_instance(d: ResolvedDeployment) -> Iterator[Violation]:
    named = _named_host_image(d)
    if named is None or d.instance is None:
        return
    name, ami = named
    if ami.refused_on is None or ami.offered_on(d.instance.name):
        return
    yield Violation(
        message=f"SageMaker refused host image {name} on {d.instance.name} "
        f"({d.instance.gpu_name}) when the endpoint was created (source: {ami.refused_on.source})",
        fix=_host_fix(d),
        field="inference_ami_version",
    )


@rule(
    code="SI216",
    name="host-image-doubted-on-family",
    severity=Severity.WARNING,
    title="The host image's support for the instance family is in doubt",
    rationale="AWS's container team states some host images need newer GPU families, while other public reports "
    "ran them there; until a refusal is on record the check warns and names both sides.",
)
def host_image_doubted_on_family(d: ResolvedDeployment) -> Iterator[Violation]:
    named = _named_host_image(d)
    if named is None or d.instance is None:
        return
    name, ami = named
    if ami.doubted_on is None or not ami.doubted_for(d.instance.family):
        return
    if not ami.offered_on(d.instance.name):
        return  # SI215 reports the refusal itself
    yield Violation(
        message=f"host image {name} on {d.instance.family} instances is in doubt: "
        f"{ami.doubted_on.source}; against that, {ami.doubted_on.against}. If SageMaker refuses it, "
        "endpoint creation fails with 'Invalid combination'",
        fix=_host_fix(d),
        field="inference_ami_version",
    )
