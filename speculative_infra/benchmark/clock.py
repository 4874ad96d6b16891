"""Time sources used by the engine.

Everything that reads the time or waits goes through a :class:`Clock`, so tests can drive
the load generator with a virtual clock instead of waiting for real.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Monotonic seconds, asynchronous sleeps and wall time."""

    def now(self) -> float:
        """Monotonic time in seconds (only differences are meaningful)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of this clock's time."""
        ...

    def wall(self) -> datetime:
        """Current UTC wall-clock time (for timestamps in results)."""
        ...


class MonotonicClock:
    """The real clock: ``time.perf_counter`` and ``asyncio.sleep``.

    ``perf_counter`` is CLOCK_MONOTONIC on Linux, shared by every process and thread, so
    timestamps taken in transport threads and in a local stand-in server compare directly.
    """

    def now(self) -> float:
        return time.perf_counter()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def wall(self) -> datetime:
        return datetime.now(UTC)


async def sleep_until(clock: Clock, when: float) -> None:
    """Sleep until ``clock.now() >= when`` (returns at once if already past)."""
    delay = when - clock.now()
    if delay > 0:
        await clock.sleep(delay)
