"""Find the highest request rate an endpoint sustains within its SLOs.

Each probe is one open-loop level (the same engine, arrivals on an absolute clock). A rate is
*sustained* when at least ``min_attainment`` of its measured requests are good (completed within every
SLO) and the client sent them on schedule (p99 lateness within ``max_p99_lateness_ms``). The rate doubles from
``start_rate`` until a probe is not sustained (or ``max_rate`` is reached), then the gap between the last
sustained and the first failing rate is halved ``bisection_steps`` times. Every probe is kept in the
results as a level, in the order run; ``max_sustained_rate`` is the answer (``None`` when even the start
rate fails).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from collections.abc import Callable

from .clock import Clock, MonotonicClock
from .config import BenchmarkConfig, RateSweepConfig
from .load import ProgressCallback
from .results import LevelResult
from .sweep import BenchmarkState, LevelReport, finish_with_error, new_benchmark, run_next_level
from .transports import TargetUnavailable, Transport, make_transport

_MAX_PROBES = 24


def sustained(level: LevelResult, sweep: RateSweepConfig) -> bool:
    measured = level.completed + level.failed
    if not measured or level.good_requests is None or level.request_rate is None:
        return False
    late = level.p99_client_lag_ms if level.p99_client_lag_ms is not None else float("inf")
    return level.good_requests / measured >= sweep.min_attainment and late <= sweep.max_p99_lateness_ms


async def run_rate_sweep(
    config: BenchmarkConfig,
    transport: Transport | None = None,
    *,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
    on_level: Callable[[LevelReport], None] | None = None,
) -> BenchmarkState:
    sweep = config.rate_sweep
    if sweep is None:
        raise ValueError("run_rate_sweep needs config.rate_sweep")
    clock = clock or MonotonicClock()
    state = new_benchmark(config, clock=clock)
    owned = transport is None
    try:
        if transport is None:
            transport = make_transport(state.config, clock)
    except TargetUnavailable as exc:
        return finish_with_error(state, str(exc), clock=clock)
    best: float | None = None
    failing: float | None = None
    rate = sweep.start_rate
    bisections = 0
    try:
        for _ in range(_MAX_PROBES):
            if stop is not None and stop.is_set():
                state = _with_status(state, "interrupted", clock)
                break
            report = await run_next_level(
                _probe(state, rate), transport, clock=clock, stop=stop, progress=progress
            )
            state = _restore(report.state, config)
            if on_level is not None:
                on_level(dataclasses.replace(report, state=state))
            if report.level is None or report.state.result.status not in ("complete", "running"):
                break  # could not run, aborted, interrupted: the state says why
            if sustained(report.level, sweep):
                best = rate if best is None else max(best, rate)
            else:
                failing = rate if failing is None else min(failing, rate)
            if failing is None:
                if sweep.max_rate is not None and rate >= sweep.max_rate:
                    break
                rate = min(rate * 2, sweep.max_rate) if sweep.max_rate is not None else rate * 2
                continue
            if best is None or bisections >= sweep.bisection_steps:
                break
            bisections += 1
            rate = (best + failing) / 2
    finally:
        if owned:
            await transport.close()
    result = copy.deepcopy(state.result)
    result.max_sustained_rate = best
    if result.status == "running":
        result.status = "complete"
        result.finished_at = clock.wall().isoformat(timespec="seconds")
    return dataclasses.replace(state, result=result)


def _probe(state: BenchmarkState, rate: float) -> BenchmarkState:
    """The state with one open-loop level at ``rate`` still to run."""
    load = dataclasses.replace(state.config.load, request_rates=(rate,))
    probe = copy.deepcopy(state)
    probe.config = dataclasses.replace(state.config, load=load)
    probe.next_level_index = 0
    probe.result.status = "running"
    return probe


def _restore(state: BenchmarkState, config: BenchmarkConfig) -> BenchmarkState:
    restored = copy.deepcopy(state)
    restored.config = config
    restored.next_level_index = len(restored.result.levels)
    if restored.result.status == "complete":
        restored.result.status = "running"  # one probe done, not the sweep
        restored.result.finished_at = None
    return restored


def _with_status(state: BenchmarkState, status: str, clock: Clock) -> BenchmarkState:
    new = copy.deepcopy(state)
    new.result.status = status  # type: ignore[assignment]
    new.result.finished_at = clock.wall().isoformat(timespec="seconds")
    return new
