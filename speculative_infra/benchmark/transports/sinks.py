"""What the HTTP/1.1 client hands the bytes of a streamed response to: one sink per request.

A sink keeps the error body of a non-200 answer, and otherwise feeds the API format's decoder with the
time each network read arrived. The SageMaker sink first unwraps the event stream.
"""

from __future__ import annotations

from collections.abc import Callable

from ..failures import Failure, FailureClass
from ..formats import ApiFormat, BadChunk, Decoder
from ..recorder import StreamRecorder
from .eventstream import EventStreamDecoder, EventStreamError, HeaderValue

MAX_ERROR_BODY = 64 * 1024
# An ``exception`` or ``error`` message of the event stream (headers, payload) as a failure.
ExceptionClassifier = Callable[[dict[str, HeaderValue], bytes], Failure]


class StreamSink:
    """Server-sent events or JSON lines straight in the HTTP body (vLLM's OpenAI server)."""

    def __init__(self, rec: StreamRecorder, fmt: ApiFormat) -> None:
        self.rec = rec
        self.fmt = fmt
        self.decoder: Decoder = fmt.decoder()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.error_body = bytearray()
        self.failure: Failure | None = None

    def head(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = headers

    def body(self, data: bytes, at: float) -> bool:
        if self.status != 200:
            if len(self.error_body) < MAX_ERROR_BODY:
                self.error_body += data
            return True
        return self.payload(data, at)

    def payload(self, data: bytes, at: float) -> bool:
        rec = self.rec
        if rec.first_byte_at is None:
            rec.first_byte_at = at
        try:
            for event in self.decoder.feed(data):
                self.fmt.consume(event, at, rec)
        except BadChunk as exc:
            self.failure = Failure(FailureClass.BAD_RESPONSE, str(exc))
            return False
        if rec.done_marker and rec.completed_at is None:
            rec.completed_at = at
        return True

    def end(self, at: float) -> None:
        if self.status != 200 or self.failure is not None:
            return
        try:
            for event in self.decoder.close():
                self.fmt.consume(event, at, self.rec)
        except BadChunk as exc:
            self.failure = Failure(FailureClass.BAD_RESPONSE, str(exc))


class EventStreamSink(StreamSink):
    """SageMaker's ``application/vnd.amazon.eventstream``: PayloadPart events carry the model's bytes."""

    def __init__(self, rec: StreamRecorder, fmt: ApiFormat, classify: ExceptionClassifier) -> None:
        super().__init__(rec, fmt)
        self.events = EventStreamDecoder()
        self._classify = classify

    def body(self, data: bytes, at: float) -> bool:
        if self.status != 200:
            return super().body(data, at)
        try:
            for headers, payload in self.events.feed(data):
                if headers.get(":message-type") != "event":
                    self.failure = self._classify(headers, payload)
                    return False
                if headers.get(":event-type") == "PayloadPart" and not self.payload(payload, at):
                    return False
        except EventStreamError as exc:
            self.failure = Failure(FailureClass.BAD_RESPONSE, f"EventStreamError: {exc}")
            return False
        return True
