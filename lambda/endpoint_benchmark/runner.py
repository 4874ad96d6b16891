"""Start, advance and finish a benchmark run: one level (or rate-sweep probe) per is-complete invocation."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

from speculative_infra.benchmark.clock import MonotonicClock
from speculative_infra.benchmark.config import BenchmarkConfig
from speculative_infra.benchmark.rate_sweep import after_probe, finish_sweep, next_probe
from speculative_infra.benchmark.report_markdown import render_markdown
from speculative_infra.benchmark.report_svg import sweep_charts
from speculative_infra.benchmark.sweep import BenchmarkState, new_benchmark, run_next_level_blocking
from speculative_infra.benchmark.transports import Transport

from .emf import level_metrics_line
from .events import BenchmarkEvent
from .gates import gate_failures
from .levels import level_key, level_load
from .plan_check import comparison, plan_markdown, predicted_for, ratio
from .storage import get_json, put_json, put_text, run_location

STATE = "state.json"
RESULTS = "results.json"
LEVELS_CSV = "results.csv"
REPORT = "report.md"
PLAN = "plan-vs-measured.json"


class BenchmarkGateFailed(RuntimeError):
    """A gate was missed: the resource fails and CloudFormation rolls the deployment back."""


class BenchmarkFailed(RuntimeError):
    """The benchmark could not measure (fail_on_error=True turns this into a failed deployment)."""


def start(event: BenchmarkEvent, s3: Any) -> dict[str, Any]:
    """Create/Update: fix the run (seed, id) and store its state; the physical id is its S3 location."""
    props = event.properties
    state = new_benchmark(BenchmarkConfig.from_dict(props.config))
    run_prefix = f"{props.results_prefix}{state.run_id}/"
    put_json(s3, props.results_bucket, run_prefix + STATE, state.to_dict())
    return {"PhysicalResourceId": f"s3://{props.results_bucket}/{run_prefix}"}


def step(
    event: BenchmarkEvent,
    s3: Any,
    *,
    seconds_available: float,
    transport: Transport | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the next level; when the sweep is done write the results, check gates, return the data."""
    if event.request_type == "Delete" or event.physical_resource_id is None:
        return {"IsComplete": True}
    bucket, run_prefix = run_location(event.physical_resource_id)
    state = BenchmarkState.from_dict(get_json(s3, bucket, run_prefix + STATE))
    pending = _pending(state)
    if pending is not None:
        report = run_next_level_blocking(pending, seconds_available=seconds_available, transport=transport)
        state = after_probe(report, state.config) if state.config.rate_sweep is not None else report.state
        if report.level is not None:
            level = report.level.to_dict()
            predicted = predicted_for(event.properties.prediction, level)
            log(level_metrics_line(state.result.target_name(), level, predicted=predicted))
            lines = "".join(json.dumps(r.to_dict(), separators=(",", ":")) + "\n" for r in report.records)
            put_text(
                s3,
                bucket,
                f"{run_prefix}requests/level-{level_key(level)}.jsonl",
                lines,
                "application/x-ndjson",
            )
        if report.level is None or _pending(state) is None:
            state = _ended(state)
        put_json(s3, bucket, run_prefix + STATE, state.to_dict())
        _write_results(s3, bucket, run_prefix, state, event.properties.prediction)
        if _pending(state) is not None:
            return {"IsComplete": False}
    return {"IsComplete": True, "Data": _finish(event, state, f"s3://{bucket}/{run_prefix}")}


def _pending(state: BenchmarkState) -> BenchmarkState | None:
    """The state whose next level is to run now, or None when the run is over."""
    if state.config.rate_sweep is not None:
        return next_probe(state)
    return None if state.done else state


def _ended(state: BenchmarkState) -> BenchmarkState:
    """A finished rate sweep carries its answer and is complete (a level sweep already is)."""
    return finish_sweep(state, MonotonicClock()) if state.config.rate_sweep is not None else state


