"""Failure classes: every failed request is counted under exactly one of these."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FailureClass(StrEnum):
    THROTTLED = "throttled"
    """Refused for rate (HTTP 429, ThrottlingException). Retried when no byte was received."""
    MODEL_NOT_READY = "model_not_ready"
    """SageMaker ModelNotReadyException (429). Retried when no byte was received."""
    TIMEOUT = "timeout"
    """No complete response within the per-request timeout (connect, read or total)."""
    CONNECTION_ERROR = "connection_error"
    """Could not connect (refused, DNS, TLS)."""
    STREAM_BROKEN = "stream_broken"
    """The connection dropped or the body was cut while streaming."""
    STREAM_INCOMPLETE = "stream_incomplete"
    """The body ended cleanly but without the end-of-stream marker or a finish reason."""
    MODEL_STREAM_ERROR = "model_stream_error"
    """SageMaker ModelStreamError event (ModelInvocationTimeExceeded, StreamBroken)."""
    INTERNAL_STREAM_FAILURE = "internal_stream_failure"
    """SageMaker InternalStreamFailure event."""
    MODEL_ERROR = "model_error"
    """SageMaker ModelError (424): the container answered with an error status."""
    SERVER_ERROR_EVENT = "server_error_event"
    """The server reported an error inside the stream (vLLM ``{"error": ...}``, LMI finish_reason error)."""
    CLIENT_ERROR = "client_error"
    """HTTP 4xx other than 429, SageMaker ValidationError (bad request, unknown endpoint)."""
    SERVER_ERROR = "server_error"
    """HTTP 5xx, SageMaker InternalFailure / ServiceUnavailable."""
    CREDENTIALS_ERROR = "credentials_error"
    """No or invalid AWS credentials: nothing can succeed, the sweep stops."""
    BAD_RESPONSE = "bad_response"
    """A chunk or event that could not be parsed (invalid JSON, event-stream checksum), or token counts
    that cannot be true (usage not an integer, negative, above what the request allowed)."""
    CLIENT_EXCEPTION = "client_exception"
    """An unexpected exception in the client; the message says which."""


#: Classes after which no request can succeed, so the level stops at once.
FATAL_CLASSES = frozenset({FailureClass.CREDENTIALS_ERROR})


@dataclass(frozen=True, slots=True)
class Failure:
    failure_class: FailureClass
    message: str
    retryable: bool = False
    """True only when retrying cannot double-count work: refused before any response byte."""

    def describe(self) -> str:
        return f"{self.failure_class.value}: {self.message}"


def classify_http_status(status: int) -> FailureClass:
    if status == 429:
        return FailureClass.THROTTLED
    if status == 408 or status == 504:
        return FailureClass.TIMEOUT
    if 400 <= status < 500:
        return FailureClass.CLIENT_ERROR
    return FailureClass.SERVER_ERROR
