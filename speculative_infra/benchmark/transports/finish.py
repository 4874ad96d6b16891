"""End-of-stream checks shared by the transports."""

from __future__ import annotations

from ..failures import Failure, FailureClass
from ..recorder import StreamRecorder


def finish_stream(rec: StreamRecorder) -> None:
    """Turn a stream that ended without failing into a success or a classified failure."""
    if rec.failure is not None:
        return
    if rec.server_error is not None:
        rec.failure = Failure(FailureClass.SERVER_ERROR_EVENT, rec.server_error)
    elif not rec.stream_finished:
        rec.failure = Failure(
            FailureClass.STREAM_INCOMPLETE, "the stream ended without an end marker or a finish reason"
        )
    elif not rec.content_times:
        rec.failure = Failure(FailureClass.BAD_RESPONSE, "the stream finished without any generated text")
