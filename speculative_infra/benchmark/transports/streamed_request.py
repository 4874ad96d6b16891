"""One streamed request through the HTTP/1.1 client, every outcome classified into its recorder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..clock import Clock
from ..failures import Failure, FailureClass
from ..recorder import StreamRecorder
from .finish import finish_stream
from .http1 import ConnectionPool, HttpError
from .sinks import StreamSink


async def stream_request(
    pool: ConnectionPool,
    head: bytes,
    body: bytes,
    sink: StreamSink,
    rec: StreamRecorder,
    *,
    timeout_s: float,
    clock: Clock,
    error_answer: Callable[[StreamSink], Failure],
) -> None:
    """Send, read the answer into ``sink``, and leave ``rec`` with its failure (or none): broken or
    timed-out transfers, a non-200 answer (``error_answer`` reads its body), a bad chunk, or a stream
    that ended without finishing."""

    def sent(at: float) -> None:
        rec.sent_at = at

    try:
        async with asyncio.timeout(timeout_s):
            await pool.exchange(head, body, sink, sent)
    except TimeoutError:
        rec.failure = Failure(FailureClass.TIMEOUT, f"no complete response within {timeout_s:g} s")
    except HttpError as exc:
        failure_class = FailureClass.STREAM_BROKEN if exc.started else FailureClass.CONNECTION_ERROR
        rec.failure = Failure(failure_class, str(exc))
    finally:
        if rec.completed_at is None:
            rec.completed_at = clock.now()
    if rec.failure is not None:
        return
    if sink.status != 200:
        rec.failure = error_answer(sink)
        return
    rec.failure = sink.failure
    finish_stream(rec)
