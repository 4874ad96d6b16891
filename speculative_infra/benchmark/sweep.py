"""A sweep over concurrency levels, resumable one level at a time.

The CLI runs a whole sweep with :func:`run_benchmark`. A caller with a hard time limit (the
post-deploy Lambda: 15 minutes per invocation) keeps a :class:`BenchmarkState` between calls and
runs one level per call with :func:`run_next_level` or :func:`run_next_level_blocking`::

    state = new_benchmark(config)                       # first invocation
    state = BenchmarkState.from_dict(saved)             # later invocations
    report = run_next_level_blocking(state, seconds_available=remaining_s - 30)
    save(report.records)                                # per-request rows of that level
    saved = report.state.to_dict()                      # JSON-safe; until report.state.done

Every function here returns a new state and leaves the one it was given unchanged.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field

from .clock import Clock, MonotonicClock
from .config import BenchmarkConfig, ConfigError, Level
from .datasets import dataset_prompts
from .load import ProgressCallback, StopReason, run_level
from .metrics import summarize_level
from .results import BenchmarkResult, LevelResult, RequestRecord, RunStatus
from .schema import Record
from .transports import TargetUnavailable, Transport, make_transport
from .workload import PromptFactory


@dataclass(slots=True, kw_only=True)
class BenchmarkState(Record):
    """Everything needed to continue a sweep in another process: config, results so far, position.

    ``to_dict()`` is JSON-safe and ``BenchmarkState.from_dict(state.to_dict()) == state``, so a
    Lambda can keep it between invocations (in its return value, Step Functions or S3).
    """

    config: BenchmarkConfig
    run_id: str
    result: BenchmarkResult
    next_level_index: int = field(default=0, metadata={"ge": 0})

    @property
    def done(self) -> bool:
        return self.result.status != "running" or self.next_level_index >= len(self.config.load.levels)

    @property
    def next_level(self) -> Level | None:
        return None if self.done else self.config.load.levels[self.next_level_index]

    @property
    def next_concurrency(self) -> int | None:
        """The next level's concurrency (closed loop) or cap (open loop, 0 for none)."""
        level = self.next_level
        return None if level is None else level.concurrency


@dataclass(slots=True)
class LevelReport:
    state: BenchmarkState
    level: LevelResult | None
    """``None`` when the level could not start (the state then carries the error)."""
    records: list[RequestRecord] = field(default_factory=list)


def _timestamp(clock: Clock) -> str:
    return clock.wall().isoformat(timespec="seconds")


def new_benchmark(
    config: BenchmarkConfig, *, clock: Clock | None = None, run_id: str | None = None
) -> BenchmarkState:
    """Start a sweep: fixes the prompt seed (random if unset) and the start time."""
    clock = clock or MonotonicClock()
    workload = config.workload
    if workload.seed is None:
        workload = dataclasses.replace(workload, seed=secrets.randbelow(2**31))
        config = dataclasses.replace(config, workload=workload)
    result = BenchmarkResult(
        label=config.display_label(),
        target=config.target,
        workload=config.workload,
        load=config.load,
        cost=config.cost,
        slo=config.slo,
        rate_sweep=config.rate_sweep,
        started_at=_timestamp(clock),
    )
    return BenchmarkState(config=config, run_id=run_id or secrets.token_hex(4), result=result)


def finish_with_error(state: BenchmarkState, message: str, *, clock: Clock | None = None) -> BenchmarkState:
    """Record that the sweep could not continue (nothing more will run)."""
    new = copy.deepcopy(state)
    new.result.status = "error"
    new.result.error = message
    new.result.finished_at = _timestamp(clock or MonotonicClock())
    return new


_STATUS_BY_STOP: dict[StopReason, RunStatus] = {
    StopReason.ABORTED: "aborted",
    StopReason.INTERRUPTED: "interrupted",
    StopReason.TIME_BUDGET: "partial",
}


