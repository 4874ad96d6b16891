"""The batch projection's lower bounds: at least one concurrent transform per instance (CreateTransformJob
refuses MaxConcurrentTransforms 0), at least the API's minimum timeout, and no projection from a run
that measured nothing."""

from __future__ import annotations

import pytest

from speculative_infra.benchmark.batch_projection import MIN_TIMEOUT_S, START_UP_MINUTES, project_batch

from .test_batch_projection import _level


@pytest.mark.parametrize(
    ("concurrency", "instances", "per_instance"),
    [(1, 1, 1), (1, 2, 1), (1, 8, 1), (3, 4, 1), (2, 2, 1), (3, 2, 1), (4, 2, 2), (5, 2, 2), (64, 3, 21)],
)
def test_at_least_one_concurrent_transform_per_instance(
    concurrency: int, instances: int, per_instance: int
) -> None:
    projection = project_batch(
        _level(concurrency=concurrency), max_output_tokens=10, price_per_hour=None, instance_count=instances
    )
    assert projection is not None and projection.concurrency == concurrency
    assert projection.max_concurrent_transforms == per_instance
    assert (
        f"BatchInference(max_concurrent_transforms={per_instance}, instance_count={instances},"
        in (projection.lines()[2])
    )


@pytest.mark.parametrize(
    ("ttft_ms", "tpot_ms", "tokens", "expected"),
    [
        (0.0, 0.0, 1, MIN_TIMEOUT_S),  # nothing to wait for: still the minimum
        (0.0, 0.0, 1000, MIN_TIMEOUT_S),
        (40_000.0, 0.0, 1, MIN_TIMEOUT_S),  # 40 s x 1.5 = 60 s: exactly the minimum
        (40_001.0, 0.0, 1, 61),  # 60.0015 s: rounded up
        (39_000.0, 1000.0, 2, 60),  # (39 + 1) s x 1.5
        (1_000.0, 20.0, 1_000, MIN_TIMEOUT_S),  # (1 + 999 x 0.02) s x 1.5 = 31.5 s: raised to the minimum
        (1_000.0, 60.0, 1_000, 92),  # (1 + 999 x 0.06) s x 1.5 = 91.41 s -> 92
    ],
)
def test_timeout_lower_bound_and_rounding(ttft_ms: float, tpot_ms: float, tokens: int, expected: int) -> None:
    level = _level(p99_ttft_ms=ttft_ms, p99_tpot_ms=tpot_ms)
    projection = project_batch(level, max_output_tokens=tokens, price_per_hour=None, instance_count=1)
    assert projection is not None
    assert projection.invocation_timeout_s == expected
    assert f"invocation_timeout=Duration.seconds({expected})" in projection.lines()[2]


def test_the_shortest_run_still_projects_a_job_of_start_up_plus_run() -> None:
    projection = project_batch(
        _level(completed=1, failed=0, duration_s=0.6),
        max_output_tokens=10,
        price_per_hour=3.0,
        instance_count=1,
    )
    assert projection is not None and projection.records == 1 and projection.failed == 0
    assert projection.job_minutes == pytest.approx(START_UP_MINUTES + 0.01)
    assert projection.job_usd == pytest.approx((START_UP_MINUTES / 60 + 0.6 / 3600) * 3.0)


def test_only_failures_project_their_records() -> None:
    projection = project_batch(
        _level(completed=1, failed=9), max_output_tokens=10, price_per_hour=None, instance_count=1
    )
    assert projection is not None and (projection.records, projection.failed) == (10, 9)


@pytest.mark.parametrize(
    "overrides",
    [
        {"completed": 0},
        {"duration_s": None},
        {"duration_s": 0.0},
        {"duration_s": -1.0},
        {"request_throughput": None},
        {"output_throughput": None},
        {"p99_tpot_ms": None},
        {"p99_ttft_ms": None},
    ],
)
def test_nothing_to_project_from(overrides: dict[str, object]) -> None:
    assert (
        project_batch(_level(**overrides), max_output_tokens=10, price_per_hour=1.0, instance_count=1) is None
    )


def test_the_projection_lines_in_full() -> None:
    # 40 min x $4.20 x 2 instances = $5.60; (400 ms + 1,000 x 40 ms) x 1.5 = 60.6 s -> 61 s.
    priced = project_batch(_level(), max_output_tokens=1001, price_per_hour=4.2, instance_count=2)
    assert priced is not None and priced.lines() == [
        "batch: 1000 records (2 failed) at 64 in flight in 1800.0 s: 0.55 requests/s, 1,500.0 output tokens/s, "
        "$0.780 per million output tokens",
        "a transform job over these records on the same instances: about 40.0 min (10 min start-up + the run), "
        "about $5.60",
        "BatchInference(max_concurrent_transforms=32, instance_count=2, invocation_timeout=Duration.seconds(61)) "
        "covers answers of up to 1001 tokens at the slowest pace seen (p99 TTFT 400 ms, p99 TPOT 40.0 ms) "
        "with a 1.5x margin",
    ]
    unpriced = project_batch(
        _level(cost_per_million_output_tokens=None),
        max_output_tokens=1001,
        price_per_hour=None,
        instance_count=2,
    )
    assert unpriced is not None
    assert unpriced.lines()[0].endswith(
        "1,500.0 output tokens/s, no price (give --instance-type or --price-per-hour)"
    )
    assert unpriced.lines()[1] == (
        "a transform job over these records on the same instances: about 40.0 min (10 min start-up + the run)"
    )
