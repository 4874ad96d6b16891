"""The load of one level: a closed loop at a concurrency, or open-loop arrivals at a request rate.

Closed loop: ``concurrency`` slots each run one request at a time and start the next as soon as
theirs ends (the semaphore-refill model of ``vllm bench serve --max-concurrency``). A level runs
``warmup`` uncounted requests, then the measured ones; with ``sustain_load`` the slots keep
sending uncounted filler requests until the last measured request ends, so the measured
requests all see the same load, and the fillers are then cancelled.

Open loop: requests arrive at times drawn before the level starts (gamma-distributed gaps with
mean 1 / rate, shape ``burstiness``; 1 is a Poisson process, as ``vllm bench serve`` draws them) and
scheduled on the absolute clock, whatever the server does; ``max_concurrency`` optionally caps the
open requests. Each request records how late it left against its scheduled arrival (reported as
client lag).
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .clock import Clock, sleep_until
from .config import Level, LoadConfig
from .failures import FATAL_CLASSES, Failure, FailureClass
from .recorder import StreamRecorder, usage_failure
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
    expected_output_tokens: int | None = None
    """What this request asked to generate, when it differs from the workload's (dataset records)."""
    estimated_input_tokens: int | None = None
    """Its prompt's estimated tokens, when it differs from the workload's (dataset records)."""
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
    request_rate: float | None = None


ProgressCallback = Callable[[LevelProgress], None]


@dataclass(slots=True)
class LevelRun:
    level: Level
    started_at: float
    ended_at: float
    planned_warmup: int
    planned_measured: int
    outcomes: list[RequestOutcome]
    stop_reason: StopReason
    stop_message: str | None


async def run_level(
    level: Level | int,
    transport: Transport,
    prompts: PromptFactory,
    load: LoadConfig,
    clock: Clock,
    *,
    request_id_prefix: str = "",
    deadline: float | None = None,
    stop: asyncio.Event | None = None,
    progress: ProgressCallback | None = None,
    job_offset: tuple[int, int] = (0, 0),
    arrivals: Sequence[tuple[int, float]] | None = None,
    origin: float | None = None,
) -> LevelRun:
    """Run one level. ``deadline`` (clock time) and ``stop`` end it early, keeping what finished.

    ``job_offset`` numbers the warm-up and measured requests from these indices (a worker process
    running its share of a level takes the prompts a single process would give those requests).
    ``arrivals`` (open loop only) replaces the level's own draw with a given schedule: measured requests
    ``(prompt index, seconds from the level's start)``, no warm-up (a distributed load test's slice).
    ``origin`` (clock time) is the level's start when given: bodies are built before it, and arrivals
    count from it even when the preparation ends later (those arrivals then leave late, and say so).

    The transport must already be started for this level.
    """
    level = level if isinstance(level, Level) else Level(level)
    if arrivals is not None and level.request_rate is None:
        raise ValueError("arrivals apply to an open-loop level (one with a request_rate)")
    run = _Level(
        level,
        transport,
        prompts,
        load,
        clock,
        request_id_prefix,
        deadline,
        stop,
        progress,
        job_offset,
        arrivals,
        origin,
    )
    return await run.run()


def arrival_offsets(rate: float, burstiness: float, count: int, seed: str) -> list[float]:
    """Seconds from the level start at which ``count`` open-loop requests arrive (the first at 0).

    Gaps are gamma-distributed with shape ``burstiness`` and mean ``1 / rate``, as vllm bench serve
    draws them; a seeded generator makes a rerun (or a resumed sweep) send on the same schedule.
    """
    rng = random.Random(seed)
    scale = 1.0 / (rate * burstiness)
    offsets, at = [], 0.0
    for _ in range(count):
        offsets.append(at)
        at += rng.gammavariate(burstiness, scale)
    return offsets


