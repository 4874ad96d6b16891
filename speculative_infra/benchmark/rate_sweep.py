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
from collections.abc import Callable, Sequence

from .clock import Clock, MonotonicClock
from .config import MAX_REQUEST_RATE, BenchmarkConfig, RateSweepConfig
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


def sweep_position(
    levels: Sequence[LevelResult], sweep: RateSweepConfig
) -> tuple[float | None, float | None]:
    """Where a sweep stands after the probes ``levels`` (in the order run): the next rate to probe (None
    when the sweep is over) and the highest sustained rate so far. A pure function of the results, so
    a sweep can be continued in another process (one probe per Lambda invocation)."""
    best: float | None = None
    failing: float | None = None
    rate = sweep.start_rate
    # Without max_rate the doubling stops at the engine's highest rate (config.MAX_REQUEST_RATE).
    ceiling = min(sweep.max_rate, MAX_REQUEST_RATE) if sweep.max_rate is not None else MAX_REQUEST_RATE
    bisections = 0
    for level in levels:
        if sustained(level, sweep):
            best = rate if best is None else max(best, rate)
        else:
            failing = rate if failing is None else min(failing, rate)
        if failing is None:
            if rate >= ceiling:
                return None, best
            rate = min(rate * 2, ceiling)
            continue
        if best is None or bisections >= sweep.bisection_steps:
            return None, best
        bisections += 1
        rate = (best + failing) / 2
    return (rate if len(levels) < _MAX_PROBES else None), best


def next_probe(state: BenchmarkState) -> BenchmarkState | None:
    """The state with the sweep's next probe still to run, or None when the sweep is over (or stopped:
    an error, an interruption, a time budget)."""
    sweep = state.config.rate_sweep
    if sweep is None:
        raise ValueError("next_probe needs config.rate_sweep")
    if state.result.status != "running":
        return None
    rate, _ = sweep_position(state.result.levels, sweep)
    return None if rate is None else _probe(state, rate)


def after_probe(report: LevelReport, config: BenchmarkConfig) -> BenchmarkState:
    """The sweep's state after a probe: the whole sweep's config again, one more level."""
    return _restore(report.state, config)


def finish_sweep(state: BenchmarkState, clock: Clock) -> BenchmarkState:
    """The result with ``max_sustained_rate``; a sweep that ran to its end is complete."""
    assert state.config.rate_sweep is not None
    result = copy.deepcopy(state.result)
    _, result.max_sustained_rate = sweep_position(result.levels, state.config.rate_sweep)
    if result.status == "running":
        result.status = "complete"
        result.finished_at = clock.wall().isoformat(timespec="seconds")
    return dataclasses.replace(state, result=result)


async def run_rate_sweep(
    config: BenchmarkConfig,
    transport: Transport | None = None,
    *,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
    on_level: Callable[[LevelReport], None] | None = None,
) -> BenchmarkState:
    if config.rate_sweep is None:
        raise ValueError("run_rate_sweep needs config.rate_sweep")
    clock = clock or MonotonicClock()
    state = new_benchmark(config, clock=clock)
    owned = transport is None
    try:
        if transport is None:
            transport = make_transport(state.config, clock)
    except TargetUnavailable as exc:
        return finish_with_error(state, str(exc), clock=clock)
    try:
        while (probe := next_probe(state)) is not None:
            if stop is not None and stop.is_set():
                state = _with_status(state, "interrupted", clock)
                break
            report = await run_next_level(probe, transport, clock=clock, stop=stop, progress=progress)
            state = after_probe(report, config)
            if on_level is not None:
                on_level(dataclasses.replace(report, state=state))
            if report.level is None:
                break  # could not run: the state says why
    finally:
        if owned:
            await transport.close()
    return finish_sweep(state, clock)


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
