"""What a batch transform job over a file would take, from a `bench --mode batch` run over that file.

The run sends every record once with the job's concurrency in flight (MaxConcurrentTransforms x the
instance count) and no filler at the end, as the job does, so its wall time and throughput are the job's
own, minus what only the job has: the start-up of its instances (SageMaker's), and the difference
between a streamed answer (what the engine measures) and the unstreamed one the job asks for (slightly
less work for vLLM's API server: the run is a conservative estimate).

From it: requests/s and output tokens/s, $ per million output tokens, the job's duration and cost for
the same records on the same instances, and an invocation timeout that covers the slowest pace the run
saw, for the longest answer the job will ask for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from speculative_infra.benchmark.results import LevelResult

START_UP_MINUTES = 10.0  # instances, weights and vLLM ready (serving_cost's figure for every mode)
TIMEOUT_MARGIN = 1.5  # BatchInference's margin over the expected duration of an answer
MIN_TIMEOUT_S = 60
MAX_TIMEOUT_S = 3600  # CreateTransformJob's ModelClientConfig.InvocationsTimeoutInSeconds maximum


@dataclass(frozen=True)
class BatchProjection:
    records: int
    failed: int
    concurrency: int  # in flight across the instances
    instance_count: int
    run_seconds: float
    requests_per_second: float
    output_tokens_per_second: float
    usd_per_million_output_tokens: float | None
    job_minutes: float  # start-up + the run
    job_usd: float | None
    slowest_pace_ms: float  # the highest p99 of TPOT seen, per token after the first
    first_token_ms: float  # p99 TTFT
    max_output_tokens: int

    @property
    def max_concurrent_transforms(self) -> int:
        """Per instance, as CreateTransformJob counts it."""
        return max(1, self.concurrency // self.instance_count)

    @property
    def invocation_timeout_s(self) -> int:
        """TTFT + (max_output_tokens - 1) x the slowest pace, with BatchInference's margin and bounds."""
        expected_s = (self.first_token_ms + (self.max_output_tokens - 1) * self.slowest_pace_ms) / 1000.0
        return min(MAX_TIMEOUT_S, max(MIN_TIMEOUT_S, math.ceil(expected_s * TIMEOUT_MARGIN)))

    def lines(self) -> list[str]:
        cost = (
            f"${self.usd_per_million_output_tokens:.3f} per million output tokens"
            if self.usd_per_million_output_tokens is not None
            else "no price (give --instance-type or --price-per-hour)"
        )
        job_cost = f", about ${self.job_usd:.2f}" if self.job_usd is not None else ""
        return [
            f"batch: {self.records} records ({self.failed} failed) at {self.concurrency} in flight in "
            f"{self.run_seconds:.1f} s: {self.requests_per_second:.2f} requests/s, "
            f"{self.output_tokens_per_second:,.1f} output tokens/s, {cost}",
            f"a transform job over these records on the same instances: about {self.job_minutes:.1f} min "
            f"({START_UP_MINUTES:g} min start-up + the run){job_cost}",
            f"BatchInference(max_concurrent_transforms={self.max_concurrent_transforms}, "
            f"instance_count={self.instance_count}, invocation_timeout=Duration.seconds({self.invocation_timeout_s})) covers answers of up to "
            f"{self.max_output_tokens} tokens at the slowest pace seen (p99 TTFT {self.first_token_ms:.0f} ms, "
            f"p99 TPOT {self.slowest_pace_ms:.1f} ms) with a {TIMEOUT_MARGIN:g}x margin",
        ]


def project_batch(
    level: LevelResult,
    *,
    max_output_tokens: int,
    price_per_hour: float | None,
    instance_count: int,
) -> BatchProjection | None:
    """None when nothing completed (no duration, no pace to project from)."""
    if (
        not level.completed
        or level.duration_s is None
        or level.duration_s <= 0
        or level.request_throughput is None
        or level.output_throughput is None
        or level.p99_tpot_ms is None
        or level.p99_ttft_ms is None
    ):
        return None
    job_hours = START_UP_MINUTES / 60.0 + level.duration_s / 3600.0
    return BatchProjection(
        records=level.completed + level.failed,
        failed=level.failed,
        concurrency=level.concurrency,
        instance_count=instance_count,
        run_seconds=level.duration_s,
        requests_per_second=level.request_throughput,
        output_tokens_per_second=level.output_throughput,
        usd_per_million_output_tokens=level.cost_per_million_output_tokens,
        job_minutes=job_hours * 60.0,
        job_usd=job_hours * price_per_hour * instance_count if price_per_hour is not None else None,
        slowest_pace_ms=level.p99_tpot_ms,
        first_token_ms=level.p99_ttft_ms,
        max_output_tokens=max_output_tokens,
    )
