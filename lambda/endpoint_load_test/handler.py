"""Lambda entry points of EndpointLoadTest's state machine (thin: parse, call the engine, store).

- ``plan``: validate the test, fix its start time, write its config and the (wave, worker) items the
  Distributed Map reads.
- ``worker``: one (wave, worker) item: run its slice, write its output and records.
- ``merge``: every output merged, the endpoint's metrics and scaling lined up, results written.
"""

from __future__ import annotations

import json
import math
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from speculative_infra.benchmark.distributed.merge import merge_outputs
from speculative_infra.benchmark.distributed.profile import LEAD_S, LoadTestConfig
from speculative_infra.benchmark.distributed.report import load_test_charts, render_load_test_markdown
from speculative_infra.benchmark.distributed.scaling import attach_endpoint_metrics
from speculative_infra.benchmark.distributed.schedule import wave_window
from speculative_infra.benchmark.distributed.worker import failed_output, run_worker_blocking

from . import store
from .endpoint_metrics import fetch_activities, fetch_metrics

START_DELAY_S = 60.0
"""The first wave starts this long after the plan: the Distributed Map starts its children meanwhile."""
START_ALIGN_S = 60.0
"""The start falls on a whole minute of the wall clock."""
LATE_LAUNCH_S = 60.0
"""A child that reaches its launch this much after the scheduled time is skipped and reported."""
METRIC_NAMESPACE = "SpeculativeInfra/EndpointLoadTest"


def _client(name: str) -> Any:
    import boto3

    return boto3.client(name)  # type: ignore[call-overload]  # one helper for several services


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


def _merged(base: Any, overrides: Any) -> Any:
    """``overrides`` laid over ``base`` key by key (mappings merge, anything else replaces)."""
    if isinstance(base, dict) and isinstance(overrides, dict):
        return {**base, **{k: _merged(base.get(k), v) for k, v in overrides.items()}}
    return overrides


def plan(event: dict[str, Any], context: Any, s3: Any = None, now: float | None = None) -> dict[str, Any]:
    """{"input": the execution's input, "defaults": the construct's test, "bucket", "prefix", "execution"}.

    The input may hold ``overrides`` (laid over the construct's test: steps, workers, workload, slo, ...)
    or a whole ``config``; an empty input runs the construct's test as it is.
    """
    raw = event.get("input")
    given: dict[str, Any] = raw if isinstance(raw, dict) else {}
    document = given.get("config") or _merged(event["defaults"], given.get("overrides") or {})
    try:
        config = LoadTestConfig.from_dict(document)
    except (
        TypeError,
        ValueError,
    ) as error:  # ConfigError (a ValueError) names the field; a TypeError, the shape
        return {"ok": False, "error": f"load test config: {error}"}
    s3 = s3 or _client("s3")
    bucket = event["bucket"]
    run_prefix = f"{event['prefix']}{event['execution']}/"
    # On a whole minute: the test's minutes are then CloudWatch's 60-second periods, not shifted by seconds.
    start = (
        math.ceil(((now if now is not None else time.time()) + START_DELAY_S) / START_ALIGN_S) * START_ALIGN_S
    )
    items = []
    for wave in range(config.waves):
        wave_start, _ = wave_window(config, wave)
        launch = start + wave_start - LEAD_S
        for worker in range(config.workers):
            items.append(
                {
                    "wave": wave,
                    "worker": worker,
                    "launch_at": _iso(launch),
                    "latest_launch": _iso(launch + LATE_LAUNCH_S),
                }
            )
    store.put_json(
        s3, bucket, store.config_key(run_prefix), {"config": config.to_dict(), "start_epoch": start}
    )
    store.put_json(s3, bucket, store.items_key(run_prefix), items)
    summary = {
        "ok": True,
        "bucket": bucket,
        "run_prefix": run_prefix,
        "items_key": store.items_key(run_prefix),
        "map_results_prefix": f"{run_prefix}map-results",
        "start_epoch": start,
        "started_at": _iso(start),
        "waves": config.waves,
        "workers": config.workers,
        "items": len(items),
        # The merge waits for the endpoint's last metrics after every wave has drained.
        "merge_at": _iso(start + config.duration_s + config.drain_s + 180.0),
    }
    print(json.dumps({"handler": "plan", **summary}))
    return summary


def worker(event: dict[str, Any], context: Any, s3: Any = None, transport: Any = None) -> dict[str, Any]:
    """{"plan": plan's summary, "item": one of its items}; never raises for a run that went wrong."""
    plan_, item = event["plan"], event["item"]
    s3 = s3 or _client("s3")
    bucket, run_prefix = plan_["bucket"], plan_["run_prefix"]
    wave, index = int(item["wave"]), int(item["worker"])
    stored = store.get_json(s3, bucket, store.config_key(run_prefix))
    records: list[dict[str, Any]] = []
    try:
        config = LoadTestConfig.from_dict(stored["config"])
        output, records = run_worker_blocking(
            config, wave, index, float(stored["start_epoch"]), transport=transport
        )
    except Exception as error:  # the merge reports it; a raised error would only say "failed"
        output = failed_output(wave, index, f"{type(error).__name__}: {error}")
    store.put_jsonl(s3, bucket, store.records_key(run_prefix, wave, index), records)
    store.put_json(s3, bucket, store.output_key(run_prefix, wave, index), output)
    summary = {"wave": wave, "worker": index, "status": output["status"], "requests": len(records)}
    print(json.dumps({"handler": "worker", **summary}))
    return summary


