"""Closed-loop load at one concurrency level.

``concurrency`` slots each run one request at a time and start the next as soon as theirs
ends (the semaphore-refill model of ``vllm bench serve --max-concurrency``). A level runs
``warmup`` uncounted requests, then the measured ones; with ``sustain_load`` the slots keep
sending uncounted filler requests until the last measured request ends, so the measured
requests all see the same load, and the fillers are then cancelled.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from .clock import Clock, sleep_until
from .config import LoadConfig
from .failures import FATAL_CLASSES, Failure, FailureClass
from .recorder import StreamRecorder
from .transports.base import Transport, WireRequest
from .workload import Phase, PromptFactory


class StopReason(StrEnum):
    COMPLETE = "complete"
    TIME_BUDGET = "time_budget"
    INTERRUPTED = "interrupted"
    ABORTED = "aborted"


@dataclass(slots=True)
class RequestOutcome:
    phase: Phase
    index: int
    request_id: str
    slot: int
    slot_freed_at: float
    """When the slot became free for this request (previous completion, or the level/ramp start)."""
    first_attempt_at: float
    """When the first attempt left the client (client lag is measured to here)."""
    rec: StreamRecorder
    cancelled: bool = False
    """Cancelled by the engine (filler after the last measured request, time budget, Ctrl-C)."""


@dataclass(frozen=True, slots=True)
class LevelProgress:
    concurrency: int
    warmup_total: int
    warmup_done: int
    measured_total: int
    measured_done: int
    measured_failed: int
    elapsed_s: float


ProgressCallback = Callable[[LevelProgress], None]


@dataclass(slots=True)
class LevelRun:
    concurrency: int
    started_at: float
    ended_at: float
    planned_warmup: int
    planned_measured: int
    outcomes: list[RequestOutcome]
    stop_reason: StopReason
    stop_message: str | None


async def run_level(
    concurrency: int,
    transport: Transport,
    prompts: PromptFactory,
    load: LoadConfig,
    clock: Clock,
    *,
    request_id_prefix: str = "",
    deadline: float | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
) -> LevelRun:
    """Run one level. ``deadline`` (clock time) and ``stop`` end it early, keeping what finished.

    The transport must already be started for this concurrency.
    """
    level = _Level(concurrency, transport, prompts, load, clock, request_id_prefix, deadline, stop, progress)
    return await level.run()


class _Level:
    def __init__(
        self,
        concurrency: int,
        transport: Transport,
        prompts: PromptFactory,
        load: LoadConfig,
        clock: Clock,
        request_id_prefix: str,
        deadline: float | None,
        stop: asyncio.Event | None,
        progress: ProgressCallback | None,
    ) -> None:
        self._c = concurrency
        self._transport = transport
        self._prompts = prompts
        self._load = load
        self._clock = clock
        self._prefix = request_id_prefix
        self._deadline = deadline
        self._stop = stop
        self._progress = progress
        self._warmup_total = load.warmup_for(concurrency)
        self._measured_total = load.requests_for(concurrency)
        self._abort_after = load.abort_threshold_for(concurrency)
        self._jobs = [(Phase.WARMUP, i) for i in range(self._warmup_total)] + [
            (Phase.MEASURED, i) for i in range(self._measured_total)
        ]
        # Prompts and payloads are built before the clock starts: generating them on the fly
        # would delay other requests' sends and reads on a single-threaded event loop.
        fmt = transport.api_format
        self._bodies = [fmt.body(prompts.prompt(concurrency, phase, i)) for phase, i in self._jobs]
        self._next = 0
        self._fillers = 0
        self._warmup_done = 0
        self._measured_done = 0
        self._measured_failed = 0
        self._successes = 0
        self._consecutive_failures = 0
        self._halted = False
        self._stop_reason: StopReason | None = None
        self._stop_message: str | None = None
        self._in_flight: set[asyncio.Future[None]] = set()
        self._outcomes: list[RequestOutcome] = []
        self._started = 0.0

    async def run(self) -> LevelRun:
        # A full garbage collection scans every object in the process (aiohttp, boto3 and the rest:
        # ~100k) and stalls all streams for 20-30 ms. Collect now, before the clock starts, and
        # freeze the survivors so collections during the level only scan what the level creates.
        gc.collect()
        gc.freeze()
        self._started = self._clock.now()
        workers = [asyncio.ensure_future(self._worker(slot)) for slot in range(self._c)]
        watcher = asyncio.ensure_future(self._watch())
        try:
            await asyncio.gather(*workers)
        finally:
            watcher.cancel()
            for task in (*workers, *self._in_flight):
                task.cancel()
            await asyncio.gather(watcher, *workers, return_exceptions=True)
            gc.unfreeze()
        return LevelRun(
            concurrency=self._c,
            started_at=self._started,
            ended_at=self._clock.now(),
            planned_warmup=self._warmup_total,
            planned_measured=self._measured_total,
            outcomes=self._outcomes,
            stop_reason=self._stop_reason or StopReason.COMPLETE,
            stop_message=self._stop_message,
        )

    async def _watch(self) -> None:
        waiters: list[asyncio.Future[object]] = []
        if self._stop is not None:
            waiters.append(asyncio.ensure_future(self._stop.wait()))
        if self._deadline is not None:
            waiters.append(asyncio.ensure_future(sleep_until(self._clock, self._deadline)))
        if not waiters:
            return
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        if self._stop is not None and self._stop.is_set():
            self._halt(StopReason.INTERRUPTED, "interrupted")
        else:
            self._halt(StopReason.TIME_BUDGET, "time budget reached")

    def _halt(self, reason: StopReason, message: str | None) -> None:
        if self._halted:
            return
        self._halted = True
        self._stop_reason = reason
        self._stop_message = message
        for task in list(self._in_flight):
            task.cancel()

    def _next_job(self) -> tuple[Phase, int, bytes] | None:
        if self._halted:
            return None
        if self._deadline is not None and self._clock.now() >= self._deadline:
            self._halt(StopReason.TIME_BUDGET, "time budget reached")
            return None
        if self._next < len(self._jobs):
            phase, index = self._jobs[self._next]
            body, self._bodies[self._next] = self._bodies[self._next], b""
            self._next += 1
            return phase, index, body
        if self._load.sustain_load and self._measured_done < self._measured_total:
            index = self._fillers
            self._fillers += 1
            prompt = self._prompts.prompt(self._c, Phase.FILLER, index)
            return Phase.FILLER, index, self._transport.api_format.body(prompt)
        return None

    async def _worker(self, slot: int) -> None:
        freed_at = self._started
        if self._load.ramp_up_s > 0 and slot:
            freed_at = self._started + self._load.ramp_up_s * slot / self._c
            await sleep_until(self._clock, freed_at)
        while (job := self._next_job()) is not None:
            outcome = await self._issue(slot, *job, freed_at)
            self._record(outcome)
            done_at = outcome.rec.completed_at
            freed_at = done_at if done_at is not None else self._clock.now()

    async def _issue(
        self, slot: int, phase: Phase, index: int, body: bytes, freed_at: float
    ) -> RequestOutcome:
        request = WireRequest(f"{self._prefix}c{self._c}-{phase.value[0]}{index}", body)
        retried: list[str] = []
        first_attempt_at: float | None = None
        while True:
            rec = StreamRecorder(
                dispatched_at=self._clock.now(), retries=len(retried), retried_classes=retried
            )
            task = asyncio.ensure_future(self._transport.send(request, rec))
            self._in_flight.add(task)
            try:
                await asyncio.wait((task,))
            except asyncio.CancelledError:
                task.cancel()
                raise
            finally:
                self._in_flight.discard(task)
            if first_attempt_at is None:
                first_attempt_at = rec.start
            outcome = RequestOutcome(phase, index, request.request_id, slot, freed_at, first_attempt_at, rec)
            if task.cancelled():
                outcome.cancelled = True
                if rec.completed_at is None:
                    rec.completed_at = self._clock.now()
                return outcome
            if (error := task.exception()) is not None:
                # A transport bug must not take the whole level down: it is one failed request.
                rec.failure = Failure(FailureClass.CLIENT_EXCEPTION, f"{type(error).__name__}: {error}")
                if rec.completed_at is None:
                    rec.completed_at = self._clock.now()
            failure = rec.failure
            if (
                failure is None
                or not failure.retryable
                or len(retried) >= self._load.max_retries
                or self._halted
            ):
                return outcome
            retried.append(failure.failure_class.value)
            await self._clock.sleep(self._load.retry_backoff_s * 2 ** (len(retried) - 1))

    def _record(self, outcome: RequestOutcome) -> None:
        self._outcomes.append(outcome)
        phase = outcome.phase
        failure = outcome.rec.failure
        if phase is Phase.WARMUP:
            self._warmup_done += 1
        if phase is Phase.MEASURED:
            self._measured_done += 1
            if failure is not None and not outcome.cancelled:
                self._measured_failed += 1
        if phase is not Phase.FILLER and not outcome.cancelled:
            if failure is None:
                self._successes += 1
                self._consecutive_failures = 0
            else:
                self._consecutive_failures += 1
        if self._progress is not None and phase is not Phase.FILLER:
            self._progress(
                LevelProgress(
                    concurrency=self._c,
                    warmup_total=self._warmup_total,
                    warmup_done=self._warmup_done,
                    measured_total=self._measured_total,
                    measured_done=self._measured_done,
                    measured_failed=self._measured_failed,
                    elapsed_s=self._clock.now() - self._started,
                )
            )
        if phase is Phase.MEASURED and self._measured_done >= self._measured_total:
            # Everything measured has ended: fillers and stragglers have done their job.
            self._halt(StopReason.COMPLETE, None)
            return
        if failure is None or outcome.cancelled or phase is Phase.FILLER:
            return
        if failure.failure_class in FATAL_CLASSES:
            self._halt(StopReason.ABORTED, failure.describe())
        elif self._successes == 0 and self._consecutive_failures >= self._abort_after:
            self._halt(
                StopReason.ABORTED,
                f"{self._consecutive_failures} requests failed and none succeeded; "
                f"last: {failure.describe()}",
            )
