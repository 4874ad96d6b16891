"""What the dashboard, canary and SLO alarms need of the thing they watch, so they know no endpoint
construct (as EndpointBenchmark with benchmark_target.py).

SpeculativeVllmEndpoint and LmiInferenceComponent describe themselves with `monitoring_target()`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from aws_cdk import Fn


@dataclass(frozen=True)
class BenchmarkSeries:
    """The post-deploy benchmark's EMF series: one per level, and its acceptance baseline."""

    level_dimension: Literal["Concurrency", "RequestRate"]
    level_values: list[str]
    tokens_per_chunk_baseline: str  # a CloudFormation attribute: mean tokens per chunk at the lowest level
    require_baseline: Callable[[], None]  # call before reading the attribute (see EndpointBenchmark)


@dataclass(frozen=True)
class MonitoringTarget:
    label: str
    endpoint_name: str
    variant_name: str
    component_name: str | None  # an inference component's name; None for a single-model endpoint
    container: Literal["vllm", "lmi"]  # how the canary frames requests
    invoke_arns: list[str]
    instance_type: str
    gpus_per_instance: int
    gpus_per_copy: (
        int  # the GPUs one model server uses (tensor parallelism); = gpus_per_instance for an endpoint
    )
    scaling_metric: Literal["concurrent_requests", "invocations"] | None
    scaling_target_value: float | None
    min_capacity: int | None
    max_capacity: int | None
    speculative_method: str | None
    benchmark: BenchmarkSeries | None
    serving: Literal["real_time", "async"] = "real_time"

    @property
    def is_component(self) -> bool:
        return self.component_name is not None

    @property
    def scales_to_zero(self) -> bool:
        return self.min_capacity == 0

    @property
    def target_name(self) -> str:
        """The engine's name for this target (the EMF ``Target`` dimension of the canary and benchmark):
        ``sagemaker:<endpoint>[/<component>]``, as SageMakerTarget.describe() writes it."""
        parts = ["sagemaker:", self.endpoint_name]
        if self.component_name is not None:
            parts += ["/", self.component_name]
        return Fn.join("", parts)


@runtime_checkable
class Monitorable(Protocol):
    def monitoring_target(self) -> MonitoringTarget: ...
