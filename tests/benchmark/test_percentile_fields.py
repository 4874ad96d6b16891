"""Every percentile a LevelResult carries, pinned to its own q: median (50), p90, p99, max, mean.

The values are chosen so that each statistic of each series differs from its neighbours (p90 from p99,
p99 from the max, the median from the 51st percentile) by far more than the tolerance: a statistic read
at the wrong q cannot pass.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pytest

from speculative_infra.benchmark.config import CostConfig
from speculative_infra.benchmark.metrics import summarize, summarize_level

from .test_metrics import WORKLOAD, outcome, run_of

QS = {"median": 50, "p90": 90, "p99": 99}


def test_summary_reads_each_statistic_at_its_own_q() -> None:
    # 1 .. 101 (shuffled): the q-th percentile is exactly 1 + q.
    values = [float(v) for v in range(1, 102)]
    random.Random(3).shuffle(values)
    summary = summarize(values)
    assert summary is not None
    assert (summary.mean, summary.median, summary.p90, summary.p99, summary.max) == (
        51.0,
        51.0,
        91.0,
        100.0,
        101.0,
    )


def test_summary_interpolates_between_ranks() -> None:
    # Eleven values: p90 is the tenth, p99 lies 9/10 of the way from the tenth to the eleventh.
    summary = summarize([0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, 20.0])
    assert summary is not None
    assert summary.median == 5.0 and summary.p90 == 10.0
    assert summary.p99 == pytest.approx(10.0 + 0.9 * 10.0) and summary.max == 20.0
    assert summary.mean == pytest.approx(66.0 / 11)
    assert summarize([]) is None


@dataclass(frozen=True)
class _Request:
    sent: float
    chunks: list[float]
    usage: int
    lag_s: float

    @property
    def ttft_ms(self) -> float:
        return (self.chunks[0] - self.sent) * 1000

    @property
    def e2el_ms(self) -> float:
        return (self.chunks[-1] - self.sent) * 1000


def _requests(count: int = 11) -> list[_Request]:
    rng = random.Random(11)
    out = []
    for i in range(count):
        sent = 0.01 * i
        times = [sent + rng.uniform(0.05, 0.6)]
        for _ in range(rng.randint(2, 6)):
            times.append(times[-1] + rng.uniform(0.005, 0.12))
        out.append(_Request(sent, times, rng.randint(6, 40), rng.uniform(0.0, 0.03)))
    return out


def _expected(values: list[float]) -> dict[str, float]:
    expected = {name: float(np.percentile(values, q)) for name, q in QS.items()}
    expected["mean"] = float(np.mean(values))
    expected["max"] = max(values)
    # The values tell every statistic apart, by far more than the tolerances below, from what a wrong q
    # would give.
    for q in (49, 51, 89, 91, 95, 98, 100):
        for name in QS:
            margin = max(1e-2, 1e-4 * abs(expected[name]))
            assert abs(float(np.percentile(values, q)) - expected[name]) > margin
    return expected


def test_every_percentile_field_of_a_level_is_at_its_q() -> None:
    requests = _requests()
    outcomes = [
        outcome(i, sent=r.sent, chunks=r.chunks, usage=r.usage, freed=r.sent - r.lag_s)
        for i, r in enumerate(requests)
    ]
    level, _ = summarize_level(run_of(outcomes, len(outcomes)), WORKLOAD, CostConfig(), "usage")

    ttft = [r.ttft_ms for r in requests]
    e2el = [r.e2el_ms for r in requests]
    tpot = [(r.e2el_ms - r.ttft_ms) / (r.usage - 1) for r in requests]
    itl = [(b - a) * 1000 for r in requests for a, b in pairwise(r.chunks)]
    per_user = [r.usage / (r.e2el_ms / 1000) for r in requests]
    lag = [r.lag_s * 1000 for r in requests]

    # Records keep ms to 4 decimals: the statistics are of those, hence the small absolute tolerance.
    for series, values in (("ttft", ttft), ("tpot", tpot), ("itl", itl), ("e2el", e2el)):
        expected = _expected(values)
        for stat in ("mean", "median", "p90", "p99"):
            field = f"{stat}_{series}_ms"
            assert getattr(level, field) == pytest.approx(expected[stat], abs=1e-3), field

    users = _expected(per_user)
    assert level.output_tokens_per_second_per_user == pytest.approx(users["mean"], rel=1e-6)
    assert level.median_output_tokens_per_second_per_user == pytest.approx(users["median"], rel=1e-6)

    lags = _expected(lag)
    assert level.mean_client_lag_ms == pytest.approx(lags["mean"], abs=1e-3)
    assert level.median_client_lag_ms == pytest.approx(lags["median"], abs=1e-3)
    assert level.p99_client_lag_ms == pytest.approx(lags["p99"], abs=1e-3)
    assert level.max_client_lag_ms == pytest.approx(lags["max"], abs=1e-3)
