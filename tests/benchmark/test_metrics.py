"""Metric arithmetic on hand-built outcomes: definitions as in `vllm bench serve`."""

from __future__ import annotations

import random

import numpy as np
import pytest

from speculative_infra.benchmark.config import CostConfig, Level, WorkloadConfig
from speculative_infra.benchmark.failures import Failure, FailureClass
from speculative_infra.benchmark.load import LevelRun, RequestOutcome, StopReason
from speculative_infra.benchmark.metrics import cost_per_million_output_tokens, percentile, summarize_level
from speculative_infra.benchmark.recorder import StreamRecorder
from speculative_infra.benchmark.workload import Phase

WORKLOAD = WorkloadConfig(input_tokens=100, output_tokens=7, seed=1)


def test_percentile_matches_numpy_linear() -> None:
    rng = random.Random(5)
    for size in (1, 2, 3, 10, 101):
        values = sorted(rng.uniform(0, 100) for _ in range(size))
        for q in (0, 50, 90, 99, 100):
            assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


def test_cost_per_million_output_tokens() -> None:
    # The reference's cheapest configuration: $4.20/h at ~2,845 output tok/s is ~$0.41/M.
    assert cost_per_million_output_tokens(4.20, 1, 2845.5) == pytest.approx(0.41, abs=0.001)
    assert cost_per_million_output_tokens(4.20, 2, 2845.5) == pytest.approx(0.82, abs=0.002)
    assert cost_per_million_output_tokens(13.12, 1, 1000.0) == pytest.approx(13.12 / 3600 / 1000 * 1e6)
    assert cost_per_million_output_tokens(None, 1, 1000.0) is None
    assert cost_per_million_output_tokens(4.2, 1, None) is None
    assert cost_per_million_output_tokens(4.2, 1, 0.0) is None


def outcome(
    index: int,
    *,
    sent: float,
    chunks: list[float],
    usage: int | None = 7,
    finish: str | None = "length",
    done: bool = True,
    phase: Phase = Phase.MEASURED,
    failure: Failure | None = None,
    freed: float | None = None,
) -> RequestOutcome:
    rec = StreamRecorder(dispatched_at=sent, sent_at=sent, content_times=list(chunks))
    rec.completion_tokens = usage
    rec.finish_reason = finish
    rec.done_marker = done
    rec.failure = failure
    rec.completed_at = chunks[-1] if chunks else sent + 0.01
    start = sent if freed is None else freed
    return RequestOutcome(phase, index, f"r{index}", 0, start, sent, rec)


def run_of(outcomes: list[RequestOutcome], concurrency: int = 1) -> LevelRun:
    return LevelRun(Level(concurrency), 0.0, 10.0, 0, len(outcomes), outcomes, StopReason.COMPLETE, None)


def test_ttft_tpot_itl_e2el_and_tokens_per_chunk() -> None:
    # Sent at 0; 4 chunks at 0.2 .. 0.5 s carrying 7 tokens (speculative: several per chunk).
    level, records = summarize_level(
        run_of([outcome(0, sent=0.0, chunks=[0.2, 0.3, 0.4, 0.5])]), WORKLOAD, CostConfig(), "usage"
    )
    assert level.median_ttft_ms == pytest.approx(200.0)
    assert level.median_e2el_ms == pytest.approx(500.0)
    assert level.median_tpot_ms == pytest.approx(300.0 / 6)  # (E2E - TTFT) / (tokens - 1)
    assert level.median_itl_ms == pytest.approx(100.0)  # per chunk, not per token
    assert level.mean_tokens_per_chunk == pytest.approx(7 / 4)
    assert level.output_tokens_source == {"usage": 1}
    assert level.output_tokens_per_second_per_user == pytest.approx(7 / 0.5)
    assert records[0].itl_ms == pytest.approx([100.0, 100.0, 100.0])
    assert level.output_throughput == pytest.approx(7 / 0.5)
    assert level.request_throughput == pytest.approx(1 / 0.5)
    assert level.total_token_throughput == pytest.approx((7 + 100) / 0.5)


def test_output_token_fallbacks_are_labelled() -> None:
    outcomes = [
        outcome(0, sent=0.0, chunks=[0.1, 0.2], usage=None, finish="length"),
        outcome(1, sent=0.0, chunks=[0.1, 0.2, 0.3], usage=None, finish=None),
    ]
    level, records = summarize_level(run_of(outcomes, 2), WORKLOAD, CostConfig(), "usage")
    assert [r.output_tokens for r in records] == [7, 3]
    assert [r.output_tokens_source for r in records] == ["max_tokens", "chunks"]
    assert level.output_tokens_source == {"max_tokens": 1, "chunks": 1}
    assert level.short_outputs == 1
    assert level.input_tokens_source == {"estimate": 2}


def test_failures_by_class_and_excluded_from_latency() -> None:
    outcomes = [
        outcome(0, sent=0.0, chunks=[0.1, 0.2]),
        outcome(1, sent=0.0, chunks=[0.15], failure=Failure(FailureClass.STREAM_BROKEN, "cut")),
        outcome(2, sent=0.0, chunks=[], failure=Failure(FailureClass.THROTTLED, "slow down", retryable=True)),
    ]
    level, records = summarize_level(run_of(outcomes, 3), WORKLOAD, CostConfig(), "usage")
    assert (level.completed, level.failed) == (1, 2)
    assert level.failure_classes == {"stream_broken": 1, "throttled": 1}
    assert level.failure_examples["throttled"] == "slow down"
    assert level.median_ttft_ms == pytest.approx(100.0)
    assert [r.status for r in records] == ["ok", "failed", "failed"]
    # The broken request's chunk is not delivered output.
    assert level.output_throughput == pytest.approx(7 / 0.2)


def test_client_lag_is_send_minus_slot_free() -> None:
    outcomes = [outcome(0, sent=1.003, chunks=[1.1, 1.2], freed=1.0)]
    level, records = summarize_level(run_of(outcomes), WORKLOAD, CostConfig(), "usage")
    assert records[0].client_lag_ms == pytest.approx(3.0)
    assert level.p99_client_lag_ms == pytest.approx(3.0)


def test_cost_uses_output_throughput() -> None:
    level, _ = summarize_level(
        run_of([outcome(0, sent=0.0, chunks=[0.2, 0.3, 0.4, 0.5])]),
        WORKLOAD,
        CostConfig(price_per_hour=3.6, instance_count=2),
        "usage",
    )
    assert level.cost_per_million_output_tokens == pytest.approx(3.6 * 2 / (3600 * 14.0) * 1e6)


def test_no_completed_requests_gives_no_numbers() -> None:
    failed = outcome(0, sent=0.0, chunks=[], failure=Failure(FailureClass.CONNECTION_ERROR, "refused"))
    level, _ = summarize_level(run_of([failed]), WORKLOAD, CostConfig(price_per_hour=1.0), "usage")
    assert level.output_throughput is None and level.median_ttft_ms is None
    assert level.cost_per_million_output_tokens is None
