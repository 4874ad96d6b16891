"""Container rules: the release exists, and what was observed on this instance family."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.host_fit import host_fix
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI120",
    name="container-release-known",
    severity=Severity.ERROR,
    title="Container release is in the catalog",
    rationale="The image tag, its CUDA version and its bundled vLLM come from the catalog.",
)
def container_release_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is not None:
        return
    cat = load_catalog()
    framework = d.spec.container.framework
    known = cat.vllm_dlc_versions() if framework == "vllm" else cat.lmi_versions()
    yield Violation(
        message=f"container.version {d.spec.container.version!r} is not a known {framework} release; "
        f"known: {', '.join(known)}",
        fix="pick a listed version (`speculative-infra catalog containers`)",
        field="container.version",
    )


@rule(
    code="SI121",
    name="vllm-release-data",
    severity=Severity.WARNING,
    title="vLLM flag data exists for the container's vLLM",
    rationale="Engine-arg and speculative-config checks read the release's generated flag data.",
)
def vllm_release_data(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is not None and d.vllm_release is None:
        yield Violation(
            message=f"no flag data for vLLM {d.container.vllm_version}: engine args and speculative keys "
            "are not checked",
            fix="regenerate the data with scripts/extract_vllm_release.py (docs/vllm-releases.md)",
            field="container.version",
        )


@rule(
    code="SI122",
    name="observed-failure",
    severity=Severity.ERROR,
    title="Container was not observed to fail on this instance family",
    rationale="Known failures with the default host image show up 10-20 minutes into a deployment with no logs.",
)
def observed_failure(d: ResolvedDeployment) -> Iterator[Violation]:
    if (
        d.container is None
        or d.instance is None
        or d.host is None
        or d.host.inference_ami_version is not None
    ):
        return
    obs = load_catalog().observation(d.container.framework, d.container.version, d.instance.family)
    if obs is not None and obs.outcome == "fails":
        yield Violation(
            message=f"{d.container.label} was observed to fail on {d.instance.family} with the default host "
            f"image ({obs.source})",
            fix=host_fix(load_catalog(), d.instance, d.container),
            field="instance_type",
        )