class _Level:
    def __init__(
        self,
        level: Level,
        transport: Transport,
        prompts: PromptFactory,
        load: LoadConfig,
        clock: Clock,
        request_id_prefix: str,
        deadline: float | None,
        stop: asyncio.Event | None,
        progress: ProgressCallback | None,
        job_offset: tuple[int, int] = (0, 0),
        arrivals: Sequence[tuple[int, float]] | None = None,
        origin: float | None = None,
    ) -> None:
        self._origin = origin
        self._level = level
        self._c = level.concurrency
        self._key = level.concurrency if level.request_rate is None else round(level.request_rate * 1000)
        self._transport = transport
        self._prompts = prompts
        self._load = load
        self._clock = clock
        self._prefix = request_id_prefix
        self._deadline = deadline
        self._stop = stop
        self._progress = progress
        self._warmup_total = load.warmup_for(level)
        self._measured_total = load.requests_for(level)
        self._abort_after = load.abort_threshold_for(level)
        warmup_from, measured_from = job_offset
        self._jobs = [(Phase.WARMUP, warmup_from + i) for i in range(self._warmup_total)] + [
            (Phase.MEASURED, measured_from + i) for i in range(self._measured_total)
        ]
        self._given_offsets: list[float] | None = None
        if arrivals is not None:
            self._warmup_total, self._measured_total = 0, len(arrivals)
            self._jobs = [(Phase.MEASURED, index) for index, _ in arrivals]
            self._given_offsets = [offset for _, offset in arrivals]
        # Prompts and payloads are built before the clock starts: generating them on the fly
        # would delay other requests' sends and reads on a single-threaded event loop.
        fmt = transport.api_format
        built = [prompts.prompt(self._key, phase, i) for phase, i in self._jobs]
        self._bodies = [fmt.body(p) for p in built]
        self._expected = [(p.output_tokens, p.input_tokens) for p in built]
        self._default_output = prompts.output_tokens  # max_tokens where a prompt does not set its own
        self._next = 0
        self._fillers = 0
        self._warmup_done = 0
        self._measured_done = 0
        self._measured_failed = 0
        self._successes = 0
        self._consecutive_failures = 0
        self._halted = False
        self._halted_event = asyncio.Event()
        self._stop_reason: StopReason | None = None
        self._stop_message: str | None = None
        self._in_flight: set[asyncio.Task[object]] = set()  # workers inside a send
        self._outcomes: list[RequestOutcome] = []
        self._started = 0.0

    async def run(self) -> LevelRun:
        # A full garbage collection scans every object in the process (boto3 and the rest:
        # ~100k) and stalls all streams for 20-30 ms. Collect now, before the clock starts, and
        # freeze the survivors so collections during the level only scan what the level creates.
        gc.collect()
        gc.freeze()
        self._started = self._clock.now() if self._origin is None else self._origin
        if self._level.request_rate is None:
            workers = [asyncio.ensure_future(self._worker(slot)) for slot in range(self._c)]
        else:
            workers = [asyncio.ensure_future(self._arrivals(self._level.request_rate))]
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
            level=self._level,
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
        self._halted_event.set()
        self._stop_reason = reason
        self._stop_message = message
        for task in list(self._in_flight):
            task.cancel()

    def _next_job(self) -> tuple[Phase, int, bytes, tuple[int | None, int | None]] | None:
        if self._halted:
            return None
        if self._deadline is not None and self._clock.now() >= self._deadline:
            self._halt(StopReason.TIME_BUDGET, "time budget reached")
            return None
        if self._next < len(self._jobs):
            phase, index = self._jobs[self._next]
            body, self._bodies[self._next] = self._bodies[self._next], b""
            expected = self._expected[self._next]
            self._next += 1
            return phase, index, body, expected
        open_loop = self._level.request_rate is not None
        if self._load.sustain_load and not open_loop and self._measured_done < self._measured_total:
            index = self._fillers
            self._fillers += 1
            prompt = self._prompts.prompt(self._key, Phase.FILLER, index)
            body = self._transport.api_format.body(prompt)
            return Phase.FILLER, index, body, (prompt.output_tokens, prompt.input_tokens)
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

    async def _arrivals(self, rate: float) -> None:
        """Open loop: one task per arrival, started at its scheduled time whatever the others do."""
        offsets = self._given_offsets
        if offsets is None:
            offsets = arrival_offsets(
                rate, self._load.burstiness, len(self._jobs), f"arrivals:{self._prefix}{self._level.key()}"
            )
        cap = asyncio.Semaphore(self._c) if self._c else None
        arrivals: list[asyncio.Future[None]] = []
        halted = asyncio.ensure_future(self._halted_event.wait())
        try:
            for slot, offset in enumerate(offsets):
                due = self._started + offset
                if due > self._clock.now():
                    sleeper = asyncio.ensure_future(sleep_until(self._clock, due))
                    await asyncio.wait((sleeper, halted), return_when=asyncio.FIRST_COMPLETED)
                    sleeper.cancel()
                job = self._next_job()
                if job is None:
                    break
                arrivals.append(asyncio.ensure_future(self._arrive(slot, job, due, cap)))
            await asyncio.gather(*arrivals)
        finally:
            halted.cancel()
            for arrival in arrivals:
                arrival.cancel()

    async def _arrive(
        self,
        slot: int,
        job: tuple[Phase, int, bytes, tuple[int | None, int | None]],
        due: float,
        cap: asyncio.Semaphore | None,
    ) -> None:
        # ``due`` stands where a closed loop has the moment its slot was freed: lateness is client lag.
        if cap is None:
            outcome = await self._issue(slot, *job, due)
        else:
            async with cap:
                if self._halted:
                    return  # the level ended while this arrival waited for a place: never sent
                outcome = await self._issue(slot, *job, due)
        self._record(outcome)

    async def _issue(
        self,
        slot: int,
        phase: Phase,
        index: int,
        body: bytes,
        expected: tuple[int | None, int | None],
        freed_at: float,
    ) -> RequestOutcome:
        request = WireRequest(f"{self._prefix}{self._level.key()}-{phase.value[0]}{index}", body)
        retried: list[str] = []
        first_attempt_at: float | None = None
        while True:
            rec = StreamRecorder(
                dispatched_at=self._clock.now(), retries=len(retried), retried_classes=retried
            )
            cancelled = await self._send(request, rec)
            if not cancelled and rec.failure is None:
                # Token counts from the server are checked, not trusted: 1e30 tokens is a protocol problem.
                rec.failure = usage_failure(rec, expected[0] or self._default_output)
            if first_attempt_at is None:
                first_attempt_at = rec.start
            outcome = RequestOutcome(
                phase,
                index,
                request.request_id,
                slot,
                freed_at,
                first_attempt_at,
                rec,
                expected_output_tokens=expected[0],
                estimated_input_tokens=expected[1],
            )
            if cancelled:
                outcome.cancelled = True
                if rec.completed_at is None:
                    rec.completed_at = self._clock.now()
                return outcome
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

    async def _send(self, request: WireRequest, rec: StreamRecorder) -> bool:
        """Send in the worker's own task (True: the level cancelled it).

        No task per request: a task would start in the next turn of the event loop, and another turn
        would pass before the worker saw it end, each turn behind every other stream's reads. Awaited
        here, the next request leaves in the same turn as the read that ended the previous one, so a
        burst of completions does not become client lag.
        """
        worker = asyncio.current_task()
        assert worker is not None
        self._in_flight.add(worker)
        try:
            await self._transport.send(request, rec)
        except asyncio.CancelledError:
            if not self._halted:
                raise  # cancelled from outside the level (Ctrl-C, the caller): not ours to absorb
            worker.uncancel()
            return True
        except Exception as error:
            # A transport bug must not take the whole level down: it is one failed request.
            rec.failure = Failure(FailureClass.CLIENT_EXCEPTION, f"{type(error).__name__}: {error}")
            if rec.completed_at is None:
                rec.completed_at = self._clock.now()
        finally:
            self._in_flight.discard(worker)
        return False

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
                    request_rate=self._level.request_rate,
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
