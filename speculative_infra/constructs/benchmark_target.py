"""What EndpointBenchmark needs of the thing it measures, so it knows no endpoint construct.

The endpoint constructs (SpeculativeVllmEndpoint, LmiInferenceComponent) sit above the benchmark: each
describes itself with `benchmark_target()`; the benchmark depends only on this interface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from constructs import IConstruct


@dataclass(frozen=True)
class BenchmarkTarget:
    endpoint_name: str
    component_name: str | None  # an inference component's name; None for a single-model endpoint
    container: Literal["vllm", "lmi"]  # how requests are framed
    invoke_arns: list[str]  # what the benchmark's role may invoke
    usd_per_hour: float | None  # what the measured capacity costs per hour (None: no price known)
    instance_count: int
    label: str
    deployment_id: str  # changes with every new deployment: a new benchmark run
    depends_on: IConstruct  # the benchmark runs once this resource exists
    # The planner's figures for the benchmark's own levels (keyword arguments: input_tokens,
    # output_tokens, prefix_tokens, concurrency, request_rates, usd_per_hour): a dict of predicted
    # levels, or a string saying why there is none. None: the target offers no prediction.
    predict: Callable[..., dict[str, Any] | str | None] | None = None


@runtime_checkable
class Benchmarkable(Protocol):
    def benchmark_target(self) -> BenchmarkTarget: ...
