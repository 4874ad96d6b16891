"""Scaling validation: the client's timeline lined up with the endpoint's capacity and scaling activities.

Inputs are on the test's time axis (seconds from its start): the capacity in service per minute (the
number of instances or copies reporting a CloudWatch sample that minute), the in-flight requests per
model, and Application Auto Scaling's activities (start, end, status, the desired capacity its
description sets). For each step that raises the load the result states the time from the step's start
to the first scale-out, to the new capacity in service, and the SLO breach in between (minutes whose
attainment fell below the objective, and requests that missed it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_DESIRED = re.compile(r"(?:desired|capacity)[^.]*?\bto (\d+)", re.IGNORECASE)
"""'Setting desired instance count to 3.' / 'Setting desired copy count to 4.' (Application Auto Scaling)."""
MIN_ATTAINMENT = 0.9
"""A minute breaches the SLO when fewer than 90% of its completed requests meet every objective."""


def desired_capacity(description: str) -> int | None:
    found = _DESIRED.search(description or "")
    return int(found.group(1)) if found else None


def _step_load(step: Mapping[str, Any]) -> float:
    rate = step.get("ramp_to_rate") or step.get("request_rate_target")
    return float(rate if rate is not None else step.get("concurrency") or 0)


def validate_scaling(
    steps: Sequence[Mapping[str, Any]],
    timeline: Sequence[Mapping[str, Any]],
    records: Sequence[Mapping[str, Any]],
    capacity: Sequence[tuple[float, float]],
    activities: Sequence[Mapping[str, Any]],
    *,
    initial_capacity: float | None = None,
    min_attainment: float = MIN_ATTAINMENT,
) -> list[dict[str, Any]]:
    """One entry per step that raises the load over the previous one (the first step against nothing)."""
    capacity = sorted(capacity)
    out = []
    for i, step in enumerate(steps):
        if i and _step_load(step) <= _step_load(steps[i - 1]):
            continue
        start, end = float(step["start_s"]), float(step["end_s"])
        before = _capacity_at(capacity, start, initial_capacity)
        scale_outs = sorted(
            (a for a in activities if start <= a["start_s"] < end and _raises(a, before)),
            key=lambda a: a["start_s"],
        )
        first = scale_outs[0] if scale_outs else None
        target = desired_capacity(first["description"]) if first is not None else None
        in_service_at = None
        if first is not None and target is not None:
            began = first["start_s"]
            in_service_at = next((t for t, n in capacity if t >= began and n >= target), None)
        settled = in_service_at if in_service_at is not None else end
        breach_minutes = [
            m["minute"]
            for m in timeline
            if start <= m["minute"] * 60.0 < settled
            and m.get("slo_attainment") is not None
            and m["slo_attainment"] < min_attainment
        ]
        missed = [
            r
            for r in records
            if start <= r["scheduled_s"] < settled
            and (r["status"] == "failed" or r.get("meets_slo") is False)
        ]
        out.append(
            {
                "step": i,
                "description": step["description"],
                "capacity_before": before,
                "first_scale_out_after_s": None if first is None else round(first["start_s"] - start, 1),
                "scale_out_status": None if first is None else first.get("status"),
                "desired_capacity": target,
                "capacity_in_service_after_s": None
                if in_service_at is None
                else round(in_service_at - start, 1),
                "slo_breach_minutes": len(breach_minutes),
                "slo_breach_window_s": round(settled - start, 1),
                "requests_missing_slo": len(missed),
            }
        )
    return out


def _capacity_at(capacity: Sequence[tuple[float, float]], t: float, default: float | None) -> float | None:
    """The last capacity sample at or before ``t`` (the first one after, when none precedes it)."""
    earlier = [n for at, n in capacity if at <= t]
    if earlier:
        return earlier[-1]
    return capacity[0][1] if capacity else default


def _raises(activity: Mapping[str, Any], before: float | None) -> bool:
    target = desired_capacity(activity.get("description", ""))
    return target is not None and (before is None or target > before)


def attach_endpoint_metrics(
    result: dict[str, Any],
    records: Sequence[Mapping[str, Any]],
    *,
    capacity: Sequence[tuple[float, float]],
    concurrent_requests: Sequence[tuple[float, float]] = (),
    invocations: Sequence[tuple[float, float]] = (),
    activities: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The merged result with the endpoint's side per minute and the scaling validation per step."""
    for key, series in (
        ("capacity", capacity),
        ("endpoint_concurrent_requests", concurrent_requests),
        ("invocations", invocations),
    ):
        by_minute = {int(t // 60): value for t, value in series}
        for minute in result["timeline"]:
            minute[key] = by_minute.get(minute["minute"])
    slo_given = bool(result["config"]["benchmark"].get("slo"))
    result["scaling"] = {
        "activities": list(activities),
        "steps": validate_scaling(result["steps"], result["timeline"], records, capacity, activities),
        "slo_given": slo_given,
    }
    return result
