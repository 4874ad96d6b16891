"""Endpoint-level check: do the inference components on one endpoint fit its instances?

Not a per-deployment rule (it needs every component of an endpoint), so it is not in the registry;
docs/rules.md lists it under its own heading.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from speculative_infra.catalog.models import InstanceType
from speculative_infra.rules.finding import Finding

CODE = "SI700"
TITLE = "Inference components fit the endpoint's instances"
RATIONALE = (
    "SageMaker places component copies on the endpoint's instances; copies that cannot be placed stay "
    "pending and requests fail with no capacity."
)


@dataclass(frozen=True)
class ComponentDemand:
    name: str
    accelerators: int
    memory_mb: int
    copies: int


def check_capacity(
    instance: InstanceType, max_instances: int, components: Sequence[ComponentDemand]
) -> list[Finding]:
    findings: list[Finding] = []

    def add(message: str, fix: str) -> None:
        findings.append(Finding.error(CODE, TITLE, message, fix, "copy_count"))

    for c in components:
        if c.accelerators > instance.gpu_count:
            add(
                f"component {c.name} needs {c.accelerators} GPUs per copy; {instance.name} has {instance.gpu_count}",
                "lower its tensor_parallel_degree or use a larger instance type",
            )
        if instance.memory_gib is not None and c.memory_mb > instance.memory_gib * 1024:
            add(
                f"component {c.name} needs {c.memory_mb} MB of host memory per copy; {instance.name} has "
                f"{int(instance.memory_gib * 1024)} MB",
                "lower min_memory_required_in_mb or use a larger instance type",
            )
    gpus_needed = sum(c.accelerators * c.copies for c in components)
    gpus_available = instance.gpu_count * max_instances
    if gpus_needed > gpus_available:
        detail = ", ".join(f"{c.name} {c.copies} x {c.accelerators}" for c in components)
        add(
            f"components need {gpus_needed} GPUs at their initial copy counts ({detail}) but at most "
            f"{max_instances} x {instance.name} offer {gpus_available}",
            "raise the endpoint's max_instance_count or lower copy counts",
        )
    return findings