async def run_next_level(
    state: BenchmarkState,
    transport: Transport,
    *,
    clock: Clock | None = None,
    deadline: float | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
) -> LevelReport:
    """Run the next level of ``state`` and return the updated state (``state`` is not modified).

    ``deadline`` is in ``clock`` time: at the deadline in-flight requests are cancelled and the
    level is kept as a partial level; the sweep then ends with status ``partial``.
    """
    if state.done:
        raise ValueError("this benchmark has no level left to run")
    clock = clock or MonotonicClock()
    level = state.config.load.levels[state.next_level_index]
    try:
        prompts = PromptFactory(state.config.workload, dataset_prompts(state.config.workload.dataset))
    except ConfigError as exc:
        return LevelReport(finish_with_error(state, str(exc), clock=clock), None)
    try:
        await transport.start(level.connections())
    except TargetUnavailable as exc:
        return LevelReport(finish_with_error(state, str(exc), clock=clock), None)
    if state.config.load.workers > 1:
        from .workers import run_level_in_workers  # only here: it starts processes

        seconds = None if deadline is None else max(0.0, deadline - clock.now())
        run = await run_level_in_workers(
            state.config, level, state.config.load.workers, f"{state.run_id}-", seconds
        )
    else:
        run = await run_level(
            level,
            transport,
            prompts,
            state.config.load,
            clock,
            request_id_prefix=f"{state.run_id}-",
            deadline=deadline,
            stop=stop,
            progress=progress,
        )
    summary, records = summarize_level(
        run,
        state.config.workload,
        state.config.cost,
        transport.api_format.server_token_source,
        state.config.slo,
    )
    new = copy.deepcopy(state)
    new.next_level_index += 1
    result = new.result
    result.levels.append(summary)
    result.client = {**transport.describe(), "workers": str(state.config.load.workers)}
    status = _STATUS_BY_STOP.get(run.stop_reason)
    if status is not None:
        result.status = status
        if run.stop_reason is StopReason.ABORTED:
            result.error = f"{level.describe()}: {run.stop_message}"
    elif new.next_level_index >= len(new.config.load.levels):
        result.status = "complete"
    if result.status != "running":
        result.finished_at = _timestamp(clock)
    return LevelReport(new, summary, records)


async def run_benchmark(
    config: BenchmarkConfig,
    transport: Transport | None = None,
    *,
    clock: Clock | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
    on_level: Callable[[LevelReport], None] | None = None,
    state: BenchmarkState | None = None,
) -> BenchmarkState:
    """Run every level (or the rest of ``state``'s), calling ``on_level`` after each one."""
    clock = clock or MonotonicClock()
    state = state or new_benchmark(config, clock=clock)
    owned = transport is None
    try:
        if transport is None:
            transport = make_transport(state.config, clock)
    except TargetUnavailable as exc:
        return finish_with_error(state, str(exc), clock=clock)
    budget = state.config.load.time_budget_s
    deadline = clock.now() + budget if budget is not None else None
    try:
        while not state.done:
            # Between levels: do not start a level that would stop at once.
            between: RunStatus | None = None
            if stop is not None and stop.is_set():
                between = "interrupted"
            elif deadline is not None and clock.now() >= deadline:
                between = "partial"
            if between is not None:
                state = copy.deepcopy(state)
                state.result.status = between
                state.result.finished_at = _timestamp(clock)
                break
            report = await run_next_level(
                state, transport, clock=clock, deadline=deadline, stop=stop, progress=progress
            )
            state = report.state
            if on_level is not None:
                on_level(report)
    finally:
        if owned:
            await transport.close()
    return state


def run_next_level_blocking(
    state: BenchmarkState,
    *,
    seconds_available: float | None = None,
    transport: Transport | None = None,
) -> LevelReport:
    """Synchronous one-level step for Lambda handlers: builds (and closes) the transport itself."""

    async def step() -> LevelReport:
        clock = MonotonicClock()
        deadline = clock.now() + seconds_available if seconds_available is not None else None
        own = transport is None
        try:
            active = transport if transport is not None else make_transport(state.config, clock)
        except TargetUnavailable as exc:
            return LevelReport(finish_with_error(state, str(exc), clock=clock), None)
        try:
            return await run_next_level(state, active, clock=clock, deadline=deadline)
        finally:
            if own:
                await active.close()

    return asyncio.run(step())
