"""Real time vs asynchronous vs batch: the arithmetic by hand, its boundaries, and the check CLI."""

from __future__ import annotations

import json

import pytest

from speculative_infra.cost import CostEstimate
from speculative_infra.serving_cost import (
    ServingWorkload,
    compare_serving_costs,
    throughput_from_results,
)
from tests.conftest import REPO

PRICE = CostEstimate(
    instance_type="ml.g6e.12xlarge",
    min_instances=1,
    max_instances=1,
    usd_per_hour=10.0,
    price_region="us-east-1",
    source="test",
    as_of=None,
    note="test price",
)


def _by_mode(costs):
    return {c.mode: c for c in costs}


def test_arithmetic_by_hand():
    # 36,000,000 tokens at 1,000 tokens/s: 10 busy instance-hours.
    costs = _by_mode(compare_serving_costs(PRICE, ServingWorkload(36e6, 1000.0)))
    assert costs["real_time"].instance_hours_per_day == 24 and costs["real_time"].usd_per_day == 240
    # + one wake: 10 min start-up + 15 min tail.
    assert costs["async"].instance_hours_per_day == pytest.approx(10 + 25 / 60)
    assert costs["async"].usd_per_day == pytest.approx((10 + 25 / 60) * 10)
    # + one job's 10 min start-up.
    assert costs["batch"].instance_hours_per_day == pytest.approx(10 + 10 / 60)


def test_cheapest_first_and_the_crossover():
    # Busy 23.5 h: async (23.5 + 25/60 = 23.92 h) is still below 24 h; busy 23.6 h crosses over.
    below = compare_serving_costs(PRICE, ServingWorkload(23.5 * 3600 * 1000, 1000.0))
    assert [c.mode for c in below][:2] == ["batch", "async"]
    above = _by_mode(compare_serving_costs(PRICE, ServingWorkload(23.6 * 3600 * 1000, 1000.0)))
    assert above["async"].usd_per_day > above["real_time"].usd_per_day


def test_real_time_adds_instances_when_one_day_is_not_enough():
    # 30 busy hours need two instances around the clock.
    costs = _by_mode(compare_serving_costs(PRICE, ServingWorkload(30 * 3600 * 1000, 1000.0)))
    assert costs["real_time"].instance_hours_per_day == 48
    assert "2 instance(s)" in costs["real_time"].note


def test_min_instances_and_wakes_count():
    costs = _by_mode(
        compare_serving_costs(
            PRICE,
            ServingWorkload(
                3.6e6, 1000.0, real_time_min_instances=2, async_wakes_per_day=4, batch_jobs_per_day=3
            ),
        )
    )
    assert costs["real_time"].instance_hours_per_day == 48
    assert costs["async"].instance_hours_per_day == pytest.approx(1 + 4 * 25 / 60)
    assert costs["batch"].instance_hours_per_day == pytest.approx(1 + 3 * 10 / 60)


def test_batch_unavailable_is_last_with_its_reason():
    costs = compare_serving_costs(PRICE, ServingWorkload(1e6, 100.0), batch_unavailable="no g7e (SI103)")
    assert costs[-1].mode == "batch" and costs[-1].usd_per_day is None and "SI103" in costs[-1].note


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"daily_output_tokens": 0, "output_tokens_per_second": 1.0}, "daily_output_tokens is 0"),
        ({"daily_output_tokens": 1.0, "output_tokens_per_second": -5}, "output_tokens_per_second is -5"),
        (
            {"daily_output_tokens": 1.0, "output_tokens_per_second": 1.0, "async_wakes_per_day": 0},
            "async_wakes_per_day",
        ),
    ],
)
def test_bad_workloads_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ServingWorkload(**kwargs)


def test_throughput_from_a_results_file():
    results = json.loads((REPO / "tests/benchmark/fixtures/results_v1.json").read_text())
    # The fixture measured two instances: per instance, half its best level.
    assert results["cost"]["instance_count"] == 2
    assert throughput_from_results(results) == pytest.approx(98.68421052631697 / 2)
    with pytest.raises(ValueError, match="no levels"):
        throughput_from_results({"schema_version": 1})


def test_check_cli_prints_the_comparison(run_cli):
    spec = str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml")
    code, out, _ = run_cli("check", spec, "--daily-tokens", "5e7", "--throughput", "900")
    assert code == 0
    assert "Serving cost for 50,000,000 output tokens a day" in out
    assert "batch transform does not offer ml.g7e.2xlarge (SI103)" in out
    code, out, _ = run_cli(
        "check",
        spec,
        "--format",
        "json",
        "--daily-tokens",
        "5e7",
        "--benchmark-results",
        str(REPO / "tests/benchmark/fixtures/results_v1.json"),
    )
    data = json.loads(out)
    assert data["serving_costs"]["output_tokens_per_second"] == pytest.approx(98.68421052631697 / 2)
    assert [m["mode"] for m in data["serving_costs"]["modes"]][-1] == "batch"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--daily-tokens", "5e7"], "needs one of --throughput or --benchmark-results"),
        (["--throughput", "900"], "need --daily-tokens"),
        (["--daily-tokens", "-1", "--throughput", "900"], "daily_output_tokens is -1"),
        (["--daily-tokens", "inf", "--throughput", "900"], "allowed: a number > 0 and <= 1e+15"),
        (["--daily-tokens", "1e300", "--throughput", "1e-300"], "allowed: a number > 0 and <= 1e+15"),
        (["--daily-tokens", "5e7", "--throughput", "1e-300"], "output_tokens_per_second is 1e-300; allowed"),
        (["--daily-tokens", "5e7", "--throughput", "nan"], "output_tokens_per_second is nan; allowed"),
        (["--daily-tokens", "5e7", "--throughput", "900", "--wakes-per-day", "10" * 12], "allowed: 1 to 57"),
        (["--daily-tokens", "5e7", "--throughput", "900", "--jobs-per-day", "1441"], "allowed: 1 to 1440"),
        (
            ["--daily-tokens", "5e7", "--benchmark-results", "/nonexistent.json"],
            "cannot read the results file: No such file or directory",
        ),
    ],
)
def test_check_cli_refuses_bad_cost_flags(run_cli, args, message):
    code, _, err = run_cli("check", str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml"), *args)
    assert code == 2 and message in err
