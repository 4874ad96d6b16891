"""A pool of daemon threads that run blocking calls for asyncio code.

boto3 is synchronous: one streaming request occupies one thread for its whole life, so a level
at concurrency C needs C threads. ``concurrent.futures.ThreadPoolExecutor`` joins its threads
at interpreter exit, which would make Ctrl-C wait for every open stream to time out; daemon
threads let the process exit once partial results are written.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import TypeVar, cast

T = TypeVar("T")

_Job = tuple[Callable[[], object], "asyncio.Future[object]", asyncio.AbstractEventLoop]


def _deliver_result(future: asyncio.Future[object], value: object) -> None:
    if not future.done():  # the awaiting task may have been cancelled meanwhile
        future.set_result(value)


def _deliver_error(future: asyncio.Future[object], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


class DaemonThreadPool:
    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []

    @property
    def size(self) -> int:
        return len(self._threads)

    def ensure(self, workers: int) -> None:
        """Grow the pool to at least ``workers`` threads (it never shrinks while open)."""
        while len(self._threads) < workers:
            thread = threading.Thread(
                target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    async def run(self, fn: Callable[[], T]) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()
        self._jobs.put((fn, future, loop))
        return cast(T, await future)

    def close(self) -> None:
        for _ in self._threads:
            self._jobs.put(None)
        self._threads = []

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, future, loop = job
            try:
                value = fn()
            except BaseException as exc:  # handed to the awaiting coroutine, not swallowed
                _post(loop, _deliver_error, future, exc)
            else:
                _post(loop, _deliver_result, future, value)


def _post(
    loop: asyncio.AbstractEventLoop,
    deliver: Callable[[asyncio.Future[object], T], None],
    future: asyncio.Future[object],
    value: T,
) -> None:
    # RuntimeError: the loop is closed, nobody is waiting for this result any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(deliver, future, value)
