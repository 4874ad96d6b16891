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


@rule(
    code="SI103",
    name="batch-transform-instance",
    severity=Severity.ERROR,
    title="Batch transform runs on the instance type",
    rationale="A transform job accepts only the instance types of its own list (TransformInstanceType), "
    "which lacks several real-time GPU families; another type fails CreateTransformJob.",
)
def batch_transform_instance(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.spec.serving != "batch":
        return
    facts = load_catalog().sagemaker.transform_instance_types
    if d.spec.instance_type in facts.types:
        return
    # Suggest what the catalog knows and a transform job accepts: computed, never written by hand.
    known = set(load_catalog().instance_type_names())
    offered = sorted({t.split(".")[1] for t in facts.types if t in known})
    yield Violation(
        message=f"instance_type {d.spec.instance_type} is not offered for batch transform jobs (source: "
        f"{facts.source})",
        fix=f"choose an instance of a family batch transform offers: {', '.join(offered)}; or serve it in real "
        "time or asynchronously",
        field="instance_type",
    )
