"""Result records: what a benchmark run writes (JSON), one record per level and per request.

Mutable dataclasses checked when built (see :mod:`.schema`); ``to_dict()`` is exactly the JSON
written to ``results.json`` / ``*.requests.jsonl`` and ``from_dict()`` reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .config import (
    CostConfig,
    HttpTarget,
    LoadConfig,
    RateSweepConfig,
    SageMakerTarget,
    SloConfig,
    Target,
    WorkloadConfig,
)
from .schema import Record

SCHEMA_VERSION = 1

RunStatus = Literal["running", "complete", "partial", "interrupted", "aborted", "error"]
OutputTokenSource = Literal["usage", "details", "max_tokens", "chunks"]
InputTokenSource = Literal["usage", "details", "estimate"]
RequestStatus = Literal["ok", "failed", "cancelled"]


@dataclass(slots=True, kw_only=True)
class RequestRecord(Record):
    """One request as the client saw it (one line of the per-request JSONL).

    Times ending in ``_s`` are seconds since the start of the level; durations are in ms.
    """

    concurrency: int
    request_rate: float | None = None
    """Open-loop level: its target requests/s (``slot_freed_at_s`` is then the scheduled arrival)."""
    phase: Literal["warmup", "measured", "filler"]
    index: int
    request_id: str
    slot: int
    status: RequestStatus
    failure_class: str | None = None
    failure_message: str | None = None
    retries: int = 0
    retried_classes: list[str] = field(default_factory=list)
    slot_freed_at_s: float
    sent_at_s: float
    first_token_at_s: float | None = None
    completed_at_s: float | None = None
    client_lag_ms: float
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2el_ms: float | None = None
    output_tokens: int | None = None
    output_tokens_source: OutputTokenSource | None = None
    prompt_tokens: int | None = None
    chunks: int
    finish_reason: str | None = None
    itl_ms: list[float] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class LevelResult(Record):
    """Aggregates of the measured requests of one concurrency level.

    Names follow ``vllm bench serve`` (``mean_ttft_ms``, ``median_tpot_ms``, ``p99_itl_ms``, ...).
    Latency statistics use completed measured requests only; ``None`` means no data.
    """

    concurrency: int
    """Closed loop: slots. Open loop: the cap on open requests (0: none)."""
    request_rate: float | None = None
    """Open loop: the requests/s asked for (``None`` for a closed loop)."""
    achieved_request_rate: float | None = None
    """Open loop: measured requests sent per second between the first and the last one sent."""
    complete: bool
    stop_reason: str
    stop_message: str | None = None
    warmup_requests: int
    planned_requests: int
    completed: int
    failed: int
    cancelled: int
    failure_classes: dict[str, int] = field(default_factory=dict)
    failure_examples: dict[str, str] = field(default_factory=dict)
    retries: int = 0
    retried_classes: dict[str, int] = field(default_factory=dict)
    duration_s: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    total_token_throughput: float | None = None
    mean_ttft_ms: float | None = None
    median_ttft_ms: float | None = None
    p90_ttft_ms: float | None = None
    p99_ttft_ms: float | None = None
    mean_tpot_ms: float | None = None
    median_tpot_ms: float | None = None
    p90_tpot_ms: float | None = None
    p99_tpot_ms: float | None = None
    mean_itl_ms: float | None = None
    median_itl_ms: float | None = None
    p90_itl_ms: float | None = None
    p99_itl_ms: float | None = None
    mean_e2el_ms: float | None = None
    median_e2el_ms: float | None = None
    p90_e2el_ms: float | None = None
    p99_e2el_ms: float | None = None
    output_tokens_per_second_per_user: float | None = None
    median_output_tokens_per_second_per_user: float | None = None
    mean_tokens_per_chunk: float | None = None
    mean_output_tokens: float | None = None
    mean_input_tokens: float | None = None
    short_outputs: int = 0
    """Completed requests that generated fewer tokens than asked (the server ignored ignore_eos?)."""
    output_tokens_source: dict[str, int] = field(default_factory=dict)
    input_tokens_source: dict[str, int] = field(default_factory=dict)
    mean_client_lag_ms: float | None = None
    median_client_lag_ms: float | None = None
    p99_client_lag_ms: float | None = None
    max_client_lag_ms: float | None = None
    cost_per_million_output_tokens: float | None = None
    good_requests: int | None = None
    """Completed measured requests that met every objective of the run's ``slo`` (``None``: no SLO)."""
    request_goodput: float | None = None
    """``good_requests`` per second of the level's measured window (vllm bench serve's request goodput)."""
    output_goodput: float | None = None
    """Output tokens per second of the good requests alone, over the same window."""


@dataclass(slots=True, kw_only=True)
class BenchmarkResult(Record):
    schema_version: int = SCHEMA_VERSION
    label: str
    target: Target
    workload: WorkloadConfig
    load: LoadConfig
    cost: CostConfig
    slo: SloConfig | None = None
    """The objectives goodput was judged by."""
    rate_sweep: RateSweepConfig | None = None
    started_at: str
    finished_at: str | None = None
    status: RunStatus = "running"
    error: str | None = None
    client: dict[str, str] = field(default_factory=dict)
    levels: list[LevelResult] = field(default_factory=list)
    max_sustained_rate: float | None = None
    """Rate sweep: the highest request rate probed whose requests met the SLOs (see rate_sweep.py)."""

    def target_name(self) -> str:
        target: SageMakerTarget | HttpTarget = self.target
        return target.describe()
