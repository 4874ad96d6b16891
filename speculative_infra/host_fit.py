"""Will a container's CUDA runtime start on a host driver? One answer for the rules and the resolver.

Three ways a CUDA runtime runs on a host: the driver meets the CUDA version's floor (native); the
driver meets the floor of the CUDA major version (minor-version compatibility, e.g. 12.9 on 535/550);
or the image ships NVIDIA's forward-compatibility libraries and enables them on a data-center GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from speculative_infra.catalog import Catalog
from speculative_infra.catalog.models import ContainerImage, Gpu

FitKind = Literal["native", "minor_version_compat", "forward_compat", "no"]


@dataclass(frozen=True)
class DriverFit:
    kind: FitKind
    needed_native: int | None
    needed_minor_compat: int | None

    @property
    def ok(self) -> bool:
        return self.kind != "no"


def driver_fit(cat: Catalog, container: ContainerImage, gpu: Gpu | None, driver: int) -> DriverFit:
    native = cat.cuda.min_driver(container.cuda)
    minor = cat.cuda.minor_compat_driver(container.cuda)
    kind: FitKind = "no"
    if native is not None and driver >= native:
        kind = "native"
    elif minor is not None and driver >= minor:
        kind = "minor_version_compat"
    elif (
        container.forward_compat.enabled
        and (gpu is None or gpu.cuda_forward_compatible)
        and driver >= (container.forward_compat.min_host_driver or 0)
    ):
        kind = "forward_compat"
    return DriverFit(kind=kind, needed_native=native, needed_minor_compat=minor)


def ami_that_fits(cat: Catalog, container: ContainerImage, gpu: Gpu | None) -> str | None:
    """The host image AWS recommends for this CUDA if it fits, else the oldest-driver one that does."""
    recommended = cat.recommended_amis.amis.get(container.cuda)
    if recommended is not None and driver_fit(cat, container, gpu, cat.amis[recommended].driver).ok:
        return recommended
    fitting = [
        name
        for name, ami in sorted(cat.amis.items(), key=lambda i: i[1].driver)
        if driver_fit(cat, container, gpu, ami.driver).ok
    ]
    return fitting[0] if fitting else None
