"""Does the container's CUDA runtime start on the host's NVIDIA driver?"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.host_fit import ami_that_fits, driver_fit
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.registry import rule


def _ami_fix(d: ResolvedDeployment) -> str:
    assert d.container is not None
    cat = load_catalog()
    ami = ami_that_fits(cat, d.container, d.instance.gpu if d.instance else None)
    if ami is None:
        return "choose a container whose CUDA fits an available host image"
    facts = cat.amis[ami]
    return f"set inference_ami_version: {ami} (driver {facts.driver}, CUDA {facts.cuda}), or inference_ami_version: auto"


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
    compat = (
        f"and its forward-compatibility libraries need driver >= {d.container.forward_compat.min_host_driver}"
        if d.container.forward_compat.enabled
        else "and the image has no CUDA forward-compatibility libraries"
    )
    yield Violation(
        message=f"{d.container.label} needs NVIDIA driver >= {fit.needed_native} (>= {fit.needed_minor_compat} "
        f"through CUDA minor-version compatibility); {host} has driver {d.host.driver} "
        f"(CUDA {d.host.cuda}), {compat}",
        fix=_ami_fix(d),
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
        yield Violation(
            message=f"inference_ami_version {d.host.inference_ami_version!r} is not a host image the catalog knows; "
            f"known: {', '.join(sorted(load_catalog().amis))}",
            fix="use one of the listed host images",
            field="inference_ami_version",
        )
        return
    obs = load_catalog().observation(d.container.framework, d.container.version, d.instance.family)
    if obs is not None:
        return  # seen on this family's default host: SI122 reports a known failure
    yield Violation(
        message=f"the default host driver of {d.instance.family} is not documented and {d.container.label} "
        f"was never observed there",
        fix=_ami_fix(d),
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