def _write_results(
    s3: Any, bucket: str, run_prefix: str, state: BenchmarkState, prediction: dict[str, Any] | None
) -> None:
    result = state.result.to_dict()
    put_json(s3, bucket, run_prefix + RESULTS, result)
    compared = comparison(prediction, result["levels"])
    if compared is not None:
        put_json(s3, bucket, run_prefix + PLAN, compared)
    charts = sweep_charts([state.result])
    for name, svg in charts.items():
        put_text(s3, bucket, run_prefix + name, svg, "image/svg+xml")
    links = "\n".join(f"![{name[:-4]}]({name})" for name in charts)
    put_text(
        s3,
        bucket,
        run_prefix + REPORT,
        render_markdown([state.result])
        + "\n"
        + plan_markdown(compared, result["levels"])
        + "\n## Plots\n\n"
        + links
        + "\n",
        "text/markdown",
    )
    levels = result["levels"]
    if levels:
        columns = list(levels[0])
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(columns)
        for level in levels:
            writer.writerow(
                [json.dumps(level[c]) if isinstance(level[c], (dict, list)) else level[c] for c in columns]
            )
        put_text(s3, bucket, run_prefix + LEVELS_CSV, out.getvalue(), "text/csv")


def _finish(event: BenchmarkEvent, state: BenchmarkState, results_uri: str) -> dict[str, str]:
    result = state.result.to_dict()
    levels = [lv for lv in result["levels"] if lv.get("completed")]
    failures = gate_failures(event.properties.gates, result["levels"])
    if failures:
        raise BenchmarkGateFailed(f"benchmark gate failed ({results_uri}): " + "; ".join(failures))
    if result["status"] != "complete" and event.properties.fail_on_error:
        raise BenchmarkFailed(f"benchmark {result['status']}: {result.get('error') or 'see ' + results_uri}")
    # Every attribute the construct reads, even when nothing was measured: a missing one would fail the
    # stack at GetAtt instead of reporting an empty figure.
    data = dict.fromkeys(ATTRIBUTES, "")
    data.update(
        {
            "Status": str(result["status"]),
            "Error": str(result.get("error") or ""),
            "ResultsS3Uri": results_uri,
            "MaxSustainedRate": _fmt(result.get("max_sustained_rate")),
        }
    )
    if levels:
        low = min(levels, key=level_load)
        high = max(levels, key=level_load)
        for suffix, level in (("Lowest", low), ("Highest", high)):
            data[f"Concurrency{suffix}"] = str(level["concurrency"])
            data[f"RequestRate{suffix}"] = _fmt(level.get("request_rate"))
            data[f"OutputThroughput{suffix}"] = _fmt(level.get("output_throughput"))
            data[f"P50TtftMs{suffix}"] = _fmt(level.get("median_ttft_ms"))
            data[f"P99TtftMs{suffix}"] = _fmt(level.get("p99_ttft_ms"))
        data["CostPerMillionOutputTokens"] = _fmt(high.get("cost_per_million_output_tokens"))
        data["RequestGoodputHighest"] = _fmt(high.get("request_goodput"))
        data["TokensPerChunkBaseline"] = _fmt(low.get("mean_tokens_per_chunk"))
        planned = predicted_for(event.properties.prediction, high)
        if planned is not None:
            data["PredictedOutputThroughputHighest"] = _fmt(planned.get("output_throughput"))
            data["PredictedCostPerMillionOutputTokens"] = _fmt(planned.get("cost_per_million_output_tokens"))
            data["MeasuredOverPredictedOutputThroughputHighest"] = _fmt(
                ratio(high.get("output_throughput"), planned.get("output_throughput"))
            )
    # The acceptance baseline SLO alarms compare the canary with must be a number: "0" when not measured
    # (an alarm below it never fires).
    data["TokensPerChunkBaseline"] = data["TokensPerChunkBaseline"] or "0"
    return data


ATTRIBUTES = (
    "Status",
    "Error",
    "ResultsS3Uri",
    *(
        f"{name}{suffix}"
        for suffix in ("Lowest", "Highest")
        for name in ("Concurrency", "RequestRate", "OutputThroughput", "P50TtftMs", "P99TtftMs")
    ),
    "CostPerMillionOutputTokens",
    "RequestGoodputHighest",
    "TokensPerChunkBaseline",
    "MaxSustainedRate",
    # With a prediction (EndpointBenchmark's PLAN_ATTRIBUTES); empty without one.
    "PredictedOutputThroughputHighest",
    "PredictedCostPerMillionOutputTokens",
    "MeasuredOverPredictedOutputThroughputHighest",
)


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"
