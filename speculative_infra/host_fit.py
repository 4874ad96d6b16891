"""Which host image can run a container on a GPU? One answer for the resolver, the rules and their fixes.

Two things must hold on a host. Its NVIDIA kernel driver must know the GPU: a driver branch older
than the GPU's generation does not drive it at all, and no CUDA compatibility package changes that.
And the container's CUDA runtime must start on that driver: natively (the driver meets the CUDA
version's floor), through CUDA minor-version compatibility (the driver meets the floor of the CUDA
major version, e.g. 12.9 on 535/550), or through forward-compatibility libraries that the image
enables (data-center GPUs only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from speculative_infra.catalog import Catalog
from speculative_infra.catalog.models import ContainerImage, Gpu, InstanceType, version_tuple

FitKind = Literal["native", "minor_version_compat", "forward_compat", "no"]


@dataclass(frozen=True)
class DriverFit:
    kind: FitKind
    needed_native: int | None
    needed_minor_compat: int | None
    # with the image's forward-compatibility libraries, on data-center GPUs only
    needed_forward_compat: int | None

    @property
    def ok(self) -> bool:
        return self.kind != "no"


def driver_fit(cat: Catalog, container: ContainerImage, gpu: Gpu | None, driver: int) -> DriverFit:
    """Does the container's CUDA runtime start on this driver (given the driver drives the GPU)?"""
    native = cat.cuda.min_driver(container.cuda)
    minor = cat.cuda.minor_compat_driver(container.cuda)
    forward = cat.cuda.forward_compat_driver(container.cuda)
    kind: FitKind = "no"
    if native is not None and driver >= native:
        kind = "native"
    elif minor is not None and driver >= minor:
        kind = "minor_version_compat"
    elif (
        container.forward_compat.enabled
        and (gpu is None or gpu.cuda_forward_compatible)
        and forward is not None
        and driver >= forward
    ):
        kind = "forward_compat"
    return DriverFit(
        kind=kind, needed_native=native, needed_minor_compat=minor, needed_forward_compat=forward
    )


def drives_gpu(gpu: Gpu, driver: int, build: str | None = None) -> bool:
    """Can a driver of this branch (and build, where both it and the GPU's first build are known) drive
    the GPU at all? An unknown build of the floor's own branch is given the benefit of the doubt."""
    floor = gpu.driver_floor
    if driver < floor.branch or (floor.last_branch is not None and driver > floor.last_branch):
        return False
    if driver == floor.branch and floor.build is not None and build is not None:
        return version_tuple(build) >= version_tuple(floor.build)
    return True


def driver_fits(
    cat: Catalog, container: ContainerImage, gpu: Gpu, driver: int, build: str | None = None
) -> bool:
    """Both conditions at once: the driver drives the GPU and runs the container's CUDA."""
    return drives_gpu(gpu, driver, build) and driver_fit(cat, container, gpu, driver).ok


def fitting_host_image(cat: Catalog, container: ContainerImage, instance: InstanceType) -> str | None:
    """The host image AWS recommends for the container's CUDA if it fits, else the newest-driver one that does
    (the fewest compatibility layers between the image's CUDA and the driver); only images SageMaker offers on
    the instance type; one whose support for the family is in doubt only when nothing else fits."""
    gpu = instance.gpu

    def fits(name: str) -> bool:
        ami = cat.amis[name]
        return ami.offered_on(instance.name) and driver_fits(
            cat, container, gpu, ami.driver, ami.driver_build
        )

    def undoubted(name: str) -> bool:
        return not cat.amis[name].doubted_for(instance.family)

    recommended = cat.recommended_amis.amis.get(container.cuda)
    if recommended is not None and fits(recommended) and undoubted(recommended):
        return recommended
    newest_first = sorted(cat.amis.items(), key=lambda item: (-item[1].driver, item[0]))
    fitting = [name for name, _ in newest_first if fits(name)]
    trusted = [name for name in fitting if undoubted(name)]
    choices = trusted or fitting
    return choices[0] if choices else None


@dataclass(frozen=True)
class HostChoice:
    """What `inference_ami_version: auto` settles on, and why (shown by `check` and in annotations)."""

    inference_ami_version: str | None  # None: SageMaker's default host image
    reason: str
    fits: bool = True  # False: nothing in the catalog fits, the default host stands and the rules say why


