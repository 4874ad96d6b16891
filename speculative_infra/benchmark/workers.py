"""One level's load shared by several processes, each with its own event loop (``--workers N``).

A single Python event loop drives a few hundred streams accurately (docs/benchmarking.md); more
needs more cores. Each worker process runs its share of the level (closed loop: slots, warm-ups and
measured requests split evenly; open loop: the rate split evenly, each worker with its own seeded
arrivals, which together are again Poisson at the full rate when burstiness is 1) against its own
transport, and the parent merges the per-request outcomes into one level. Timestamps are comparable
because every process reads the same clock (``perf_counter`` is CLOCK_MONOTONIC on Linux).
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from .clock import MonotonicClock
from .config import BenchmarkConfig, Level, LoadConfig
from .datasets import dataset_prompts
from .load import LevelRun, StopReason, run_level
from .transports import make_transport
from .workload import PromptFactory


def split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` nearly equal integers (the first ones one larger)."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def shares(level: Level, load: LoadConfig, workers: int) -> list[tuple[Level, LoadConfig, tuple[int, int]]]:
    """Each worker's level, load settings and job offsets (warm-up, measured)."""
    measured = split(load.requests_for(level), workers)
    warmup = split(load.warmup_for(level), workers)
    if level.request_rate is None:
        slots = split(level.concurrency, workers)
        levels = [Level(c) for c in slots]
    else:
        caps = split(level.concurrency, workers) if level.concurrency else [0] * workers
        levels = [Level(cap, level.request_rate / workers) for cap in caps]
    out = []
    measured_from = warmup_from = 0
    for i in range(workers):
        if measured[i] == 0 or (level.request_rate is None and levels[i].concurrency == 0):
            continue  # more workers than slots or requests: the extra ones have nothing to do
        share_load = dataclasses.replace(load, requests_per_level=measured[i], warmup_requests=warmup[i])
        out.append((levels[i], share_load, (warmup_from, measured_from)))
        measured_from += measured[i]
        warmup_from += warmup[i]
    return out


def _run_share(
    config: dict[str, Any],
    level: tuple[int, float | None],
    load: dict[str, Any],
    offsets: tuple[int, int],
    prefix: str,
    seconds: float | None,
) -> LevelRun:
    """In a worker process: one share of a level, on a fresh event loop and transport."""
    benchmark = BenchmarkConfig.from_dict(config)
    share_load = LoadConfig.from_dict(load)
    clock = MonotonicClock()

    async def main() -> LevelRun:
        transport = make_transport(benchmark, clock)
        share = Level(*level)
        try:
            await transport.start(share.connections())
            prompts = PromptFactory(benchmark.workload, dataset_prompts(benchmark.workload.dataset))
            deadline = clock.now() + seconds if seconds is not None else None
            return await run_level(
                share,
                transport,
                prompts,
                share_load,
                clock,
                request_id_prefix=prefix,
                deadline=deadline,
                job_offset=offsets,
            )
        finally:
            await transport.close()

    return asyncio.run(main())


async def run_level_in_workers(
    config: BenchmarkConfig, level: Level, workers: int, prefix: str, seconds: float | None
) -> LevelRun:
    """Run ``level`` in ``workers`` processes and merge what they measured."""
    plan = shares(level, config.load, workers)
    loop = asyncio.get_running_loop()
    context = multiprocessing.get_context("spawn")  # no inherited event loop, sockets or threads
    with ProcessPoolExecutor(max_workers=len(plan), mp_context=context) as pool:
        futures = [
            loop.run_in_executor(
                pool,
                _run_share,
                config.to_dict(),
                (share.concurrency, share.request_rate),
                share_load.to_dict(),
                offsets,
                f"{prefix}w{i}-",
                seconds,
            )
            for i, (share, share_load, offsets) in enumerate(plan)
        ]
        runs = await asyncio.gather(*futures)
    return merge(level, runs)


def merge(level: Level, runs: list[LevelRun]) -> LevelRun:
    """One level from the workers' runs: every outcome, the earliest start and latest end."""
    reasons = [run.stop_reason for run in runs]
    reason = next(
        (r for r in (StopReason.ABORTED, StopReason.INTERRUPTED, StopReason.TIME_BUDGET) if r in reasons),
        StopReason.COMPLETE,
    )
    message = next((run.stop_message for run in runs if run.stop_reason is reason and run.stop_message), None)
    return LevelRun(
        level=level,
        started_at=min(run.started_at for run in runs),
        ended_at=max(run.ended_at for run in runs),
        planned_warmup=sum(run.planned_warmup for run in runs),
        planned_measured=sum(run.planned_measured for run in runs),
        outcomes=[outcome for run in runs for outcome in run.outcomes],
        stop_reason=reason,
        stop_message=message,
    )
