"""One worker's share of one wave: wait for the wave's scheduled start, send its slice, report.

The worker runs the benchmark engine (``run_level`` with the given arrivals, or closed-loop slots per
segment) and returns per-request records on the test's time axis, mergeable latency sketches per step
and per minute, and its own health: how late it sent against the schedule, its event loop's lag and its
CPU. A worker never waits on another: it waits only for its own start time, which the state machine
invokes it just ahead of (``profile.LEAD_S``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from ..clock import Clock, MonotonicClock, sleep_until
from ..config import Level, LoadConfig
from ..datasets import dataset_prompts
from ..formats import TokenSource
from ..load import LevelRun, run_level
from ..metrics import meets_slo, summarize_level
from ..results import RequestRecord
from ..transports import Transport, make_transport
from ..workload import PromptFactory
from .profile import LEAD_S, LoadTestConfig
from .schedule import (
    WAVE_INDEX_STRIDE,
    step_index_at,
    wave_segments,
    wave_window,
    worker_arrivals,
    worker_slots,
)
from .sketch import LatencySketch

SKETCHED = ("ttft_ms", "tpot_ms", "e2el_ms")
LAG_PROBE_S = 0.1
"""The event loop is probed every 100 ms: a probe that wakes late measures the loop's lag."""
CLOSED_LOOP_BATCH = 64
"""Closed loop: requests per slot prepared at a time (bodies are built before they are sent)."""
MAX_EARLY_S = 5 * LEAD_S
"""A worker invoked more than this before its start refuses to wait (the schedule, not the worker, is wrong)."""


def minute_of(t_s: float) -> int:
    return max(0, math.floor(t_s / 60.0))


class _LagProbe:
    """Samples the event loop's lag until stopped: per minute the worst, overall a sketch."""

    def __init__(self, clock: Clock, to_test_time: Callable[[float], float], since: float) -> None:
        self._clock = clock
        self._since = since  # lag while bodies are built, before the wave starts, harms no request
        self._to_test_time = to_test_time
        self.sketch = LatencySketch()
        self.worst_by_minute: dict[int, float] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            before = self._clock.now()
            await self._clock.sleep(LAG_PROBE_S)
            after = self._clock.now()
            if before < self._since:
                continue
            lag_ms = max(0.0, (after - before - LAG_PROBE_S) * 1000.0)
            self.sketch.add(lag_ms)
            minute = minute_of(self._to_test_time(after))
            self.worst_by_minute[minute] = max(self.worst_by_minute.get(minute, 0.0), lag_ms)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _load_settings(config: LoadTestConfig, requests: int) -> LoadConfig:
    base = config.benchmark.load
    return dataclasses.replace(
        base,
        requests_per_level=max(1, requests),
        warmup_requests=0,
        max_concurrency=None,
        time_budget_s=None,
        ramp_up_s=0.0,
        sustain_load=False,
        # A load test keeps sending through failures: they are what it measures.
        abort_after_failures=base.abort_after_failures or 1_000_000,
    )


