"""What to benchmark and how: typed, validated configuration.

These models are serialized into every results file so a result always says how it was produced.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_CONCURRENCY_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WorkloadConfig(_Frozen):
    """Shape of every request.

    ``input_tokens`` includes the shared prefix. Token counts of generated prompts are estimates
    (one common English word is about one token for Llama/Qwen/GPT tokenizers); the server's
    ``usage.prompt_tokens`` is recorded when it reports one.
    """

    input_tokens: int = Field(default=1000, ge=1)
    output_tokens: int = Field(default=560, ge=1)
    shared_prefix_tokens: int = Field(default=0, ge=0)
    seed: int | None = None
    """Prompt seed. ``None``: a new random seed per run (recorded in the results), so rerunning
    against the same endpoint does not hit prefix-cache entries left by the previous run."""
    fresh_prompts_per_level: bool = True
    """New prompts at every level so a level cannot hit prefix-cache entries left by the previous one."""
    force_output_length: bool = True
    """Send ``ignore_eos``/``min_tokens`` so every request generates exactly ``output_tokens``."""
    temperature: float | None = None
    """``None`` leaves the server's default (speculative acceptance depends on it: say what you used)."""

    @model_validator(mode="after")
    def _prefix_fits(self) -> WorkloadConfig:
        if self.shared_prefix_tokens >= self.input_tokens:
            raise ValueError(
                f"shared_prefix_tokens ({self.shared_prefix_tokens}) must be smaller than "
                f"input_tokens ({self.input_tokens})"
            )
        return self


class LoadConfig(_Frozen):
    """How requests are issued: a closed loop at each concurrency level."""

    concurrency_levels: tuple[int, ...] = DEFAULT_CONCURRENCY_LEVELS
    requests_per_level: int | None = Field(default=None, ge=1)
    """Measured requests per level. Default: ``max(32, 8 * concurrency)``."""
    warmup_requests: int | None = Field(default=None, ge=0)
    """Uncounted requests at the start of each level. Default: one per slot (= concurrency)."""
    request_timeout_s: float = Field(default=300.0, gt=0)
    time_budget_s: float | None = Field(default=None, gt=0)
    """Stop the whole sweep after this long; the level in progress is kept as a partial level."""
    ramp_up_s: float = Field(default=0.0, ge=0)
    """Spread the first request of each slot over this many seconds (0 = all at once, like vLLM)."""
    sustain_load: bool = True
    """Keep every slot busy with uncounted filler requests until the last measured request ends."""
    max_retries: int = Field(default=3, ge=0)
    """Retries of requests refused before any byte arrived (throttling, model not ready)."""
    retry_backoff_s: float = Field(default=0.5, ge=0)
    abort_after_failures: int | None = Field(default=None, ge=1)
    """Abort a level after this many consecutive failures with no success. Default: max(3, concurrency)."""

    @field_validator("concurrency_levels")
    @classmethod
    def _positive_levels(cls, levels: tuple[int, ...]) -> tuple[int, ...]:
        if not levels:
            raise ValueError("at least one concurrency level is required")
        bad = [c for c in levels if c < 1]
        if bad:
            raise ValueError(f"concurrency levels must be >= 1, got {bad}")
        return levels

    def requests_for(self, concurrency: int) -> int:
        return self.requests_per_level if self.requests_per_level is not None else max(32, 8 * concurrency)

    def warmup_for(self, concurrency: int) -> int:
        return self.warmup_requests if self.warmup_requests is not None else concurrency

    def abort_threshold_for(self, concurrency: int) -> int:
        return self.abort_after_failures if self.abort_after_failures is not None else max(3, concurrency)


class CostConfig(_Frozen):
    """Hourly price of one instance; cost per million output tokens is computed when given."""

    price_per_hour: float | None = Field(default=None, gt=0)
    instance_count: int = Field(default=1, ge=1)


class SageMakerTarget(_Frozen):
    """A SageMaker real-time endpoint invoked with ``InvokeEndpointWithResponseStream``."""

    kind: Literal["sagemaker"] = "sagemaker"
    endpoint_name: str = Field(min_length=1, max_length=63)
    inference_component_name: str | None = None
    region: str | None = None
    container: Literal["vllm", "lmi"] = "vllm"
    """``vllm``: OpenAI chat-completions payload (vLLM DLC); ``lmi``: LMI ``inputs``/``parameters``."""
    endpoint_url: str | None = None
    """Override the runtime URL (tests, VPC endpoints). ``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME`` also works."""
    model: str | None = None

    def describe(self) -> str:
        suffix = f"/{self.inference_component_name}" if self.inference_component_name else ""
        return f"sagemaker:{self.endpoint_name}{suffix}"


class HttpTarget(_Frozen):
    """An OpenAI-compatible server (vLLM's api_server) reached over HTTP."""

    kind: Literal["openai_http"] = "openai_http"
    base_url: str
    api: Literal["chat", "completions"] = "chat"
    model: str | None = None
    """Model name sent in the payload; ``None`` asks ``/v1/models`` and falls back to omitting it."""

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parsed = urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"expected an http(s) URL such as http://localhost:8000, got {url!r}")
        return url.rstrip("/")

    def describe(self) -> str:
        return f"{self.base_url} ({self.api})"


Target = Annotated[SageMakerTarget | HttpTarget, Field(discriminator="kind")]


class BenchmarkConfig(_Frozen):
    """Everything needed to run (or resume) a sweep."""

    target: Target
    workload: WorkloadConfig = WorkloadConfig()
    load: LoadConfig = LoadConfig()
    cost: CostConfig = CostConfig()
    label: str | None = None
    """Name of this configuration in reports (default: the target's description)."""

    def display_label(self) -> str:
        return self.label or self.target.describe()
