"""The canary's CloudWatch embedded-metric-format documents: one per run, one per error class.

Per-request figures are published as value arrays, so CloudWatch keeps every request as a sample and
percentile statistics (p50, p90) over a period mean what they say. The construct's dashboard and alarms
read these names; a test runs this handler and checks each metric they use is one it emits.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

NAMESPACE = "SpeculativeInfra/EndpointCanary"
TARGET_DIMENSION = "Target"
ERROR_CLASS_DIMENSION = "ErrorClass"

# (metric name, unit): one value per successful request (TokensPerChunk: one per run, all tokens over all
# chunks).
PER_REQUEST_METRICS = (
    ("TimeToFirstToken", "Milliseconds"),
    ("TimePerOutputToken", "Milliseconds"),
    ("OutputTokensPerSecond", "Count/Second"),
    ("TokensPerChunk", "None"),
)
COUNT_METRICS = (("Requests", "Count"), ("FailedRequests", "Count"))
ERRORS_METRIC = "Errors"
METRIC_NAMES = (
    *(name for name, _ in PER_REQUEST_METRICS),
    *(name for name, _ in COUNT_METRICS),
    ERRORS_METRIC,
)


def _document(dimensions: dict[str, str], values: dict[str, Any], units: dict[str, str], now_ms: int) -> str:
    document = {
        "_aws": {
            "Timestamp": now_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [list(dimensions)],
                    "Metrics": [{"Name": name, "Unit": units[name]} for name in values],
                }
            ],
        },
        **dimensions,
        **values,
    }
    return json.dumps(document, separators=(",", ":"))


def run_documents(
    target: str,
    samples: Mapping[str, Sequence[float]],
    requests: int,
    failures: dict[str, int],
    now_ms: int | None = None,
) -> list[str]:
    """EMF lines for one canary run: the per-request samples and counts, then one line per error class.

    ``samples`` maps each name of PER_REQUEST_METRICS to its values (empty lists are left out: a metric
    with no sample publishes nothing rather than a zero that would read as a measurement)."""
    now_ms = now_ms if now_ms is not None else int(time.time() * 1000)
    units = dict(PER_REQUEST_METRICS) | dict(COUNT_METRICS)
    values: dict[str, Any] = {name: list(v)[:100] for name, v in samples.items() if v}  # EMF: <= 100 values
    values["Requests"] = requests
    values["FailedRequests"] = sum(failures.values())
    lines = [_document({TARGET_DIMENSION: target}, values, units, now_ms)]
    for error_class, count in sorted(failures.items()):
        lines.append(
            _document(
                {TARGET_DIMENSION: target, ERROR_CLASS_DIMENSION: error_class},
                {ERRORS_METRIC: count},
                {ERRORS_METRIC: "Count"},
                now_ms,
            )
        )
    return lines
