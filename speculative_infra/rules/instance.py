"""Instance type rules."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI100",
    name="instance-type-known",
    severity=Severity.ERROR,
    title="Instance type is a known SageMaker GPU instance",
    rationale="Every other check needs the instance's GPU; an unknown or CPU instance cannot serve vLLM.",
)
def instance_type_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is not None:
        return
    name = d.spec.instance_type
    cat = load_catalog()
    family = name.split(".")[1] if name.count(".") == 2 else ""
    if family in cat.families:
        sizes = ", ".join(f"ml.{family}.{s}" for s in cat.families[family].sizes)
        allowed = f"{family} sizes for real-time endpoints: {sizes}"
    else:
        allowed = "GPU families: " + ", ".join(sorted(cat.families))
    yield Violation(
        message=f"instance_type {name!r} is not a SageMaker GPU instance type this catalog knows; {allowed}",
        fix="choose one of the listed instance types (`speculative-infra catalog instances`)",
        field="instance_type",
    )


@rule(
    code="SI101",
    name="volume-size-supported",
    severity=Severity.ERROR,
    title="An ML storage volume size only on instances without local NVMe storage",
    rationale="SageMaker rejects VolumeSizeInGB for instance types with NVMe instance storage.",
)
def volume_size_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.spec.volume_size_in_gb is None or d.instance is None or d.instance.storage.kind != "nvme":
        return
    yield Violation(
        message=f"volume_size_in_gb {d.spec.volume_size_in_gb} on {d.instance.name}, whose {d.instance.family} "
        "family has local NVMe storage; allowed: no volume size there",
        fix="leave volume_size_in_gb unset (the model is stored on the instance's NVMe disk)",
        field="volume_size_in_gb",
    )
