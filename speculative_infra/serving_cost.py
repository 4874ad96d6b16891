"""Which way of serving is cheapest for a daily token volume: real time, asynchronous with scale to zero,
or a batch transform job? On-demand instance-hours from the catalog's prices and a measured throughput.

The model, per day, for output tokens T and one instance's output throughput R (tokens/s):

- busy hours H = T / R / 3600 (instance-hours of generation);
- real time: max(min instances, ceil(H / 24)) instances, 24 hours each;
- asynchronous, scaling to zero: H, plus for each wake from zero the start-up (an instance, the weights,
  vLLM) and the idle tail before scale-in;
- batch: H, plus each job's start-up.

All three at the catalog's real-time on-demand rate: SageMaker lists batch transform and asynchronous
prices per instance-hour too, and the catalog holds the real-time ones only (said in the output).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from speculative_infra.cost import CostEstimate

START_UP_MINUTES = (
    10.0  # an instance, the weights and vLLM ready: the default health-check order of magnitude
)
SCALE_IN_TAIL_MINUTES = 15.0  # target tracking scales in after 15 minutes under target
HOURS_PER_DAY = 24
# Bounds that keep the day's arithmetic finite and mean something: a quadrillion tokens a day is ~10^10
# tokens/s, far past any fleet; one instance past 10^7 tokens/s or under one token in 1,000 s is a typo;
# a wake from zero takes START_UP_MINUTES + SCALE_IN_TAIL_MINUTES, so a day holds at most 57 of them; a
# transform job a minute is the most a day of batch jobs can mean.
MAX_DAILY_OUTPUT_TOKENS = 1e15
THROUGHPUT_RANGE = (1e-3, 1e7)
MAX_WAKES_PER_DAY = int(HOURS_PER_DAY * 60 // (START_UP_MINUTES + SCALE_IN_TAIL_MINUTES))
MAX_JOBS_PER_DAY = HOURS_PER_DAY * 60
MAX_MIN_INSTANCES = 2**31 - 1


@dataclass(frozen=True)
class ServingWorkload:
    daily_output_tokens: float
    output_tokens_per_second: float  # one instance, at the load the mode runs it at
    real_time_min_instances: int = 1
    async_wakes_per_day: int = 1
    batch_jobs_per_day: int = 1

    def __post_init__(self) -> None:
        for name, low, high in (
            ("daily_output_tokens", 0.0, MAX_DAILY_OUTPUT_TOKENS),
            ("output_tokens_per_second", *THROUGHPUT_RANGE),
        ):
            value = getattr(self, name)
            above_low = value > low if low == 0 else value >= low
            if not (math.isfinite(value) and above_low and value <= high):
                allowed = f"a number > 0 and <= {high:g}" if low == 0 else f"{low:g} to {high:g}"
                raise ValueError(f"{name} is {value}; allowed: {allowed}")
        for name, high in (
            ("real_time_min_instances", MAX_MIN_INSTANCES),
            ("async_wakes_per_day", MAX_WAKES_PER_DAY),
            ("batch_jobs_per_day", MAX_JOBS_PER_DAY),
        ):
            value = getattr(self, name)
            if not 1 <= value <= high:
                raise ValueError(f"{name} is {value}; allowed: 1 to {high}")

    @property
    def busy_hours(self) -> float:
        return self.daily_output_tokens / self.output_tokens_per_second / 3600.0


@dataclass(frozen=True)
class ModeCost:
    mode: str
    instance_hours_per_day: float | None  # None: the mode cannot serve this deployment
    usd_per_day: float | None
    note: str

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "instance_hours_per_day": None
            if self.instance_hours_per_day is None
            else round(self.instance_hours_per_day, 3),
            "usd_per_day": None if self.usd_per_day is None else round(self.usd_per_day, 2),
            "note": self.note,
        }


def compare_serving_costs(
    price: CostEstimate, workload: ServingWorkload, batch_unavailable: str | None = None
) -> list[ModeCost]:
    """The three modes, cheapest first among those that can serve it."""
    busy = workload.busy_hours
    real_time_instances = max(workload.real_time_min_instances, math.ceil(busy / HOURS_PER_DAY))
    wake = (START_UP_MINUTES + SCALE_IN_TAIL_MINUTES) / 60.0
    modes = [
        (
            "real_time",
            real_time_instances * HOURS_PER_DAY,
            f"{real_time_instances} instance(s) around the clock (busy {busy:.2f} instance-hours)",
        ),
        (
            "async",
            busy + workload.async_wakes_per_day * wake,
            f"busy {busy:.2f} h + {workload.async_wakes_per_day} wake(s) from zero x "
            f"({START_UP_MINUTES:g} min start-up + {SCALE_IN_TAIL_MINUTES:g} min before scale-in)",
        ),
        (
            "batch",
            None if batch_unavailable else busy + workload.batch_jobs_per_day * START_UP_MINUTES / 60.0,
            batch_unavailable
            or f"busy {busy:.2f} h + {workload.batch_jobs_per_day} job(s) x {START_UP_MINUTES:g} min start-up",
        ),
    ]
    rate = price.usd_per_hour
    costs = [
        ModeCost(
            mode,
            hours,
            None if hours is None or rate is None else hours * rate,
            note if rate is not None else f"{note}; no price: {price.note}",
        )
        for mode, hours, note in modes
    ]
    # Cheapest first; without a price, fewest instance-hours first (the same order at any one rate).
    return sorted(
        costs,
        key=lambda c: (
            c.instance_hours_per_day is None,
            c.usd_per_day or 0.0,
            c.instance_hours_per_day or 0.0,
            c.mode,
        ),
    )


def throughput_from_results(results: dict[str, object]) -> float:
    """The best output throughput (tokens/s) a `speculative-infra bench` results file measured, per instance
    (divided by the run's ``cost.instance_count``)."""
    levels = results.get("levels")
    if not isinstance(levels, list):
        raise ValueError("the results file has no levels (is it a `speculative-infra bench` results.json?)")
    values = [lv.get("output_throughput") for lv in levels if isinstance(lv, dict)]
    measured = [float(v) for v in values if isinstance(v, (int, float)) and v > 0]
    if not measured:
        raise ValueError("the results file has no level with a measured output_throughput")
    cost = results.get("cost")
    instances = cost.get("instance_count", 1) if isinstance(cost, dict) else 1
    if not isinstance(instances, int) or instances < 1:
        raise ValueError(
            f"the results file's cost.instance_count is {instances!r}; expected a positive integer"
        )
    return max(measured) / instances
