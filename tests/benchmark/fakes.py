"""Virtual clock and scripted transport: load-generator tests without real time or sockets."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

from speculative_infra.benchmark.config import WorkloadConfig
from speculative_infra.benchmark.failures import Failure, FailureClass
from speculative_infra.benchmark.formats import ApiFormat, OpenAIChatFormat
from speculative_infra.benchmark.recorder import StreamRecorder
from speculative_infra.benchmark.transports.base import WireRequest

T = TypeVar("T")


class FakeClock:
    """Time stands still until every task is blocked on ``sleep``; then it jumps to the next wake-up."""

    def __init__(self) -> None:
        self.t = 1000.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.t + max(0.0, seconds), next(self._seq), future))
        await future

    def wall(self) -> datetime:
        return datetime(2025, 1, 1, tzinfo=UTC)

    async def drive(self, awaitable: Awaitable[T]) -> T:
        task = asyncio.ensure_future(awaitable)
        while not task.done():
            for _ in range(50):  # let every runnable callback chain settle
                await asyncio.sleep(0)
                if task.done():
                    break
            if task.done():
                break
            while self._sleepers:
                when, _, future = heapq.heappop(self._sleepers)
                if not future.done():
                    self.t = max(self.t, when)
                    future.set_result(None)
                    break
            else:
                raise AssertionError("deadlock: tasks are blocked on something other than the clock")
        return task.result()


Plan = Callable[[int, WireRequest], str]
"""Given the attempt number (0-based, across all requests) and the request: "ok" or a failure class."""


class FakeTransport:
    """Streams ``output_tokens`` with exact virtual timings, or fails as ``plan`` says."""

    def __init__(
        self,
        clock: FakeClock,
        workload: WorkloadConfig,
        *,
        ttft: float = 0.1,
        interval: float = 0.01,
        tokens_per_chunk: int = 1,
        send_delay: float = 0.0,
        plan: Plan | None = None,
        report_usage: bool = True,
    ) -> None:
        self.api_format: ApiFormat = OpenAIChatFormat(workload)
        self._clock = clock
        self._workload = workload
        self.ttft = ttft
        self.interval = interval
        self.tokens_per_chunk = tokens_per_chunk
        self.send_delay = send_delay
        self._plan = plan or (lambda n, r: "ok")
        self.report_usage = report_usage
        self.attempts = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.started_with: list[int] = []
        self.request_ids: list[str] = []
        self.bodies: list[bytes] = []
        self.closed = False

    async def start(self, concurrency: int) -> None:
        self.started_with.append(concurrency)

    async def close(self) -> None:
        self.closed = True

    def describe(self) -> dict[str, str]:
        return {"transport": "fake"}

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        clock = self._clock
        attempt = self.attempts
        self.attempts += 1
        self.request_ids.append(request.request_id)
        self.bodies.append(request.body)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.send_delay:
                await clock.sleep(self.send_delay)
            rec.sent_at = clock.now()
            action = self._plan(attempt, request)
            if action != "ok":
                failure_class = FailureClass(action)
                rec.failure = Failure(
                    failure_class, f"scripted {action}", retryable=failure_class is FailureClass.THROTTLED
                )
                rec.completed_at = clock.now()
                return
            total = self._workload.output_tokens
            chunks = -(-total // self.tokens_per_chunk)
            await clock.sleep(self.ttft)
            rec.content(clock.now())
            for _ in range(chunks - 1):
                await clock.sleep(self.interval)
                rec.content(clock.now())
            if self.report_usage:
                rec.usage(self._workload.input_tokens, total)
            rec.finish("length")
            rec.mark_done()
            rec.completed_at = clock.now()
        finally:
            self.in_flight -= 1
