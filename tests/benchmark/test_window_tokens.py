"""Output throughput with several tokens per chunk: the requests the window counts but the statistics do
not (a warm-up still streaming, cancelled filler, a measured request cut by the time budget) add their
tokens, not their chunks, and only for the chunks inside the window (first send, last end]."""

from __future__ import annotations

import dataclasses

import pytest

from speculative_infra.benchmark.config import CostConfig, Level
from speculative_infra.benchmark.load import LevelRun, RequestOutcome, StopReason
from speculative_infra.benchmark.metrics import summarize_level
from speculative_infra.benchmark.workload import Phase

from .test_metrics import WORKLOAD, outcome, run_of


def _cancelled(index: int, *, sent: float, chunks: list[float], phase: Phase) -> RequestOutcome:
    # Cancelled when the level ends: no usage block ever arrived, the stream never completed.
    cut = outcome(index, sent=sent, chunks=chunks, usage=None, finish=None, done=False, phase=phase)
    cut.rec.completed_at = None
    return dataclasses.replace(cut, cancelled=True)


def _measured() -> list[RequestOutcome]:
    # Two measured requests at 3 tokens per chunk (speculative decoding): the window is (0.0, 0.5].
    return [
        outcome(0, sent=0.0, chunks=[0.1, 0.2, 0.3, 0.4], usage=12),
        outcome(1, sent=0.0, chunks=[0.15, 0.25, 0.35, 0.45, 0.5], usage=15),
    ]


def test_filler_inside_the_window_counts_at_the_measured_tokens_per_chunk() -> None:
    # Filler sent before the window opens: its chunk at 0.0 is outside (start is excluded), 0.5 is
    # inside (end is included), 0.6 is after the window.
    filler = _cancelled(2, sent=-0.05, chunks=[0.0, 0.2, 0.3, 0.5, 0.6], phase=Phase.FILLER)
    level, records = summarize_level(run_of([*_measured(), filler], 3), WORKLOAD, CostConfig(), "usage")
    assert level.mean_tokens_per_chunk == pytest.approx(3.0)
    assert (level.completed, level.cancelled) == (2, 0)  # the filler is not a measured request
    assert records[2].status == "cancelled" and records[2].output_tokens is None
    # 12 + 15 measured tokens, + 3 filler chunks x 3 tokens, over 0.5 s (at 1 token a chunk: 60/s).
    assert level.duration_s == pytest.approx(0.5)
    assert level.output_throughput == pytest.approx((12 + 15 + 3 * 3) / 0.5)
    assert level.request_throughput == pytest.approx(72.0 / 13.5)
    assert level.total_token_throughput == pytest.approx(72.0 + 72.0 / 13.5 * 100)


def test_a_warmup_still_streaming_counts_at_its_own_tokens_per_chunk() -> None:
    # 8 tokens in 4 chunks (2 a chunk), two of them inside the window: 4 tokens.
    warmup = outcome(5, sent=-0.3, chunks=[-0.2, -0.1, 0.05, 0.15], usage=8, phase=Phase.WARMUP)
    level, _ = summarize_level(run_of([warmup, *_measured()], 2), WORKLOAD, CostConfig(), "usage")
    assert level.completed == 2 and level.mean_tokens_per_chunk == pytest.approx(3.0)
    assert level.output_throughput == pytest.approx((12 + 15 + 4) / 0.5)


def test_a_measured_request_cut_by_the_time_budget_counts_in_the_window_too() -> None:
    cut = _cancelled(2, sent=0.05, chunks=[0.1, 0.2, 0.3, 0.4], phase=Phase.MEASURED)
    run = LevelRun(Level(3), 0.0, 10.0, 0, 3, [*_measured(), cut], StopReason.TIME_BUDGET, "time budget")
    level, _ = summarize_level(run, WORKLOAD, CostConfig(), "usage")
    assert (level.completed, level.cancelled, level.complete) == (2, 1, False)
    assert level.output_throughput == pytest.approx((12 + 15 + 4 * 3) / 0.5)


def test_filler_and_warmup_together_with_a_price() -> None:
    filler = _cancelled(3, sent=0.2, chunks=[0.3, 0.4, 0.45, 0.7], phase=Phase.FILLER)
    warmup = outcome(4, sent=-0.3, chunks=[-0.2, -0.1, 0.05, 0.15], usage=8, phase=Phase.WARMUP)
    level, _ = summarize_level(
        run_of([warmup, *_measured(), filler], 3),
        WORKLOAD,
        CostConfig(price_per_hour=3.6, instance_count=1),
        "usage",
    )
    throughput = (12 + 15 + 4 + 3 * 3) / 0.5  # 80 tokens/s
    assert level.output_throughput == pytest.approx(throughput)
    assert level.cost_per_million_output_tokens == pytest.approx(3.6 / (3600 * throughput) * 1e6)
