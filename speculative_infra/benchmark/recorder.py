"""Per-request measurements taken while a response streams in."""

from __future__ import annotations

from dataclasses import dataclass, field

from .failures import Failure


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

    def content(self, at: float) -> None:
        self.content_times.append(at)

    def usage(self, prompt_tokens: object, completion_tokens: object) -> None:
        # vLLM repeats usage on every chunk with continuous_usage_stats; the last one wins.
        if isinstance(completion_tokens, int):
            self.completion_tokens = completion_tokens
        if isinstance(prompt_tokens, int):
            self.prompt_tokens = prompt_tokens

    def finish(self, reason: object) -> None:
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def mark_done(self) -> None:
        self.done_marker = True

    def error_in_stream(self, message: str) -> None:
        if self.server_error is None:
            self.server_error = message

    @property
    def start(self) -> float:
        """Start of the request as the server saw it: sent_at when known."""
        return self.sent_at if self.sent_at is not None else self.dispatched_at

    @property
    def stream_finished(self) -> bool:
        """The server said the generation ended (marker or finish reason)."""
        return self.done_marker or self.finish_reason is not None
