"""What a stand-in scenario does, and the timings it implies."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Behavior:
    ttft_s: float = 0.05
    """From the request fully received to the first content chunk."""
    chunk_interval_s: float = 0.01
    """Between consecutive content chunks."""
    tokens_per_chunk: int = 1
    """Tokens carried by each content chunk (speculative decoding sends several)."""
    role_chunk: bool = True
    """Send a role-only chunk (content "") at once, as vLLM does: a TTFT trap for clients."""
    usage: bool = True
    """Send usage when the client asks with stream_options.include_usage (LMI: details)."""
    output_tokens: int | None = None
    """Tokens to generate; None: what the request asks (max_tokens / max_new_tokens)."""
    text: str = " tok"
    """Text of one token. Use multi-byte characters to test UTF-8 handling."""
    status: int | None = None
    """Answer with this HTTP status (OpenAI routes) instead of streaming."""
    sagemaker_error: str | None = None
    """SageMaker error before the stream: ThrottlingException, ModelError, ValidationError, ..."""
    error_first_n: int | None = None
    """Apply status / sagemaker_error only to the first N requests of the scenario."""
    break_after_chunks: int | None = None
    """Abort the TCP connection after this many content chunks."""
    stall_after_chunks: int | None = None
    """Stop sending (connection left open) after this many content chunks."""
    error_event_after_chunks: int | None = None
    """In-stream error after this many content chunks (SSE error / LMI error / SageMaker exception)."""
    stream_error_type: str = "ModelStreamError"
    """SageMaker exception event type: ModelStreamError or InternalStreamFailure."""
    part_size: int | None = None
    """SageMaker: cut the body into PayloadParts of this many bytes (splits lines and UTF-8)."""
    omit_done: bool = False
    """End the body without [DONE] or finish_reason."""
    lmi_sse: bool = False
    """LMI: prefix each JSON line with ``data:`` (LMI's SSE formatter)."""
    usage_override: dict[str, Any] | None = None
    """Report these usage values instead of the true ones (OpenAI: ``prompt_tokens``/``completion_tokens``;
    LMI: ``input_length``/``generated_tokens`` in details), raw: 1e30, -5, "12", true, NaN."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Behavior:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    # Ground truth implied by the configuration (the server also records what it did).

    def content_chunks(self, output_tokens: int) -> int:
        return math.ceil(output_tokens / self.tokens_per_chunk)

    def expected_e2el_s(self, output_tokens: int) -> float:
        return self.ttft_s + (self.content_chunks(output_tokens) - 1) * self.chunk_interval_s

    def expected_tpot_s(self, output_tokens: int) -> float:
        return (self.content_chunks(output_tokens) - 1) * self.chunk_interval_s / (output_tokens - 1)
