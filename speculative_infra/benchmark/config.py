"""What to benchmark and how: typed, validated configuration.

These records are serialized into every results file so a result always says how it was produced.
They are frozen dataclasses checked when built (see :mod:`.schema`): a bad value raises
:class:`ConfigError` naming the field, the value and what is allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlparse

from .schema import ConfigError, Record, validate_fields

__all__ = [
    "DEFAULT_CONCURRENCY_LEVELS",
    "BenchmarkConfig",
    "ConfigError",
    "CostConfig",
    "HttpTarget",
    "LoadConfig",
    "SageMakerTarget",
    "Target",
    "WorkloadConfig",
]

DEFAULT_CONCURRENCY_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadConfig(Record):
    """Shape of every request.

    ``input_tokens`` includes the shared prefix. Token counts of generated prompts are estimates
    (one common English word is about one token for Llama/Qwen/GPT tokenizers); the server's
    ``usage.prompt_tokens`` is recorded when it reports one.
    """

    input_tokens: int = field(default=1000, metadata={"ge": 1})
    output_tokens: int = field(default=560, metadata={"ge": 1})
    shared_prefix_tokens: int = field(default=0, metadata={"ge": 0})
    seed: int | None = None
    """Prompt seed. ``None``: a new random seed per run (recorded in the results), so rerunning
    against the same endpoint does not hit prefix-cache entries left by the previous run."""
    fresh_prompts_per_level: bool = True
    """New prompts at every level so a level cannot hit prefix-cache entries left by the previous one."""
    force_output_length: bool = True
    """Send ``ignore_eos``/``min_tokens`` so every request generates exactly ``output_tokens``."""
    temperature: float | None = None
    """``None`` leaves the server's default (speculative acceptance depends on it: say what you used)."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.shared_prefix_tokens >= self.input_tokens:
            raise ConfigError(
                "shared_prefix_tokens",
                self.shared_prefix_tokens,
                f"an integer smaller than input_tokens ({self.input_tokens})",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadConfig(Record):
    """How requests are issued: a closed loop at each concurrency level."""

    concurrency_levels: tuple[int, ...] = field(default=DEFAULT_CONCURRENCY_LEVELS, metadata={"ge": 1})
    """At least one level; each >= 1 (a list is accepted and stored as a tuple)."""
    requests_per_level: int | None = field(default=None, metadata={"ge": 1})
    """Measured requests per level. Default: ``max(32, 8 * concurrency)``."""
    warmup_requests: int | None = field(default=None, metadata={"ge": 0})
    """Uncounted requests at the start of each level. Default: one per slot (= concurrency)."""
    request_timeout_s: float = field(default=300.0, metadata={"gt": 0})
    time_budget_s: float | None = field(default=None, metadata={"gt": 0})
    """Stop the whole sweep after this long; the level in progress is kept as a partial level."""
    ramp_up_s: float = field(default=0.0, metadata={"ge": 0})
    """Spread the first request of each slot over this many seconds (0 = all at once, like vLLM)."""
    sustain_load: bool = True
    """Keep every slot busy with uncounted filler requests until the last measured request ends."""
    max_retries: int = field(default=3, metadata={"ge": 0})
    """Retries of requests refused before any byte arrived (throttling, model not ready)."""
    retry_backoff_s: float = field(default=0.5, metadata={"ge": 0})
    abort_after_failures: int | None = field(default=None, metadata={"ge": 1})
    """Abort a level after this many consecutive failures with no success. Default: max(3, concurrency)."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if not self.concurrency_levels:
            raise ConfigError(
                "concurrency_levels", self.concurrency_levels, "at least one level (integers >= 1)"
            )

    def requests_for(self, concurrency: int) -> int:
        return self.requests_per_level if self.requests_per_level is not None else max(32, 8 * concurrency)

    def warmup_for(self, concurrency: int) -> int:
        return self.warmup_requests if self.warmup_requests is not None else concurrency

    def abort_threshold_for(self, concurrency: int) -> int:
        return self.abort_after_failures if self.abort_after_failures is not None else max(3, concurrency)


@dataclass(frozen=True, slots=True, kw_only=True)
class CostConfig(Record):
    """Hourly price of one instance; cost per million output tokens is computed when given."""

    price_per_hour: float | None = field(default=None, metadata={"gt": 0})
    instance_count: int = field(default=1, metadata={"ge": 1})


@dataclass(frozen=True, slots=True, kw_only=True)
class SageMakerTarget(Record):
    """A SageMaker real-time endpoint invoked with ``InvokeEndpointWithResponseStream``."""

    kind: Literal["sagemaker"] = "sagemaker"
    endpoint_name: str = field(metadata={"min_length": 1, "max_length": 63})
    inference_component_name: str | None = None
    region: str | None = None
    container: Literal["vllm", "lmi"] = "vllm"
    """``vllm``: OpenAI chat-completions payload (vLLM DLC); ``lmi``: LMI ``inputs``/``parameters``."""
    endpoint_url: str | None = None
    """Override the runtime URL (tests, VPC endpoints). ``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME`` also works."""
    model: str | None = None
    client: Literal["auto", "asyncio", "boto3"] = "auto"
    """``asyncio``: every stream on one event loop (aiohttp with botocore's signer and event-stream
    decoder), accurate to a few hundred streams per core. ``boto3``: one thread per stream, for places
    without aiohttp (the EndpointBenchmark Lambda). ``auto``: asyncio when aiohttp is installed."""

    def describe(self) -> str:
        suffix = f"/{self.inference_component_name}" if self.inference_component_name else ""
        return f"sagemaker:{self.endpoint_name}{suffix}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpTarget(Record):
    """An OpenAI-compatible server (vLLM's api_server) reached over HTTP."""

    kind: Literal["openai_http"] = "openai_http"
    base_url: str
    """``http(s)://host[:port][/path]``; a trailing ``/`` is removed."""
    api: Literal["chat", "completions"] = "chat"
    model: str | None = None
    """Model name sent in the payload; ``None`` asks ``/v1/models`` and falls back to omitting it."""

    def __post_init__(self) -> None:
        validate_fields(self)
        parsed = urlparse(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ConfigError("base_url", self.base_url, "an http(s) URL such as http://localhost:8000")
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))

    def describe(self) -> str:
        return f"{self.base_url} ({self.api})"


Target = SageMakerTarget | HttpTarget
"""A target; in serialized form its ``kind`` field says which one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchmarkConfig(Record):
    """Everything needed to run (or resume) a sweep."""

    target: Target
    workload: WorkloadConfig = field(default_factory=WorkloadConfig)
    load: LoadConfig = field(default_factory=LoadConfig)
    cost: CostConfig = field(default_factory=CostConfig)
    label: str | None = None
    """Name of this configuration in reports (default: the target's description)."""

    def display_label(self) -> str:
        return self.label or self.target.describe()
