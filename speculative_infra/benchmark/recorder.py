"""Per-request measurements taken while a response streams in."""

from __future__ import annotations

from dataclasses import dataclass, field

from .config import MAX_TOKENS_PER_REQUEST
from .failures import Failure, FailureClass

USAGE_MARGIN_TOKENS = 16
"""Completion tokens a server may report beyond the max_tokens asked: one speculative step (up to 15
draft tokens and the bonus token) that a server does not trim, or an end-of-sequence token counted."""
CHUNKS_PER_TOKEN = 4
"""At most this many content chunks per reported completion token: a token is ~4 characters of text, so
even a proxy that re-chunks the text per character sends no more."""
MAX_MESSAGE_CHARS = 1000
"""Of an error a server reports in the stream (kept in every request record)."""


def count_problem(value: object) -> str | None:
    """Why a token count a server reported cannot be true (None: it can)."""
    if type(value) is not int:  # true is an int to Python, 20.0 and NaN are floats
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"is {shown}, not a token count (a non-negative integer)"
    if value < 0:
        return f"is negative ({value})"
    if value > MAX_TOKENS_PER_REQUEST:
        shown = str(value) if value < 10**20 else f"~{float(value):.3g}"
        return f"is {shown}, more than one request holds (at most {MAX_TOKENS_PER_REQUEST:,})"
    return None


@dataclass(slots=True)
class StreamRecorder:
    """Timestamps and counters of one request, filled by a transport and an API format.

    All times come from the same clock. ``content_times`` holds the arrival time of every chunk
    that carried generated text (role-only chunks, usage-only chunks and end markers are not
    content), which is what TTFT and ITL are computed from.
    """

    dispatched_at: float
    """When the transport was asked to send (after the payload was built)."""
    sent_at: float | None = None
    """When the request left the HTTP library (after signing and connection checkout)."""
    content_times: list[float] = field(default_factory=list)
    completed_at: float | None = None
    """When the stream ended (end marker, or end of body) or the request failed."""
    first_byte_at: float | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    finish_reason: str | None = None
    done_marker: bool = False
    server_error: str | None = None
    failure: Failure | None = None
    retries: int = 0
    retried_classes: list[str] = field(default_factory=list)
    usage_problem: str | None = None
    """The first token count the server reported that cannot be true (see :func:`count_problem`)."""

    def content(self, at: float) -> None:
        self.content_times.append(at)

    def usage(
        self,
        prompt_tokens: object,
        completion_tokens: object,
        names: tuple[str, str] = ("usage.prompt_tokens", "usage.completion_tokens"),
    ) -> None:
        """Token counts the server reported (None: not reported). vLLM repeats usage on every chunk with
        continuous_usage_stats; the last one wins. A count that cannot be true is not kept: it becomes
        ``usage_problem`` and the request a failure (:func:`usage_failure`)."""
        for value, name, attribute in (
            (prompt_tokens, names[0], "prompt_tokens"),
            (completion_tokens, names[1], "completion_tokens"),
        ):
            if value is None:
                continue
            problem = count_problem(value)
            if problem is None:
                setattr(self, attribute, value)
            elif self.usage_problem is None:
                self.usage_problem = f"{name} {problem}"

    def finish(self, reason: object) -> None:
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def mark_done(self) -> None:
        self.done_marker = True

    def error_in_stream(self, message: str) -> None:
        if self.server_error is None:
            if len(message) > MAX_MESSAGE_CHARS:
                message = message[:MAX_MESSAGE_CHARS] + f"... ({len(message)} characters)"
            self.server_error = message

    @property
    def start(self) -> float:
        """Start of the request as the server saw it: sent_at when known."""
        return self.sent_at if self.sent_at is not None else self.dispatched_at

    @property
    def stream_finished(self) -> bool:
        """The server said the generation ended (marker or finish reason)."""
        return self.done_marker or self.finish_reason is not None


def usage_problem(rec: StreamRecorder, max_output_tokens: int | None) -> str | None:
    """Why the token counts of a finished stream cannot be true, None when they can: a count that is no
    count, more completion tokens than the request allowed (``max_output_tokens``, what it asked for,
    plus USAGE_MARGIN_TOKENS), or far fewer than the chunks of text that streamed in."""
    if rec.usage_problem is not None:
        return rec.usage_problem
    tokens = rec.completion_tokens
    if tokens is None:
        return None
    if max_output_tokens is not None and tokens > max_output_tokens + USAGE_MARGIN_TOKENS:
        return f"the server reported {tokens} completion tokens for a request of at most {max_output_tokens}"
    chunks = len(rec.content_times)
    if chunks > CHUNKS_PER_TOKEN * tokens:
        return f"the server reported {tokens} completion tokens for {chunks} chunks of generated text"
    return None


def usage_failure(rec: StreamRecorder, max_output_tokens: int | None) -> Failure | None:
    """The failure of a request whose usage cannot be true (a protocol problem, ``bad_response``)."""
    problem = usage_problem(rec, max_output_tokens)
    if problem is None:
        return None
    return Failure(FailureClass.BAD_RESPONSE, f"implausible token counts: {problem}")