def choose_host(cat: Catalog, instance: InstanceType | None, container: ContainerImage | None) -> HostChoice:
    """SageMaker's default host where it is known to work, else a host image that passes every host rule."""
    if instance is None or container is None:
        return HostChoice(
            None, "SageMaker's default host: there is no known instance and container to fit", fits=False
        )
    gpu = instance.gpu
    default = instance.default_host
    seen = cat.default_host_evidence(container, instance.family)
    if seen is None or seen.outcome == "works":
        if default is not None and driver_fits(cat, container, gpu, default.driver):
            return HostChoice(
                None,
                f"SageMaker's default host for {instance.family} (driver {default.driver}) drives the "
                f"{instance.gpu_name} and runs {container.label}",
            )
        if default is None and seen is not None:
            observed = (
                container.label
                if seen.version == container.version
                else f"{seen.framework} {seen.version}, built on the same CUDA {container.cuda},"
            )
            return HostChoice(
                None,
                f"SageMaker's default host for {instance.family}: its driver is not documented, but "
                f"{observed} was observed to run there ({seen.source})",
            )
    ami = fitting_host_image(cat, container, instance)
    if ami is not None:
        return HostChoice(
            ami,
            f"driver {cat.amis[ami].driver} drives the {instance.gpu_name} (driver R{gpu.driver_floor.branch} "
            f"or later) and runs {container.label}",
        )
    return HostChoice(
        None, "SageMaker's default host: no host image in the catalog fits (see the findings)", fits=False
    )


def choose_batch_host(
    cat: Catalog, instance: InstanceType | None, container: ContainerImage | None
) -> HostChoice:
    """A batch transform job's host image (TransformAmiVersion): the newest-driver one that drives the GPU
    and runs the container; SageMaker's default batch host documents no driver, so it is never assumed."""
    newest_first = sorted(cat.batch_amis.items(), key=lambda item: (-item[1].driver, item[0]))
    if instance is None or container is None:
        return HostChoice(
            newest_first[0][0],
            "the newest batch host image: no known instance and container to fit",
            fits=False,
        )
    for name, ami in newest_first:
        if driver_fits(cat, container, instance.gpu, ami.driver, ami.driver_build):
            return HostChoice(
                name,
                f"batch transform host with driver {ami.driver}: it drives the {instance.gpu_name} and runs "
                f"{container.label}",
            )
    return HostChoice(
        newest_first[0][0],
        "the newest batch transform host image: none in the catalog fits (see the findings)",
        fits=False,
    )


def host_fix(
    cat: Catalog, instance: InstanceType | None, container: ContainerImage | None, batch: bool = False
) -> str:
    """The fix a host finding suggests: what `auto` picks, so it passes every host rule by construction."""
    if batch:
        choice = choose_batch_host(cat, instance, container)
        if not choice.fits:
            return (
                "no batch transform host image (drivers "
                + ", ".join(str(a.driver) for a in cat.batch_amis.values())
                + ") runs this container on this GPU: choose an earlier container release, or serve it in real "
                "time or asynchronously"
            )
        return f"set inference_ami_version: {choice.inference_ami_version}, or auto, which picks it"
    choice = choose_host(cat, instance, container)
    if not choice.fits:
        seen = cat.default_host_evidence(container, instance.family) if instance and container else None
        if (
            instance is not None
            and instance.default_host is None
            and (seen is None or seen.outcome != "fails")
        ):
            # Nothing documented fits; SageMaker's own default host for the family is the one left to try
            # (unless it was seen to fail with this container).
            return (
                f"no host image in the catalog drives the {instance.gpu_name} and runs this container: keep "
                f"SageMaker's default host (set inference_ami_version to default; its driver for {instance.family} "
                "is not documented, so confirm it with a test deployment), or choose a container release or "
                "instance family that a host image can run"
            )
        return "choose a container release or instance family that a host image in the catalog can run"
    if choice.inference_ami_version is None:
        return f"set inference_ami_version: auto ({choice.reason})"
    facts = cat.amis[choice.inference_ami_version]
    return (
        f"set inference_ami_version: {choice.inference_ami_version} (driver {facts.driver}, CUDA {facts.cuda}), "
        "or auto, which picks it"
    )
