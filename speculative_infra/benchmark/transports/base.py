"""What the load generator needs from a transport."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..formats import ApiFormat
from ..recorder import StreamRecorder


@dataclass(frozen=True, slots=True)
class WireRequest:
    request_id: str
    body: bytes


class TargetUnavailable(Exception):
    """The transport cannot be set up at all (no region, malformed URL): nothing was sent."""


class Transport(Protocol):
    """Sends one streaming request at a time per caller; many callers run concurrently.

    ``send`` fills ``rec`` (timestamps, chunks, usage) and sets ``rec.failure`` instead of raising;
    only cancellation propagates. ``start`` is called before every level with its concurrency so
    connection pools (and threads) can be sized to it.
    """

    api_format: ApiFormat

    async def start(self, concurrency: int) -> None: ...

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None: ...

    async def close(self) -> None: ...

    def describe(self) -> dict[str, str]:
        """Client-side facts worth recording in results (library versions, pool sizes)."""
        ...