async def run_worker(
    config: LoadTestConfig,
    wave: int,
    worker: int,
    test_start_epoch: float,
    *,
    clock: Clock | None = None,
    wall: Callable[[], float] = time.time,
    transport: Transport | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run worker ``worker``'s slice of ``wave``; returns its output document and its request records."""
    clock = clock or MonotonicClock()
    start_s, end_s = wave_window(config, wave)
    scheduled = test_start_epoch + start_s
    early = scheduled - wall()
    if early > MAX_EARLY_S:
        raise ValueError(
            f"wave {wave} starts in {early:.0f} s; a worker waits at most {MAX_EARLY_S:.0f} s for its start"
        )
    active = transport or make_transport(config.benchmark, clock)
    arrivals = worker_arrivals(config, wave, worker)
    segments = wave_segments(config, wave)
    slots = [worker_slots(s.concurrency, config.workers, worker) for s in segments]
    connections = max(slots, default=0) or max(1, math.ceil(len(arrivals) / max(end_s - start_s, 1.0) * 4))
    cpu_before, cpu_since = os.times(), clock.now()
    try:
        await active.start(connections)
        prompts = PromptFactory(config.benchmark.workload, dataset_prompts(config.benchmark.workload.dataset))
        # The schedule on this worker's own clock: the wall clock (NTP-synchronised on Lambda) is read
        # once, so every worker's offsets count from the same instant.
        mono_start = clock.now() + (scheduled - wall())
        skew_ms = 0.0

        def to_test_time(mono: float) -> float:
            return start_s + (mono - mono_start)

        probe = _LagProbe(clock, to_test_time, mono_start)
        probe.start()
        runs: list[LevelRun] = []
        try:
            if config.open_loop:
                rate = max(len(arrivals) / max(end_s - start_s, 1e-9), 1e-3)
                runs.append(
                    await run_level(
                        Level(0, rate),
                        active,
                        prompts,
                        _load_settings(config, len(arrivals)),
                        clock,
                        request_id_prefix=f"w{wave}.{worker}-",
                        deadline=mono_start + (end_s - start_s) + config.drain_s,
                        arrivals=[(a.index, a.at_s - start_s) for a in arrivals],
                        origin=mono_start,  # bodies are built before the wave starts
                    )
                )
            else:
                await sleep_until(clock, mono_start)
                skew_ms = (clock.now() - mono_start) * 1000.0
                runs.extend(
                    await _closed_loop(
                        config, wave, worker, segments, slots, active, prompts, clock, mono_start
                    )
                )
        finally:
            await probe.stop()
    finally:
        await active.close()
    cpu_after = os.times()
    elapsed = max(clock.now() - cpu_since, 1e-9)  # the CPU counted since cpu_before, over the same time
    records = _records(config, runs, to_test_time, start_s, active.api_format.server_token_source)
    cpu = (cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system) / elapsed * 100.0
    return _output(config, wave, worker, scheduled, skew_ms, records, probe, cpu, len(arrivals)), records


async def _closed_loop(
    config: LoadTestConfig,
    wave: int,
    worker: int,
    segments: list[Any],
    slots: list[int],
    transport: Transport,
    prompts: PromptFactory,
    clock: Clock,
    mono_start: float,
) -> list[LevelRun]:
    """Each segment's slots until the segment ends (requests still open then are cancelled and counted)."""
    start_s, _ = wave_window(config, wave)
    runs: list[LevelRun] = []
    batch = 0
    for segment, count in zip(segments, slots, strict=True):
        segment_end = mono_start + (segment.end_s - start_s)
        while clock.now() < segment_end - 1e-3:
            if count == 0:
                await clock.sleep(segment_end - clock.now())
                break
            base = wave * WAVE_INDEX_STRIDE + (worker * 1000 + batch) * count * CLOSED_LOOP_BATCH
            batch += 1
            runs.append(
                await run_level(
                    Level(count),
                    transport,
                    prompts,
                    _load_settings(config, count * CLOSED_LOOP_BATCH),
                    clock,
                    request_id_prefix=f"w{wave}.{worker}.{batch}-",
                    deadline=segment_end,
                    job_offset=(0, base),
                )
            )
    return runs


def _records(
    config: LoadTestConfig,
    runs: list[LevelRun],
    to_test_time: Callable[[float], float],
    wave_start_s: float,
    token_source: TokenSource,
) -> list[dict[str, Any]]:
    """Compact per-request records on the test's time axis (seconds from its start)."""
    bench = config.benchmark
    out = []
    for run in runs:
        level_start = to_test_time(run.started_at)
        _, records = summarize_level(run, bench.workload, bench.cost, token_source, bench.slo)
        for record in records:
            if config.open_loop:
                # The schedule's own time: lateness then counts the level's start and the clock skew too.
                scheduled = wave_start_s + record.slot_freed_at_s
            else:
                scheduled = level_start + record.slot_freed_at_s  # the slot came free: no schedule
            out.append(_compact(record, level_start, scheduled, config))
    out.sort(key=lambda r: (r["sent_s"], r["id"]))
    return out


def _compact(
    record: RequestRecord, level_start: float, scheduled: float, config: LoadTestConfig
) -> dict[str, Any]:
    sent = level_start + record.sent_at_s
    done = None if record.completed_at_s is None else round(level_start + record.completed_at_s, 6)
    slo = config.benchmark.slo
    return {
        "id": record.request_id,
        "step": step_index_at(config, scheduled),
        "scheduled_s": round(scheduled, 6),
        "sent_s": round(sent, 6),
        "completed_s": done,
        "late_ms": round(max(0.0, (sent - scheduled) * 1000.0), 3),
        "status": record.status,
        "failure_class": record.failure_class,
        "retries": record.retries,
        "ttft_ms": record.ttft_ms,
        "tpot_ms": record.tpot_ms,
        "e2el_ms": record.e2el_ms,
        "output_tokens": record.output_tokens,
        "prompt_tokens": record.prompt_tokens,
        "meets_slo": None if slo is None or record.status != "ok" else meets_slo(record, slo),
    }


def _output(
    config: LoadTestConfig,
    wave: int,
    worker: int,
    scheduled_epoch: float,
    skew_ms: float,
    records: list[dict[str, Any]],
    probe: _LagProbe,
    cpu_percent: float,
    planned: int,
) -> dict[str, Any]:
    """The worker's document: sketches per step and per minute, counts and health (records go apart)."""
    by_step: dict[int, dict[str, LatencySketch]] = defaultdict(lambda: {m: LatencySketch() for m in SKETCHED})
    by_minute: dict[int, dict[str, LatencySketch]] = defaultdict(
        lambda: {m: LatencySketch() for m in SKETCHED}
    )
    late_by_minute: Counter[int] = Counter()
    for record in records:
        minute = minute_of(record["scheduled_s"])
        if record["late_ms"] > config.late_threshold_ms:
            late_by_minute[minute] += 1
        if record["status"] != "ok":
            continue
        for metric in SKETCHED:
            value = record[metric]
            if value is not None:
                by_step[record["step"]][metric].add(value)
                by_minute[minute_of(record["completed_s"])][metric].add(value)
    return {
        "wave": wave,
        "worker": worker,
        "status": "ok",
        "error": None,
        "scheduled_start_epoch": scheduled_epoch,
        "start_skew_ms": round(skew_ms, 3),
        "planned_requests": planned,
        "requests": len(records),
        "sketches": {
            "steps": {str(k): {m: s.to_dict() for m, s in v.items()} for k, v in sorted(by_step.items())},
            "minutes": {str(k): {m: s.to_dict() for m, s in v.items()} for k, v in sorted(by_minute.items())},
        },
        "health": {
            "cpu_percent": round(cpu_percent, 1),
            "loop_lag_ms": probe.sketch.to_dict(),
            "worst_loop_lag_ms_by_minute": {
                str(k): round(v, 3) for k, v in sorted(probe.worst_by_minute.items())
            },
            "late_requests": sum(late_by_minute.values()),
            "late_requests_by_minute": {str(k): v for k, v in sorted(late_by_minute.items())},
        },
    }


def failed_output(wave: int, worker: int, error: str) -> dict[str, Any]:
    """What a worker that could not run reports (the merge counts it, never averages it away)."""
    return {"wave": wave, "worker": worker, "status": "failed", "error": error[:2000]}


def run_worker_blocking(
    config: LoadTestConfig, wave: int, worker: int, test_start_epoch: float, **kwargs: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`run_worker` on a fresh event loop (a Lambda handler, a worker process)."""
    return asyncio.run(run_worker(config, wave, worker, test_start_epoch, **kwargs))
