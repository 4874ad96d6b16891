"""What a distributed load test sends: a profile of steps (open or closed loop) and how it is spread.

A step holds a request rate (open loop; ``ramp_to_rate`` makes it a linear ramp) or a concurrency
(closed loop) for ``duration_s``. The test is cut into waves of ``wave_s`` seconds: every worker of a wave
starts at the wave's scheduled time, sends its slice of that wave's arrivals and lets its requests finish
for at most ``drain_s`` more, all within one Lambda invocation (15 minutes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..config import (
    MAX_BURSTINESS,
    MAX_CONCURRENCY,
    MAX_REQUEST_RATE,
    MIN_BURSTINESS,
    MIN_REQUEST_RATE,
    BenchmarkConfig,
)
from ..schema import ConfigError, Record, validate_fields

LAMBDA_MAX_S = 900.0
"""A Lambda invocation lives at most 15 minutes."""
LEAD_S = 20.0
"""Seconds a worker is invoked ahead of its wave (cold start, connections) and waits for the schedule."""
MARGIN_S = 30.0
"""Seconds kept back at the end of an invocation to write the worker's output."""
MAX_WORKERS = 1_000
"""Workers per wave: Lambda's default concurrency per region is 1,000 (docs/load-testing.md)."""
MAX_ITEMS = 10_000
"""Waves x workers: the child executions one Distributed Map run keeps open at once (10,000)."""
MAX_DURATION_S = 7 * 86_400.0
"""A week of load; the items (waves x workers) bound it sooner for many workers."""
MAX_STEPS = 1_000
MAX_ARRIVALS = 2_000_000
"""Requests of a whole test: the merge holds every record in one function (~600 bytes each in memory)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadStep(Record):
    """One step of the profile: a rate or a concurrency held (or a rate ramped) for a duration."""

    duration_s: float = field(metadata={"gt": 0, "le": MAX_DURATION_S})
    request_rate: float | None = field(
        default=None, metadata={"ge": MIN_REQUEST_RATE, "le": MAX_REQUEST_RATE}
    )
    """Open loop: requests/s at the start of the step."""
    ramp_to_rate: float | None = field(
        default=None, metadata={"ge": MIN_REQUEST_RATE, "le": MAX_REQUEST_RATE}
    )
    """Open loop: requests/s at the end of the step, reached linearly. Default: the rate is held."""
    concurrency: int | None = field(default=None, metadata={"ge": 1, "le": MAX_CONCURRENCY})
    """Closed loop: requests kept open for the whole step."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if (self.request_rate is None) == (self.concurrency is None):
            raise ConfigError(
                "request_rate",
                self.request_rate,
                "a request_rate (open loop) or a concurrency (closed loop), exactly one",
            )
        if self.ramp_to_rate is not None and self.request_rate is None:
            raise ConfigError(
                "ramp_to_rate", self.ramp_to_rate, "a ramp from a request_rate (open loop only)"
            )

    @property
    def open_loop(self) -> bool:
        return self.request_rate is not None

    def rate_at(self, t: float) -> float:
        """Requests/s ``t`` seconds into the step (open loop)."""
        assert self.request_rate is not None
        end = self.ramp_to_rate if self.ramp_to_rate is not None else self.request_rate
        return self.request_rate + (end - self.request_rate) * min(max(t / self.duration_s, 0.0), 1.0)

    def expected_arrivals(self) -> float:
        """Mean arrivals over the step: the rate's integral."""
        if self.request_rate is None:
            return 0.0
        end = self.ramp_to_rate if self.ramp_to_rate is not None else self.request_rate
        return (self.request_rate + end) / 2 * self.duration_s

    def describe(self) -> str:
        minutes = f"{self.duration_s / 60:g} min" if self.duration_s >= 120 else f"{self.duration_s:g} s"
        if self.concurrency is not None:
            return f"concurrency {self.concurrency} for {minutes}"
        if self.ramp_to_rate is not None:
            return f"{self.request_rate:g} -> {self.ramp_to_rate:g} requests/s over {minutes}"
        return f"{self.request_rate:g} requests/s for {minutes}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadTestConfig(Record):
    """A distributed load test: the benchmark's target, workload, SLOs and cost, a profile, and its spread."""

    benchmark: BenchmarkConfig
    """Target, workload (or dataset), SLOs, cost, request timeout and retries, as for ``bench``."""
    steps: tuple[LoadStep, ...]
    workers: int = field(default=4, metadata={"ge": 1, "le": MAX_WORKERS})
    """Workers per wave. Each holds its share of the open requests on one event loop (~256 streams)."""
    wave_s: float = field(default=720.0, metadata={"ge": 1.0, "le": LAMBDA_MAX_S})
    """Seconds of sending per wave; with ``drain_s`` it must fit one Lambda invocation."""
    drain_s: float = field(default=90.0, metadata={"ge": 0.0, "le": LAMBDA_MAX_S})
    """Seconds a worker lets its open requests finish after its wave ends; still open then: cancelled."""
    burstiness: float = field(default=1.0, metadata={"ge": MIN_BURSTINESS, "le": MAX_BURSTINESS})
    """Open loop: gamma shape of the gaps between arrivals (1 is a Poisson process)."""
    seed: str = field(default="load-test", metadata={"min_length": 1, "max_length": 200})
    """Seeds the arrival schedule: the same seed, profile and start give the same arrivals."""
    late_threshold_ms: float = field(default=50.0, metadata={"gt": 0, "le": 60_000.0})
    """A request that leaves later than this after its scheduled time was sent late (the client's fault)."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if not self.steps:
            raise ConfigError("steps", self.steps, "at least one step")
        if len(self.steps) > MAX_STEPS:
            raise ConfigError("steps", f"{len(self.steps)} steps", f"at most {MAX_STEPS} steps")
        kinds = {step.open_loop for step in self.steps}
        if len(kinds) > 1:
            raise ConfigError(
                "steps", [s.describe() for s in self.steps], "all steps open loop or all closed loop"
            )
        budget = LAMBDA_MAX_S - LEAD_S - MARGIN_S
        if self.wave_s + self.drain_s > budget:
            raise ConfigError(
                "wave_s",
                self.wave_s,
                f"wave_s + drain_s ({self.wave_s:g} + {self.drain_s:g} s) at most {budget:g} s: one Lambda "
                f"invocation lives {LAMBDA_MAX_S:g} s, {LEAD_S:g} s go to starting early and {MARGIN_S:g} s "
                "to writing the results",
            )
        if self.duration_s > MAX_DURATION_S:
            raise ConfigError("steps", f"{self.duration_s:g} s in all", f"at most {MAX_DURATION_S:g} s")
        if self.waves * self.workers > MAX_ITEMS:
            raise ConfigError(
                "workers",
                self.workers,
                f"waves x workers at most {MAX_ITEMS} ({self.waves} waves of {self.wave_s:g} s): fewer workers "
                "or longer waves",
            )
        arrivals = sum(step.expected_arrivals() for step in self.steps)
        if arrivals > MAX_ARRIVALS:
            raise ConfigError("steps", f"{arrivals:.0f} arrivals", f"at most {MAX_ARRIVALS} arrivals")
        peak = self.peak_open_requests_per_worker()
        if peak is not None and peak > MAX_CONCURRENCY:
            raise ConfigError("workers", self.workers, f"at most {MAX_CONCURRENCY} slots per worker")

    @property
    def open_loop(self) -> bool:
        return self.steps[0].open_loop

    @property
    def duration_s(self) -> float:
        return sum(step.duration_s for step in self.steps)

    @property
    def waves(self) -> int:
        return max(1, math.ceil(self.duration_s / self.wave_s - 1e-9))

    def step_starts(self) -> list[float]:
        """Seconds from the test's start at which each step begins."""
        starts, at = [], 0.0
        for step in self.steps:
            starts.append(at)
            at += step.duration_s
        return starts

    def peak_open_requests_per_worker(self) -> int | None:
        """Closed loop: the most slots one worker holds (None for open loop, where the server decides)."""
        if self.open_loop:
            return None
        return max(math.ceil((step.concurrency or 0) / self.workers) for step in self.steps)
