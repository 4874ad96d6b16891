"""EndpointBenchmark handlers against real wire protocols: the SageMaker-runtime stand-in (event
stream) for the endpoint and a local moto S3 server for the run state and results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from speculative_infra_lambda.endpoint_benchmark import handler
from speculative_infra_lambda.endpoint_benchmark.emf import NAMESPACE, level_metrics_line
from speculative_infra_lambda.endpoint_benchmark.events import Gates, PropertyError, parse_event
from speculative_infra_lambda.endpoint_benchmark.gates import gate_failures
from speculative_infra_lambda.endpoint_benchmark.runner import (
    ATTRIBUTES,
    BenchmarkFailed,
    BenchmarkGateFailed,
)
from tests.benchmark.stand_ins.server import ServerProcess

BUCKET = "bench-results-test"


@pytest.fixture
def s3(bucket_client: Any) -> Any:
    return bucket_client(BUCKET)


class Context:
    def __init__(self, remaining_s: float = 600) -> None:
        self.remaining_s = remaining_s

    def get_remaining_time_in_millis(self) -> int:
        return int(self.remaining_s * 1000)


def event(
    runtime: ServerProcess,
    request: str = "Create",
    endpoint: str = "steady",
    physical: str | None = None,
    gates: dict[str, float] | None = None,
    fail_on_error: bool = False,
    levels: list[int] | None = None,
    load: dict[str, Any] | None = None,
    slo: dict[str, float] | None = None,
    rate_sweep: dict[str, float] | None = None,
    prediction: dict[str, Any] | None = None,
) -> dict[str, Any]:
    config = {
        "target": {
            "kind": "sagemaker",
            "endpoint_name": endpoint,
            "region": "us-west-2",
            "endpoint_url": runtime.base_url,
            "container": "vllm",
        },
        "workload": {"input_tokens": 40, "output_tokens": 20},
        "load": load
        or {"concurrency_levels": levels or [1, 2], "requests_per_level": 4, "warmup_requests": 1},
        "cost": {"price_per_hour": 4.2039, "instance_count": 1},
        "slo": slo,
        "rate_sweep": rate_sweep,
        "label": "test",
    }
    return {
        "RequestType": request,
        "PhysicalResourceId": physical,
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-west-2:123456789012:function:x",
            "Config": json.dumps(config),
            "Gates": json.dumps(gates or {}),
            "FailOnError": "true" if fail_on_error else "false",
            "ResultsBucket": BUCKET,
            "ResultsPrefix": "endpoint-benchmarks/",
            "DeploymentId": "config-1/model-1",
            **({"Prediction": json.dumps(prediction)} if prediction is not None else {}),
        },
    }


def run(runtime: ServerProcess, s3: Any, **kwargs: Any) -> tuple[dict[str, Any], int, str]:
    physical = handler.on_event(event(runtime, **kwargs), None, s3=s3)["PhysicalResourceId"]
    calls = 0
    while True:
        calls += 1
        response = handler.is_complete(event(runtime, physical=physical, **kwargs), Context(), s3=s3)
        if response["IsComplete"]:
            return response, calls, physical
        assert calls < 10


def _objects(s3: Any, physical: str) -> dict[str, bytes]:
    prefix = physical.split(BUCKET + "/", 1)[1]
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {
        o["Key"][len(prefix) :]: s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listing
    }


def test_full_sweep_one_level_per_invocation(runtime: ServerProcess, s3: Any) -> None:
    response, calls, physical = run(runtime, s3)
    assert calls == 2  # one level per is-complete invocation: the sweep resumes from S3 state
    data = response["Data"]
    assert data["Status"] == "complete" and data["ResultsS3Uri"] == physical
    assert data["ConcurrencyLowest"] == "1" and data["ConcurrencyHighest"] == "2"
    assert float(data["OutputThroughputHighest"]) > 0 and float(data["P99TtftMsLowest"]) >= 40
    assert float(data["CostPerMillionOutputTokens"]) > 0
    assert data["TokensPerChunkBaseline"] == "1.000"  # the "steady" stand-in sends one token per chunk
    files = _objects(s3, physical)
    assert {
        "state.json",
        "results.json",
        "results.csv",
        "requests/level-c1.jsonl",
        "requests/level-c2.jsonl",
    } <= set(files)
    results = json.loads(files["results.json"])
    assert [lv["concurrency"] for lv in results["levels"]] == [1, 2]
    assert b"| C | ok / failed |" in files["report.md"] and b"(cost_vs_concurrency.svg)" in files["report.md"]
    for chart in (
        "latency_vs_concurrency",
        "per_user_throughput_vs_concurrency",
        "throughput_vs_per_user",
        "cost_vs_concurrency",
    ):
        svg = files[f"{chart}.svg"].decode()
        assert svg.startswith("<svg") and svg.count("<circle") == 2 * (
            2 if chart == "latency_vs_concurrency" else 1
        )
    assert all(lv["completed"] == 4 for lv in results["levels"])
    measured = [json.loads(line) for line in files["requests/level-c2.jsonl"].splitlines()]
    assert sum(1 for r in measured if r["phase"] == "measured") == 4


def test_state_after_first_invocation_resumes_in_a_new_call(runtime: ServerProcess, s3: Any) -> None:
    physical = handler.on_event(event(runtime), None, s3=s3)["PhysicalResourceId"]
    first = handler.is_complete(event(runtime, physical=physical), Context(), s3=s3)
    assert first == {"IsComplete": False}
    state = json.loads(_objects(s3, physical)["state.json"])
    assert state["next_level_index"] == 1 and len(state["result"]["levels"]) == 1
    second = handler.is_complete(event(runtime, physical=physical), Context(), s3=s3)
    assert second["IsComplete"] is True


def test_gate_pass(runtime: ServerProcess, s3: Any) -> None:
    response, _, _ = run(runtime, s3, gates={"min_output_throughput": 1, "max_p99_ttft_ms": 5000})
    assert response["Data"]["Status"] == "complete"


def test_gate_failure_rolls_back_with_measured_and_required(runtime: ServerProcess, s3: Any) -> None:
    with pytest.raises(
        BenchmarkGateFailed, match=r"output throughput at concurrency 2 was [0-9.]+ tok/s; required >= 1e\+06"
    ):
        run(runtime, s3, gates={"min_output_throughput": 1e6})


def test_endpoint_errors_are_reported_not_fatal(runtime: ServerProcess, s3: Any) -> None:
    response, _, physical = run(runtime, s3, endpoint="sm_model_error", levels=[1])
    assert response["Data"]["Status"] in ("failed", "partial", "aborted")
    assert response["Data"]["Error"]
    results = json.loads(_objects(s3, physical)["results.json"])
    assert results["status"] == response["Data"]["Status"]


def test_endpoint_errors_fail_with_fail_on_error(runtime: ServerProcess, s3: Any) -> None:
    with pytest.raises(BenchmarkFailed):
        run(runtime, s3, endpoint="sm_model_error", levels=[1], fail_on_error=True)


def test_delete_never_fails_and_touches_nothing(runtime: ServerProcess) -> None:
    class NoS3:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"Delete must not call S3 ({name})")

    physical = f"s3://{BUCKET}/endpoint-benchmarks/run/"
    assert handler.on_event(event(runtime, request="Delete", physical=physical), None, s3=NoS3()) == {
        "PhysicalResourceId": physical
    }
    assert handler.is_complete(event(runtime, request="Delete", physical=physical), Context(), s3=NoS3()) == {
        "IsComplete": True
    }


def test_malformed_properties_name_the_property(runtime: ServerProcess) -> None:
    bad = event(runtime)
    bad["ResourceProperties"]["Gatez"] = "{}"
    with pytest.raises(PropertyError, match="unknown keys Gatez"):
        parse_event(bad)
    bad = event(runtime)
    bad["ResourceProperties"]["Config"] = "{not json"
    with pytest.raises(PropertyError, match=r"ResourceProperties\.Config: not JSON"):
        parse_event(bad)


def test_gates_pure() -> None:
    levels = [
        {"concurrency": 1, "completed": 4, "output_throughput": 50.0, "p99_ttft_ms": 90.0},
        {"concurrency": 8, "completed": 4, "output_throughput": 300.0, "p99_ttft_ms": 400.0},
    ]
    assert gate_failures(Gates(min_output_throughput=250, max_p99_ttft_ms=500), levels) == []
    failures = gate_failures(Gates(min_output_throughput=350, max_p99_ttft_ms=300), levels)
    assert len(failures) == 2 and "300.0 tok/s; required >= 350" in failures[0] and "400 ms" in failures[1]
    assert gate_failures(Gates(min_output_throughput=1), [{"concurrency": 1, "completed": 0}])


def test_emf_line_is_a_cloudwatch_metrics_document() -> None:
    line = level_metrics_line(
        "sagemaker:ep",
        {
            "concurrency": 8,
            "output_throughput": 812.5,
            "p99_ttft_ms": 220.0,
            "failed": 0,
            "cost_per_million_output_tokens": None,
        },
        now_ms=1,
    )
    doc = json.loads(line)
    directive = doc["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == NAMESPACE and directive["Dimensions"] == [["Target", "Concurrency"]]
    assert {m["Name"] for m in directive["Metrics"]} == {"OutputThroughput", "P99Ttft", "FailedRequests"}
    assert doc["OutputThroughput"] == 812.5 and doc["Concurrency"] == "8"


def test_open_loop_levels_with_goodput(
    runtime: ServerProcess, s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    load = {"request_rates": [5, 20], "requests_per_level": 6, "warmup_requests": 1}
    response, calls, physical = run(
        runtime, s3, load=load, slo={"ttft_ms": 5000}, gates={"min_output_throughput": 1}
    )
    data = response["Data"]
    assert calls == 2 and data["Status"] == "complete"
    assert data["RequestRateLowest"] == "5.000" and data["RequestRateHighest"] == "20.000"
    assert float(data["RequestGoodputHighest"]) > 0  # every request is well within a 5 s TTFT
    files = _objects(s3, physical)
    assert {"requests/level-r5.jsonl", "requests/level-r20.jsonl"} <= set(files)
    metrics = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert [m["RequestRate"] for m in metrics] == ["5", "20"] and all("RequestGoodput" in m for m in metrics)
    assert metrics[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Target", "RequestRate"]]


def test_every_attribute_is_returned_even_when_nothing_was_measured(runtime: ServerProcess, s3: Any) -> None:
    response, _, _ = run(runtime, s3, endpoint="missing-endpoint")
    assert set(ATTRIBUTES) == set(response["Data"])
    # An alarm threshold must be a number: an acceptance alarm below 0 never fires.
    assert response["Data"]["TokensPerChunkBaseline"] == "0"


def test_acceptance_baseline_is_the_lowest_levels_tokens_per_chunk(runtime: ServerProcess, s3: Any) -> None:
    response, _, _ = run(runtime, s3, endpoint="spec")  # 3 tokens per chunk
    # 20 output tokens per request in chunks of 3: 7 chunks (the last carries 2), 20 / 7 tokens per chunk.
    assert response["Data"]["TokensPerChunkBaseline"] == f"{20 / 7:.3f}"


SWEEP_LOAD = {"requests_per_level": 6, "warmup_requests": 1}


def test_rate_sweep_one_probe_per_invocation(runtime: ServerProcess, s3: Any) -> None:
    # Every request of the stand-in is far within 5 s: each doubling is sustained up to max_rate.
    sweep = {"start_rate": 4, "max_rate": 16, "bisection_steps": 2}
    response, calls, physical = run(runtime, s3, load=SWEEP_LOAD, slo={"ttft_ms": 5000}, rate_sweep=sweep)
    data = response["Data"]
    assert calls == 3 and data["Status"] == "complete" and data["MaxSustainedRate"] == "16.000"
    results = json.loads(_objects(s3, physical)["results.json"])
    assert [lv["request_rate"] for lv in results["levels"]] == [4.0, 8.0, 16.0]
    assert results["max_sustained_rate"] == 16.0 and results["status"] == "complete"


def test_rate_sweep_that_misses_at_once_finds_nothing(runtime: ServerProcess, s3: Any) -> None:
    # A 1 ms TTFT objective no request meets (the stand-in answers after 40 ms).
    sweep = {"start_rate": 4, "max_rate": 16}
    response, calls, physical = run(runtime, s3, load=SWEEP_LOAD, slo={"ttft_ms": 1}, rate_sweep=sweep)
    assert (
        calls == 1 and response["Data"]["MaxSustainedRate"] == "" and response["Data"]["Status"] == "complete"
    )
    results = json.loads(_objects(s3, physical)["results.json"])
    assert [lv["request_rate"] for lv in results["levels"]] == [4.0] and results["max_sustained_rate"] is None


# What EndpointBenchmark puts in the Prediction property (the planner's levels in the benchmark's names).
PREDICTION = {
    "levels": [
        {"concurrency": 1, "output_throughput": 40.0, "median_ttft_ms": 50.0, "bound": "memory bandwidth"},
        {"concurrency": 2, "output_throughput": 1e6, "median_ttft_ms": 50.0, "median_e2el_ms": 900.0},
        {"concurrency": 64, "output_throughput": 5.0},  # a level the run does not measure
    ],
    "assumptions": {"acceptance_length": {"value": 2.3, "source": "test"}},
}


def test_prediction_is_published_beside_the_measurement(runtime: ServerProcess, s3: Any) -> None:
    response, _, physical = run(runtime, s3, prediction=PREDICTION)
    data = response["Data"]
    measured = float(data["OutputThroughputHighest"])
    assert data["PredictedOutputThroughputHighest"] == "1000000.000"  # the highest level's, not the lowest's
    assert float(data["MeasuredOverPredictedOutputThroughputHighest"]) == pytest.approx(
        measured / 1e6, abs=1e-3
    )
    assert data["PredictedCostPerMillionOutputTokens"] == ""  # not predicted: empty, never missing
    files = _objects(s3, physical)
    compared = json.loads(files["plan-vs-measured.json"])
    assert [row["level"] for row in compared["levels"]] == ["c1", "c2"]  # c64 was not measured
    low = compared["levels"][0]
    assert low["predicted"]["output_throughput"] == 40.0 and low["bound"] == "memory bandwidth"
    assert low["measured_over_predicted"]["output_throughput"] == pytest.approx(
        low["measured"]["output_throughput"] / 40.0, abs=1e-4
    )
    assert low["measured_over_predicted"]["median_tpot_ms"] is None  # not predicted
    report = files["report.md"].decode()
    assert "## Planned vs measured" in report and "| concurrency 2 |" in report and "(test)" in report


def test_without_a_prediction_nothing_planned_is_written(runtime: ServerProcess, s3: Any) -> None:
    response, _, physical = run(runtime, s3)
    assert response["Data"]["PredictedOutputThroughputHighest"] == ""
    files = _objects(s3, physical)
    assert "plan-vs-measured.json" not in files and b"Planned vs measured" not in files["report.md"]


def test_emf_line_carries_the_plan_and_the_ratio() -> None:
    level = {"concurrency": 2, "output_throughput": 300.0, "median_ttft_ms": 80.0}
    doc = json.loads(
        level_metrics_line(
            "t", level, now_ms=1, predicted=PREDICTION["levels"][0] | {"output_throughput": 200.0}
        )
    )
    names = {m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert {
        "PredictedOutputThroughput",
        "PredictedMedianTtft",
        "MeasuredOverPredictedOutputThroughput",
    } <= names
    assert "PredictedMedianE2eLatency" not in names  # not in this predicted level
    assert doc["MeasuredOverPredictedOutputThroughput"] == 1.5 and doc["PredictedMedianTtft"] == 50.0
    zero = json.loads(level_metrics_line("t", level, now_ms=1, predicted={"output_throughput": 0}))
    assert "MeasuredOverPredictedOutputThroughput" not in zero  # no ratio against a zero prediction


def test_malformed_prediction_names_the_property(runtime: ServerProcess) -> None:
    bad = event(runtime)
    bad["ResourceProperties"]["Prediction"] = json.dumps({"levels": "c1"})
    with pytest.raises(PropertyError, match=r"ResourceProperties\.Prediction: expected a JSON object"):
        parse_event(bad)
