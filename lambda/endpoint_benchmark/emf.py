"""CloudWatch embedded metric format lines: Lambda's log pipeline turns them into metrics."""

from __future__ import annotations

import json
import time
from typing import Any

from .plan_check import ratio

NAMESPACE = "SpeculativeInfra/EndpointBenchmark"
_METRICS = (
    ("OutputThroughput", "output_throughput", "Count/Second"),
    ("RequestThroughput", "request_throughput", "Count/Second"),
    ("MedianTtft", "median_ttft_ms", "Milliseconds"),
    ("P99Ttft", "p99_ttft_ms", "Milliseconds"),
    ("MedianTpot", "median_tpot_ms", "Milliseconds"),
    ("MedianE2eLatency", "median_e2el_ms", "Milliseconds"),
    ("OutputTokensPerSecondPerUser", "output_tokens_per_second_per_user", "Count/Second"),
    ("CostPerMillionOutputTokens", "cost_per_million_output_tokens", "None"),
    ("FailedRequests", "failed", "Count"),
    ("RequestGoodput", "request_goodput", "Count/Second"),
    ("OutputGoodput", "output_goodput", "Count/Second"),
)


# With a prediction: the planner's figures, and measured / predicted output tok/s.
_PREDICTED = (
    ("PredictedOutputThroughput", "output_throughput", "Count/Second"),
    ("PredictedMedianTtft", "median_ttft_ms", "Milliseconds"),
    ("PredictedMedianE2eLatency", "median_e2el_ms", "Milliseconds"),
)
PLAN_RATIO = "MeasuredOverPredictedOutputThroughput"


def level_metrics_line(
    target: str,
    level: dict[str, Any],
    now_ms: int | None = None,
    predicted: dict[str, Any] | None = None,
) -> str:
    """One EMF document for one level (absent figures are left out): dimension ``Concurrency`` for a
    closed-loop level, ``RequestRate`` for an open-loop one; with `predicted`, the plan beside it."""
    values = {name: level[key] for name, key, _ in _METRICS if level.get(key) is not None}
    units = [{"Name": name, "Unit": unit} for name, key, unit in _METRICS if name in values]
    if predicted is not None:
        for name, key, unit in _PREDICTED:
            if isinstance(predicted.get(key), int | float):
                values[name] = predicted[key]
                units.append({"Name": name, "Unit": unit})
        plan_ratio = ratio(level.get("output_throughput"), predicted.get("output_throughput"))
        if plan_ratio is not None:
            values[PLAN_RATIO] = plan_ratio
            units.append({"Name": PLAN_RATIO, "Unit": "None"})
    rate = level.get("request_rate")
    dimension, value = (
        ("Concurrency", str(level["concurrency"])) if rate is None else ("RequestRate", f"{rate:g}")
    )
    document = {
        "_aws": {
            "Timestamp": now_ms if now_ms is not None else int(time.time() * 1000),
            "CloudWatchMetrics": [
                {"Namespace": NAMESPACE, "Dimensions": [["Target", dimension]], "Metrics": units}
            ],
        },
        "Target": target,
        dimension: value,
        **values,
    }
    return json.dumps(document, separators=(",", ":"))
