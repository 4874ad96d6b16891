"""EndpointLoadTest's handlers: plan, workers against the SageMaker stand-in (boto3's real event-stream
parser), merge with CloudWatch and Application Auto Scaling stubbed against their service models."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from speculative_infra_lambda.endpoint_load_test import handler, store
from tests.benchmark.stand_ins.server import ServerProcess

BUCKET = "load-test-results"


@pytest.fixture
def s3(bucket_client: Any) -> Any:
    return bucket_client(BUCKET)


def _config(runtime: ServerProcess, **extra: Any) -> dict[str, Any]:
    return {
        "benchmark": {
            "target": {
                "kind": "sagemaker",
                "endpoint_name": "steady",
                "region": "us-west-2",
                "endpoint_url": runtime.base_url,
                "container": "vllm",
                "client": "asyncio",
            },
            "workload": {"input_tokens": 20, "output_tokens": 10},
            "slo": {"ttft_ms": 500},
        },
        "steps": [{"duration_s": 1.0, "request_rate": 8}, {"duration_s": 1.0, "request_rate": 16}],
        "workers": 2,
        "wave_s": 1.0,
        "drain_s": 0.5,
        **extra,
    }


@pytest.fixture(autouse=True)
def unaligned_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests start in a second, not on the next whole minute (test_the_start_falls_on_a_whole_minute)."""
    monkeypatch.setattr(handler, "START_ALIGN_S", 1e-6)


def _plan(runtime: ServerProcess, s3: Any, execution: str, **extra: Any) -> dict[str, Any]:
    event = {
        "input": {},
        "defaults": _config(runtime, **extra),
        "bucket": BUCKET,
        "prefix": "lt/",
        "execution": execution,
    }
    # The first wave starts a minute after the plan; start it in one second instead.
    return handler.plan(event, None, s3=s3, now=time.time() - handler.START_DELAY_S + 1.0)


def test_a_config_the_engine_refuses_is_a_refused_plan_not_a_crash(runtime, s3):
    event = {
        "input": {"config": {"steps": []}},
        "defaults": _config(runtime),
        "bucket": BUCKET,
        "prefix": "lt/",
        "execution": "bad",
    }
    result = handler.plan(event, None, s3=s3)
    assert result["ok"] is False and "benchmark" in result["error"]
    assert s3.list_objects_v2(Bucket=BUCKET, Prefix="lt/bad/").get("KeyCount") == 0


def test_plan_writes_one_item_per_wave_and_worker_launched_ahead_of_its_wave(runtime, s3):
    plan = _plan(runtime, s3, "items", wave_s=1.0)
    items = store.get_json(s3, BUCKET, plan["items_key"])
    assert [(i["wave"], i["worker"]) for i in items] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    launch = [datetime.fromisoformat(i["launch_at"].replace("Z", "+00:00")) for i in items]
    assert launch[2] - launch[0] == timedelta(seconds=1.0)
    start = datetime.fromtimestamp(plan["start_epoch"], UTC)
    assert abs((start - launch[0]).total_seconds() - 20.0) < 0.02  # LEAD_S ahead
    assert plan["items"] == 4 and plan["waves"] == 2


def _run_workers(
    plan: dict[str, Any], s3: Any, skip: set[tuple[int, int]] = frozenset()
) -> list[dict[str, Any]]:
    items = [i for i in store.get_json(s3, BUCKET, plan["items_key"]) if (i["wave"], i["worker"]) not in skip]
    with ThreadPoolExecutor(len(items)) as pool:  # Lambda runs them at once
        return list(pool.map(lambda item: handler.worker({"plan": plan, "item": item}, None, s3=s3), items))