def merge(
    event: dict[str, Any], context: Any, s3: Any = None, cloudwatch: Any = None, autoscaling: Any = None
) -> dict[str, Any]:
    """{"plan": plan's summary, "target": the endpoint}: results.json, report.md, charts, metrics."""
    plan_, target = event["plan"], event.get("target") or {}
    s3 = s3 or _client("s3")
    bucket, run_prefix = plan_["bucket"], plan_["run_prefix"]
    stored = store.get_json(s3, bucket, store.config_key(run_prefix))
    config = LoadTestConfig.from_dict(stored["config"])
    outputs: dict[tuple[int, int], Any] = {}
    records: list[dict[str, Any]] = []
    for wave in range(config.waves):
        for index in range(config.workers):
            outputs[(wave, index)] = store.get_json(s3, bucket, store.output_key(run_prefix, wave, index))
            records.extend(store.get_jsonl(s3, bucket, store.records_key(run_prefix, wave, index)))
    start_epoch = float(stored["start_epoch"])
    result = merge_outputs(config, outputs, records, started_at=_iso(start_epoch))
    if target.get("endpoint_name"):
        _attach_endpoint(result, records, target, start_epoch, config, cloudwatch, autoscaling)
    store.put_json(s3, bucket, f"{run_prefix}results.json", result)
    store.put_bytes(
        s3, bucket, f"{run_prefix}report.md", render_load_test_markdown(result).encode(), "text/markdown"
    )
    for name, svg in load_test_charts(result).items():
        store.put_bytes(s3, bucket, f"{run_prefix}{name}", svg.encode(), "image/svg+xml")
    _put_step_metrics(cloudwatch or _client("cloudwatch"), target, result)
    summary = {
        "status": result["status"],
        "results_uri": f"s3://{bucket}/{run_prefix}results.json",
        "requests": result["totals"]["requests"],
        "reported": result["workers"]["reported"],
        "expected": result["workers"]["expected"],
        "client_bottleneck_minutes": len(result["client_bottleneck_minutes"]),
    }
    print(json.dumps({"handler": "merge", **summary}))
    return summary


def _attach_endpoint(
    result: dict[str, Any],
    records: list[dict[str, Any]],
    target: dict[str, Any],
    start_epoch: float,
    config: LoadTestConfig,
    cloudwatch: Any,
    autoscaling: Any,
) -> None:
    start = datetime.fromtimestamp(start_epoch, UTC)
    end = start + timedelta(seconds=config.duration_s + config.drain_s)
    try:
        series = fetch_metrics(cloudwatch or _client("cloudwatch"), target, start, end)
        activities = fetch_activities(autoscaling or _client("application-autoscaling"), target, start, end)
    except Exception as error:  # the client side stands on its own; say why the endpoint side is missing
        result["scaling"] = {"error": f"{type(error).__name__}: {error}", "steps": []}
        return
    attach_endpoint_metrics(
        result,
        records,
        capacity=series["capacity"],
        concurrent_requests=series["concurrency"],
        invocations=series["invocations"],
        activities=activities,
    )


def _put_step_metrics(cloudwatch: Any, target: dict[str, Any], result: dict[str, Any]) -> None:
    """One datapoint per step and figure, dimensioned by the target and the step."""
    name = target.get("label") or target.get("endpoint_name") or "unknown"
    data = []
    for step in result["steps"]:
        dims = [{"Name": "Target", "Value": name}, {"Name": "Step", "Value": str(step["step"])}]
        for metric, value, unit in (
            ("RequestRate", step["request_rate"], "Count/Second"),
            ("OutputThroughput", step["output_throughput"], "Count/Second"),
            ("RequestGoodput", step["request_goodput"], "Count/Second"),
            ("P99TtftMs", step["ttft_ms"]["p99"], "Milliseconds"),
            ("P99TpotMs", step["tpot_ms"]["p99"], "Milliseconds"),
            ("FailedRequests", step["failed"], "Count"),
        ):
            if value is not None:
                data.append({"MetricName": metric, "Dimensions": dims, "Value": float(value), "Unit": unit})
    for i in range(0, len(data), 1000):  # PutMetricData takes at most 1,000 datapoints per call
        cloudwatch.put_metric_data(Namespace=METRIC_NAMESPACE, MetricData=data[i : i + 1000])
