"""What to benchmark and how: typed, validated configuration.

These records are serialized into every results file so a result always says how it was produced.
They are frozen dataclasses checked when built (see :mod:`.schema`): a bad value raises
:class:`ConfigError` naming the field, the value and what is allowed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlparse

from .schema import ConfigError, Record, validate_fields

__all__ = [
    "DEFAULT_CONCURRENCY_LEVELS",
    "MAX_CONCURRENCY",
    "MAX_LABEL_CHARS",
    "MAX_REQUESTS_PER_LEVEL",
    "MAX_REQUEST_RATE",
    "MAX_TOKENS_PER_REQUEST",
    "MIN_REQUEST_RATE",
    "BenchmarkConfig",
    "ConfigError",
    "CostConfig",
    "DatasetConfig",
    "HttpTarget",
    "Level",
    "LoadConfig",
    "RateSweepConfig",
    "SageMakerTarget",
    "SloConfig",
    "Target",
    "WorkloadConfig",
]

DEFAULT_CONCURRENCY_LEVELS: tuple[int, ...] = (1, 2, 4, 8, 16, 32)

# Bounds of the load parameters, in one place: the CLI, the Lambda and results files all pass through
# these records (docs/security.md, "Hostile input"). Each keeps a typo from becoming a hang or an
# exhausted machine, and stays well outside what a real benchmark asks.
MAX_TOKENS_PER_REQUEST = 10_000_000
"""Prompt or output tokens of one request: the largest context window offered is 10M tokens."""
MIN_REQUEST_RATE = 0.01
"""Requests/s: a level's default 32 arrivals already take ~53 minutes; 1e-9 would never send the second."""
MAX_REQUEST_RATE = 1000.0
"""Requests/s: bodies are built before the level (10 s of arrivals each); more than an endpoint serves."""
MAX_CONCURRENCY = 10_000
"""Slots (each a connection and a task): ~40 cores' worth at about 256 streams per core."""
MAX_REQUESTS_PER_LEVEL = 1_000_000
"""Measured requests of a level (bodies built up front); a batch over the largest dataset fits."""
MAX_WORKERS = 256
"""Processes sharing a level: one per core, more cores than any one machine has."""
MAX_RETRIES = 10
"""Retries double their wait from 0.5 s: the 10th already waits 256 s."""
MAX_TIMEOUT_S = 86_400.0
"""Per request: a day (SageMaker ends a response stream after 8 minutes)."""
MIN_TIMEOUT_S = 0.001
"""Per request: no answer comes back within less than a millisecond."""
MAX_TIME_BUDGET_S = 7 * 86_400.0
"""The whole sweep: a week."""
MAX_RAMP_UP_S = 3_600.0
"""Spreading the slots' first requests over more than an hour measures nothing but the ramp."""
MIN_BURSTINESS, MAX_BURSTINESS = 0.01, 100.0
"""Gamma shape of the gaps: below 0.01 the draws reach infinity; above 100 they are all the same."""
MAX_BISECTION_STEPS = 20
"""Rate sweep: 20 halvings pin the rate to a millionth of the bracket."""
MAX_PRICE_PER_HOUR = 100_000.0
"""$ per instance-hour: the dearest instance is ~$100/h."""
MAX_INSTANCE_COUNT = 10_000
MAX_TEMPERATURE = 100.0
"""Sampling temperature: servers accept 0-2 in practice."""
MAX_LABEL_CHARS = 200
"""A label names a configuration in a report's legends and headings."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetConfig(Record):
    """Prompts from a file or S3 prefix instead of generated words (see :mod:`.datasets`)."""

    path: str = field(metadata={"min_length": 1})
    """A local file, or ``s3://bucket/prefix`` (every object under it)."""
    format: Literal["auto", "sharegpt", "jsonl", "datacapture"] = "auto"
    output_length: Literal["forced", "record"] = "forced"
    """``forced``: every request generates ``output_tokens``; ``record``: the length each record asked
    for (or answered, in ShareGPT), ``output_tokens`` where it does not say."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadConfig(Record):
    """Shape of every request.

    ``input_tokens`` includes the shared prefix. Token counts of generated prompts are estimates
    (one common English word is about one token for Llama/Qwen/GPT tokenizers); the server's
    ``usage.prompt_tokens`` is recorded when it reports one.
    """

    input_tokens: int = field(default=1000, metadata={"ge": 1, "le": MAX_TOKENS_PER_REQUEST})
    output_tokens: int = field(default=560, metadata={"ge": 1, "le": MAX_TOKENS_PER_REQUEST})
    shared_prefix_tokens: int = field(default=0, metadata={"ge": 0, "le": MAX_TOKENS_PER_REQUEST})
    seed: int | None = None
    """Prompt seed. ``None``: a new random seed per run (recorded in the results), so rerunning
    against the same endpoint does not hit prefix-cache entries left by the previous run."""
    fresh_prompts_per_level: bool = True
    """New prompts at every level so a level cannot hit prefix-cache entries left by the previous one."""
    force_output_length: bool = True
    """Send ``ignore_eos``/``min_tokens`` so every request generates exactly ``output_tokens``."""
    temperature: float | None = field(default=None, metadata={"ge": 0, "le": MAX_TEMPERATURE})
    """``None`` leaves the server's default (speculative acceptance depends on it: say what you used)."""
    dataset: DatasetConfig | None = None
    """Real prompts (ShareGPT, JSON lines, SageMaker data capture); then ``input_tokens`` and
    ``shared_prefix_tokens`` do not apply. ``None``: generated prompts of ``input_tokens`` words."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.shared_prefix_tokens >= self.input_tokens:
            raise ConfigError(
                "shared_prefix_tokens",
                self.shared_prefix_tokens,
                f"an integer smaller than input_tokens ({self.input_tokens})",
            )


@dataclass(frozen=True, slots=True)
class Level:
    """One level of a sweep: a closed loop at ``concurrency``, or open-loop arrivals at ``request_rate``."""

    concurrency: int
    """Closed loop: the number of slots. Open loop: the cap on open requests (0: no cap)."""
    request_rate: float | None = None
    """Open loop: requests per second; ``None`` for a closed loop."""

    def describe(self) -> str:
        if self.request_rate is None:
            return f"concurrency {self.concurrency}"
        cap = f", at most {self.concurrency} open" if self.concurrency else ""
        return f"{self.request_rate:g} requests/s{cap}"

    def connections(self) -> int:
        """Connections a transport prepares: the slots or the cap, else about two seconds of arrivals."""
        return self.concurrency or max(1, round(2 * (self.request_rate or 1)))

    def key(self) -> str:
        """Stable short name (request ids, file names): ``c32`` or ``r2.5``."""
        return f"c{self.concurrency}" if self.request_rate is None else f"r{self.request_rate:g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadConfig(Record):
    """How requests are issued: a closed loop at each concurrency level, or open-loop arrivals at each
    request rate (``request_rates``)."""

    concurrency_levels: tuple[int, ...] = field(
        default=DEFAULT_CONCURRENCY_LEVELS, metadata={"ge": 1, "le": MAX_CONCURRENCY}
    )
    """At least one level; each >= 1 (a list is accepted and stored as a tuple). Ignored in open loop."""
    request_rates: tuple[float, ...] | None = field(
        default=None, metadata={"ge": MIN_REQUEST_RATE, "le": MAX_REQUEST_RATE}
    )
    """Open loop: one level per rate (requests/s), arrivals scheduled on an absolute clock with gamma gaps
    (``vllm bench serve``'s model). ``None``: closed loop at ``concurrency_levels``."""
    burstiness: float = field(default=1.0, metadata={"ge": MIN_BURSTINESS, "le": MAX_BURSTINESS})
    """Shape of the gamma distribution of gaps between arrivals: 1 is Poisson, below 1 burstier, above
    1 more regular (the mean gap stays 1 / rate)."""
    max_concurrency: int | None = field(default=None, metadata={"ge": 1, "le": MAX_CONCURRENCY})
    """Open loop: at most this many requests open at once; an arrival waits for a free place (its wait
    counts as lateness). ``None``: no cap."""
    requests_per_level: int | None = field(default=None, metadata={"ge": 1, "le": MAX_REQUESTS_PER_LEVEL})
    """Measured requests per level. Default: ``max(32, 8 * concurrency)``."""
    warmup_requests: int | None = field(default=None, metadata={"ge": 0, "le": MAX_REQUESTS_PER_LEVEL})
    """Uncounted requests at the start of each level. Default: one per slot (= concurrency)."""
    request_timeout_s: float = field(default=300.0, metadata={"ge": MIN_TIMEOUT_S, "le": MAX_TIMEOUT_S})
    time_budget_s: float | None = field(default=None, metadata={"gt": 0, "le": MAX_TIME_BUDGET_S})
    """Stop the whole sweep after this long; the level in progress is kept as a partial level."""
    ramp_up_s: float = field(default=0.0, metadata={"ge": 0, "le": MAX_RAMP_UP_S})
    """Spread the first request of each slot over this many seconds (0 = all at once, like vLLM)."""
    sustain_load: bool = True
    """Keep every slot busy with uncounted filler requests until the last measured request ends."""
    max_retries: int = field(default=3, metadata={"ge": 0, "le": MAX_RETRIES})
    """Retries of requests refused before any byte arrived (throttling, model not ready)."""
    retry_backoff_s: float = field(default=0.5, metadata={"ge": 0, "le": 60})
    workers: int = field(default=1, metadata={"ge": 1, "le": MAX_WORKERS})
    """Processes that share each level's load (one event loop each; slots, rate and requests split
    evenly); their per-request records are merged into one level."""
    abort_after_failures: int | None = field(default=None, metadata={"ge": 1, "le": MAX_REQUESTS_PER_LEVEL})
    """Abort a level after this many consecutive failures with no success. Default: max(3, concurrency)."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if not self.concurrency_levels:
            raise ConfigError(
                "concurrency_levels", self.concurrency_levels, "at least one level (integers >= 1)"
            )
        if self.request_rates is not None and not self.request_rates:
            raise ConfigError(
                "request_rates", self.request_rates, "at least one rate (requests/s > 0), or null"
            )

    @property
    def levels(self) -> tuple[Level, ...]:
        if self.request_rates is None:
            return tuple(Level(c) for c in self.concurrency_levels)
        return tuple(Level(self.max_concurrency or 0, rate) for rate in self.request_rates)

    def requests_for(self, level: Level | int) -> int:
        """Measured requests: ``requests_per_level``, else 8 per slot (closed loop, at least 32) or ten
        seconds of arrivals (open loop, at least 32)."""
        if self.requests_per_level is not None:
            return self.requests_per_level
        level = level if isinstance(level, Level) else Level(level)
        if level.request_rate is not None:
            return max(32, math.ceil(10 * level.request_rate))
        return max(32, 8 * level.concurrency)

    def warmup_for(self, level: Level | int) -> int:
        """Uncounted requests first: one per slot (closed loop), or one second of arrivals (open loop)."""
        if self.warmup_requests is not None:
            return self.warmup_requests
        level = level if isinstance(level, Level) else Level(level)
        if level.request_rate is not None:
            return max(1, round(level.request_rate))
        return level.concurrency

    def abort_threshold_for(self, level: Level | int) -> int:
        if self.abort_after_failures is not None:
            return self.abort_after_failures
        level = level if isinstance(level, Level) else Level(level)
        return max(3, level.concurrency)


@dataclass(frozen=True, slots=True, kw_only=True)
class SloConfig(Record):
    """Service-level objectives of one request: goodput counts the completed requests that meet all of
    the given ones (``vllm bench serve --goodput`` with the same names)."""

    ttft_ms: float | None = field(default=None, metadata={"gt": 0})
    tpot_ms: float | None = field(default=None, metadata={"gt": 0})
    e2el_ms: float | None = field(default=None, metadata={"gt": 0})

    def given(self) -> dict[str, float]:
        return {
            k: v
            for k, v in (("ttft_ms", self.ttft_ms), ("tpot_ms", self.tpot_ms), ("e2el_ms", self.e2el_ms))
            if v
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RateSweepConfig(Record):
    """Search for the highest open-loop rate the endpoint sustains within the SLOs: double the rate from
    ``start_rate`` until a level misses, then halve the gap ``bisection_steps`` times."""

    start_rate: float = field(metadata={"ge": MIN_REQUEST_RATE, "le": MAX_REQUEST_RATE})
    max_rate: float | None = field(default=None, metadata={"ge": MIN_REQUEST_RATE, "le": MAX_REQUEST_RATE})
    bisection_steps: int = field(default=3, metadata={"ge": 0, "le": MAX_BISECTION_STEPS})
    min_attainment: float = field(default=0.9, metadata={"gt": 0})
    """Share of a level's measured requests that must be good (complete and within every SLO), at most 1."""
    max_p99_lateness_ms: float = field(default=100.0, metadata={"gt": 0})
    """The client must also have sent its requests on schedule (p99 lateness at most this), else it, not
    the server, fell behind. Random arrivals make a short level's achieved rate differ from the rate
    asked, so lateness against the schedule is the test, not the achieved rate."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.min_attainment > 1:
            raise ConfigError("min_attainment", self.min_attainment, "a share in (0, 1]")
        if self.max_rate is not None and self.max_rate < self.start_rate:
            raise ConfigError("max_rate", self.max_rate, f"a rate >= start_rate ({self.start_rate})")


@dataclass(frozen=True, slots=True, kw_only=True)
class CostConfig(Record):
    """Hourly price of one instance; cost per million output tokens is computed when given."""

    price_per_hour: float | None = field(default=None, metadata={"gt": 0, "le": MAX_PRICE_PER_HOUR})
    instance_count: int = field(default=1, metadata={"ge": 1, "le": MAX_INSTANCE_COUNT})


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
    """``asyncio`` (and ``auto``): every stream on one event loop (the engine's HTTP/1.1 client with
    botocore's SigV4 signer), accurate to a few hundred streams per core. ``boto3``: one thread per
    stream through boto3's own client (the EndpointBenchmark Lambda uses it)."""

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
    slo: SloConfig | None = None
    """Per-request objectives; each level then reports goodput."""
    rate_sweep: RateSweepConfig | None = None
    """Search for the highest rate within ``slo`` instead of running ``load``'s levels (needs ``slo``)."""
    label: str | None = field(default=None, metadata={"max_length": MAX_LABEL_CHARS})
    """Name of this configuration in reports (default: the target's description)."""

    def __post_init__(self) -> None:
        validate_fields(self)
        if self.rate_sweep is not None and (self.slo is None or not self.slo.given()):
            raise ConfigError(
                "rate_sweep", self.rate_sweep.to_dict(), "a sweep judged by slo: give slo objectives"
            )

    def display_label(self) -> str:
        return self.label or self.target.describe()
