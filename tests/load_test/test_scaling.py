"""Scaling validation on recorded metric fixtures: time to scale out, to capacity in service, SLO breach."""

from __future__ import annotations

import pytest

from speculative_infra.benchmark.distributed.scaling import desired_capacity, validate_scaling

STEPS = [
    {
        "step": 0,
        "description": "5 requests/s for 10 min",
        "start_s": 0,
        "end_s": 600,
        "request_rate_target": 5,
    },
    {
        "step": 1,
        "description": "15 requests/s for 20 min",
        "start_s": 600,
        "end_s": 1800,
        "request_rate_target": 15,
    },
]
# One instance until minute 16, two from then on (CPU samples per minute).
CAPACITY = [(60.0 * m, 1.0 if m < 16 else 2.0) for m in range(30)]
ACTIVITIES = [
    {
        "start_s": 690.0,
        "end_s": 960.0,
        "status": "Successful",
        "description": "Setting desired instance count to 2.",
        "cause": "alarm",
    },
]
# Attainment falls under 90% from minute 10 until minute 15 (the new instance is in service at 16).
TIMELINE = [{"minute": m, "slo_attainment": 0.5 if 10 <= m < 16 else 0.99} for m in range(30)]
RECORDS = [
    {"scheduled_s": t, "status": "ok", "meets_slo": not (600 <= t < 960 and int(t) % 2 == 0)}
    for t in range(0, 1800, 3)
]


def test_the_step_that_raises_the_load_gets_its_scaling_times_and_breach():
    (first, second) = validate_scaling(STEPS, TIMELINE, RECORDS, CAPACITY, ACTIVITIES)
    assert first["step"] == 0 and first["first_scale_out_after_s"] is None
    assert second["capacity_before"] == 1.0
    assert second["first_scale_out_after_s"] == 90.0
    assert second["desired_capacity"] == 2
    assert second["capacity_in_service_after_s"] == 360.0
    assert second["slo_breach_minutes"] == 6
    assert second["slo_breach_window_s"] == 360.0
    assert second["requests_missing_slo"] == sum(1 for r in RECORDS if not r["meets_slo"])


def test_without_a_scale_out_the_breach_runs_to_the_end_of_the_step():
    (_, second) = validate_scaling(STEPS, TIMELINE, RECORDS, [(0.0, 1.0)], [])
    assert second["first_scale_out_after_s"] is None and second["capacity_in_service_after_s"] is None
    assert second["slo_breach_window_s"] == 1200.0 and second["slo_breach_minutes"] == 6


def test_a_scale_out_that_never_reaches_service_is_reported_as_such():
    stuck = [(60.0 * m, 1.0) for m in range(30)]
    (_, second) = validate_scaling(STEPS, TIMELINE, RECORDS, stuck, ACTIVITIES)
    assert second["first_scale_out_after_s"] == 90.0 and second["capacity_in_service_after_s"] is None


def test_scale_in_activities_and_steps_that_lower_the_load_are_not_scale_outs():
    scale_in = [{**ACTIVITIES[0], "description": "Setting desired instance count to 1."}]
    (_, second) = validate_scaling(STEPS, TIMELINE, RECORDS, CAPACITY, scale_in)
    assert second["first_scale_out_after_s"] is None
    down = [STEPS[1], {**STEPS[0], "step": 1, "start_s": 1200, "end_s": 1800}]
    assert [v["step"] for v in validate_scaling(down, TIMELINE, RECORDS, CAPACITY, [])] == [0]


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Setting desired instance count to 3.", 3),
        ("Setting desired copy count to 12.", 12),
        ("Setting desired capacity to 4.", 4),
        ("Failed to set desired instance count to 5. Reason: quota", 5),
        ("Terminating instances", None),
        ("", None),
    ],
)
def test_desired_capacity_from_an_activity_description(text, count):
    assert desired_capacity(text) == count
