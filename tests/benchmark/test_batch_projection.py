"""The batch projection: a transform job's duration, cost and settings from a run over its records."""

from __future__ import annotations

import pytest

from speculative_infra.benchmark.batch_projection import START_UP_MINUTES, project_batch
from speculative_infra.benchmark.results import LevelResult


def _level(**overrides: object) -> LevelResult:
    values: dict[str, object] = {
        "concurrency": 64,
        "complete": True,
        "stop_reason": "completed",
        "warmup_requests": 0,
        "planned_requests": 1000,
        "completed": 998,
        "failed": 2,
        "cancelled": 0,
        "duration_s": 1800.0,
        "request_throughput": 998 / 1800.0,
        "output_throughput": 1500.0,
        "p99_ttft_ms": 400.0,
        "p99_tpot_ms": 40.0,
        "cost_per_million_output_tokens": 0.78,
    }
    values.update(overrides)
    return LevelResult(**values)  # type: ignore[arg-type]


def test_job_duration_cost_and_concurrency_per_instance() -> None:
    projection = project_batch(_level(), max_output_tokens=1001, price_per_hour=4.2, instance_count=2)
    assert projection is not None
    assert projection.records == 1000 and projection.failed == 2
    assert projection.job_minutes == pytest.approx(START_UP_MINUTES + 30.0)
    # (10 min + 30 min) x $4.20 x 2 instances
    assert projection.job_usd == pytest.approx(40 / 60 * 4.2 * 2)
    assert projection.max_concurrent_transforms == 32  # 64 in flight over 2 instances
    text = "\n".join(projection.lines())
    assert "max_concurrent_transforms=32, instance_count=2" in text and "$0.780 per million" in text


def test_timeout_covers_the_longest_answer_at_the_slowest_pace_with_the_margin() -> None:
    unpriced = _level(cost_per_million_output_tokens=None)
    projection = project_batch(unpriced, max_output_tokens=1001, price_per_hour=None, instance_count=1)
    assert projection is not None
    # (400 ms + 1000 x 40 ms) x 1.5 = 60.6 s -> 61 s
    assert projection.invocation_timeout_s == 61
    assert projection.job_usd is None and "no price" in projection.lines()[0]


@pytest.mark.parametrize(
    ("tpot_ms", "expected"),
    [(1.0, 60), (2399.0, 3599), (2400.0, 3600), (5000.0, 3600)],
)
def test_timeout_stays_within_the_api_bounds(tpot_ms: float, expected: int) -> None:
    # 1,000 tokens after the first at tpot, no TTFT, 1.5x: 1.5 x tpot seconds
    level = _level(p99_ttft_ms=0.0, p99_tpot_ms=tpot_ms)
    projection = project_batch(level, max_output_tokens=1001, price_per_hour=None, instance_count=1)
    assert projection is not None
    assert projection.invocation_timeout_s == expected


def test_nothing_completed_projects_nothing() -> None:
    assert (
        project_batch(_level(completed=0), max_output_tokens=10, price_per_hour=1.0, instance_count=1) is None
    )
    assert (
        project_batch(_level(p99_tpot_ms=None), max_output_tokens=10, price_per_hour=1.0, instance_count=1)
        is None
    )