def _stubbed(start_epoch: float) -> tuple[Any, Any, Stubber, Stubber]:
    cloudwatch = boto3.client("cloudwatch", region_name="us-west-2")
    autoscaling = boto3.client("application-autoscaling", region_name="us-west-2")
    cw, aas = Stubber(cloudwatch), Stubber(autoscaling)
    start = datetime.fromtimestamp(start_epoch, UTC)
    cw.add_response(
        "get_metric_data",
        {
            "MetricDataResults": [
                {"Id": "capacity", "Timestamps": [start], "Values": [1.0], "StatusCode": "Complete"},
                {"Id": "concurrency", "Timestamps": [start], "Values": [3.0], "StatusCode": "Complete"},
                {"Id": "invocations", "Timestamps": [start], "Values": [24.0], "StatusCode": "Complete"},
            ]
        },
        {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": "TimestampAscending"},
    )
    aas.add_response(
        "describe_scaling_activities",
        {
            "ScalingActivities": [
                {
                    "ActivityId": "a1",
                    "ServiceNamespace": "sagemaker",
                    "ResourceId": "endpoint/steady/variant/AllTraffic",
                    "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
                    "Description": "Setting desired instance count to 2.",
                    "Cause": "monitor alarm",
                    "StartTime": start + timedelta(seconds=1.2),
                    "StatusCode": "InProgress",
                }
            ]
        },
        {"ServiceNamespace": "sagemaker", "ResourceId": "endpoint/steady/variant/AllTraffic"},
    )
    cw.add_response("put_metric_data", {}, {"Namespace": handler.METRIC_NAMESPACE, "MetricData": ANY})
    return cloudwatch, autoscaling, cw, aas


def test_workers_and_merge_write_a_scaling_aligned_report(runtime, s3):
    plan = _plan(runtime, s3, "full")
    summaries = _run_workers(plan, s3)
    assert {s["status"] for s in summaries} == {"ok"} and sum(s["requests"] for s in summaries) > 0
    cloudwatch, autoscaling, cw, aas = _stubbed(plan["start_epoch"])
    with cw, aas:
        merged = handler.merge(
            {"plan": plan, "target": {"endpoint_name": "steady", "variant_name": "AllTraffic", "label": "t"}},
            None,
            s3=s3,
            cloudwatch=cloudwatch,
            autoscaling=autoscaling,
        )
        cw.assert_no_pending_responses()
        aas.assert_no_pending_responses()
    assert merged["status"] == "complete" and merged["reported"] == merged["expected"] == 4
    result = store.get_json(s3, BUCKET, "lt/full/results.json")
    records = [
        r
        for w in range(2)
        for k in range(2)
        for r in store.get_jsonl(s3, BUCKET, store.records_key("lt/full/", w, k))
    ]
    assert result["totals"]["requests"] == len(records) == sum(s["requests"] for s in summaries)
    assert result["timeline"][0]["capacity"] == 1.0 and result["timeline"][0]["invocations"] == 24.0
    (raised,) = [v for v in result["scaling"]["steps"] if v["step"] == 1]
    assert raised["desired_capacity"] == 2 and raised["first_scale_out_after_s"] == 0.2
    report = s3.get_object(Bucket=BUCKET, Key="lt/full/report.md")["Body"].read().decode()
    assert "## Scaling" in report and "## Steps" in report
    assert s3.get_object(Bucket=BUCKET, Key="lt/full/load-ttft.svg")["Body"].read().startswith(b"<svg")


def test_a_worker_that_never_ran_and_unreadable_metrics_are_reported(runtime, s3):
    plan = _plan(runtime, s3, "partial")
    _run_workers(plan, s3, skip={(1, 1)})
    cloudwatch = boto3.client("cloudwatch", region_name="us-west-2")
    cw = Stubber(cloudwatch)
    cw.add_client_error("get_metric_data", "AccessDenied", "not authorized")
    cw.add_response("put_metric_data", {}, {"Namespace": handler.METRIC_NAMESPACE, "MetricData": ANY})
    with cw:
        merged = handler.merge(
            {"plan": plan, "target": {"endpoint_name": "steady"}}, None, s3=s3, cloudwatch=cloudwatch
        )
    assert merged["status"] == "partial" and merged["reported"] == 3
    result = store.get_json(s3, BUCKET, "lt/partial/results.json")
    assert result["workers"]["failed"][0]["wave"] == 1 and "AccessDenied" in result["scaling"]["error"]


def test_a_worker_that_cannot_run_writes_its_failure(runtime, s3):
    plan = _plan(runtime, s3, "broken")
    config = store.get_json(s3, BUCKET, store.config_key(plan["run_prefix"]))
    config["start_epoch"] = time.time() + 10_000  # far beyond the lead a worker waits
    store.put_json(s3, BUCKET, store.config_key(plan["run_prefix"]), config)
    summary = handler.worker({"plan": plan, "item": {"wave": 0, "worker": 1}}, None, s3=s3)
    assert summary["status"] == "failed"
    output = store.get_json(s3, BUCKET, store.output_key(plan["run_prefix"], 0, 1))
    assert "waits at most" in output["error"]
    assert json.dumps(output)


def test_overrides_are_laid_over_the_constructs_test(runtime, s3):
    event = {
        "input": {"overrides": {"workers": 3, "benchmark": {"workload": {"output_tokens": 7}}}},
        "defaults": _config(runtime),
        "bucket": BUCKET,
        "prefix": "lt/",
        "execution": "over",
    }
    plan = handler.plan(event, None, s3=s3)
    stored = store.get_json(s3, BUCKET, store.config_key(plan["run_prefix"]))["config"]
    assert stored["workers"] == 3 and plan["workers"] == 3
    assert stored["benchmark"]["workload"]["output_tokens"] == 7
    assert stored["benchmark"]["workload"]["input_tokens"] == 20  # kept from the construct's test
    assert stored["benchmark"]["target"]["endpoint_name"] == "steady"
    refused = handler.plan(
        {**event, "input": {"overrides": {"steps": "many"}}, "execution": "x"}, None, s3=s3
    )
    assert refused["ok"] is False and "steps" in refused["error"]


def test_the_start_falls_on_a_whole_minute_so_minutes_are_cloudwatchs_periods(runtime, s3, monkeypatch):
    monkeypatch.setattr(handler, "START_ALIGN_S", 60.0)
    event = {
        "input": {},
        "defaults": _config(runtime),
        "bucket": BUCKET,
        "prefix": "lt/",
        "execution": "aligned",
    }
    plan = handler.plan(event, None, s3=s3, now=1_800_000_000.5)  # half a second past a whole minute
    assert plan["start_epoch"] == 1_800_000_120.0  # the first whole minute at least START_DELAY_S ahead
    assert plan["start_epoch"] % 60 == 0 and plan["start_epoch"] - 1_800_000_000.5 >= handler.START_DELAY_S
