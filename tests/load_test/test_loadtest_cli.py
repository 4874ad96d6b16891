"""`speculative-infra loadtest`: its options become overrides, every wait is bounded, results are fetched.

Step Functions is a Stubber-backed client (request shapes checked against its service model); S3 is the
moto server. No real waits: sleep and clock are injected."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from speculative_infra.cli.loadtest_run import overrides, run_loadtest
from speculative_infra.cli.main import build_parser

ARN = "arn:aws:states:us-west-2:123456789012:stateMachine:speculative-infra-LoadTest"
EXECUTION = "arn:aws:states:us-west-2:123456789012:execution:speculative-infra-LoadTest:run1"
BUCKET = "lt-cli"


def _args(*extra: str):
    return build_parser().parse_args(["loadtest", ARN, "--name", "run1", *extra])


def test_only_the_options_given_override_the_constructs_test():
    assert overrides(_args()) == {}
    got = overrides(
        _args(
            "--step",
            "5:600",
            "--step",
            "5-20:300",
            "--workers",
            "8",
            "--output-tokens",
            "100",
            "--slo",
            "ttft_ms=500",
        )
    )
    assert got == {
        "steps": [
            {"duration_s": 600.0, "request_rate": 5.0},
            {"duration_s": 300.0, "request_rate": 5.0, "ramp_to_rate": 20.0},
        ],
        "workers": 8,
        "benchmark": {"workload": {"output_tokens": 100}, "slo": {"ttft_ms": 500.0}},
    }
    assert overrides(_args("--step", "c32:60"))["steps"] == [{"duration_s": 60.0, "concurrency": 32}]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["loadtest", "arn:aws:lambda:us-west-2:123456789012:function:x"], "state machine ARN"),
        (["loadtest", ARN, "--step", "fast"], "RATE:SECONDS"),
        (["loadtest", ARN, "--workers", "0"], "--workers"),
    ],
)
def test_malformed_arguments_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--step", "5:60", "--step", "c4:60"], "all open-loop steps"),
        (["--step", "0.0001:60"], "--step: request_rate"),
        (["--dataset", "s3://b/k"], "--dataset"),
        (["--max-wait", "1e9"], "--max-wait"),
    ],
)
def test_combinations_the_state_machine_would_refuse_stop_before_it_starts(extra, message, capsys, tmp_path):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    with Stubber(sfn):  # no call queued: any call fails the test
        assert run_loadtest(_args("--out", str(tmp_path), *extra), sfn=sfn) == 2
    assert message in capsys.readouterr().err


def _started(stub: Stubber, overrides_: dict[str, Any]) -> None:
    stub.add_response(
        "start_execution",
        {"executionArn": EXECUTION, "startDate": "2026-12-02T00:00:00Z"},
        {"stateMachineArn": ARN, "name": "run1", "input": json.dumps({"overrides": overrides_})},
    )


def _running(stub: Stubber) -> None:
    stub.add_response(
        "describe_execution",
        {
            "executionArn": EXECUTION,
            "stateMachineArn": ARN,
            "status": "RUNNING",
            "startDate": "2026-12-02T00:00:00Z",
        },
        {"executionArn": EXECUTION},
    )
    stub.add_response("list_map_runs", {"mapRuns": []}, {"executionArn": EXECUTION})
    stub.add_response("get_execution_history", {"events": []}, {"executionArn": EXECUTION, "maxResults": 50})


def test_following_stops_at_max_wait_with_exit_3(tmp_path):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    with Stubber(sfn) as stub:
        _started(stub, {})
        for _ in range(3):
            _running(stub)
        code = run_loadtest(
            _args("--out", str(tmp_path), "--poll-seconds", "30", "--max-wait", "60"),
            sfn=sfn,
            sleep=sleep,
            clock=lambda: now[0],
        )
        stub.assert_no_pending_responses()
    assert code == 3 and slept == [30.0, 30.0]


def test_a_succeeded_execution_writes_the_results_and_progress_is_shown(s3_server, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    s3 = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    if BUCKET not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
        s3.create_bucket(Bucket=BUCKET)
    result = json.loads(
        (__import__("pathlib").Path(__file__).parent / "fixtures" / "results.json").read_text()
    )
    s3.put_object(Bucket=BUCKET, Key="lt/run1/results.json", Body=json.dumps(result).encode())
    s3.put_object(Bucket=BUCKET, Key="lt/run1/report.md", Body=b"# Distributed load test\n")
    plan = {"ok": True, "bucket": BUCKET, "run_prefix": "lt/run1/", "waves": 1, "workers": 1}
    s3.put_object(
        Bucket=BUCKET,
        Key="lt/run1/workers/wave-00000/worker-0000.json",
        Body=json.dumps({"status": "ok", "requests": 12, "sketches": {"steps": {}, "minutes": {}}}).encode(),
    )
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    lines: list[str] = []
    with Stubber(sfn) as stub:
        _started(stub, {"workers": 1})
        stub.add_response(
            "describe_execution",
            {
                "executionArn": EXECUTION,
                "stateMachineArn": ARN,
                "status": "RUNNING",
                "startDate": "2026-12-02T00:00:00Z",
            },
            {"executionArn": EXECUTION},
        )
        map_run = "arn:aws:states:us-west-2:123456789012:mapRun:speculative-infra-LoadTest/run1:m1"
        stub.add_response(
            "list_map_runs",
            {
                "mapRuns": [
                    {
                        "executionArn": EXECUTION,
                        "mapRunArn": map_run,
                        "stateMachineArn": ARN,
                        "startDate": "2026-12-02T00:00:00Z",
                    }
                ]
            },
            {"executionArn": EXECUTION},
        )
        counts = {
            k: 0
            for k in (
                "pending",
                "running",
                "aborted",
                "timedOut",
                "resultsWritten",
                "failuresNotRedrivable",
                "pendingRedrive",
            )
        }
        stub.add_response(
            "describe_map_run",
            {
                "mapRunArn": map_run,
                "executionArn": EXECUTION,
                "status": "RUNNING",
                "startDate": "2026-12-02T00:00:00Z",
                "maxConcurrency": 10000,
                "toleratedFailurePercentage": 100.0,
                "toleratedFailureCount": 0,
                "itemCounts": {**counts, "succeeded": 1, "failed": 0, "total": 1},
                "executionCounts": {**counts, "succeeded": 1, "failed": 0, "total": 1},
            },
            {"mapRunArn": map_run},
        )
        stub.add_response(
            "get_execution_history",
            {
                "events": [
                    {
                        "timestamp": "2026-12-02T00:00:01Z",
                        "type": "TaskSucceeded",
                        "id": 5,
                        "taskSucceededEventDetails": {
                            "resourceType": "lambda",
                            "resource": "invoke",
                            "output": json.dumps({"Payload": plan}),
                        },
                    }
                ]
            },
            {"executionArn": EXECUTION, "maxResults": 50},
        )
        stub.add_response(
            "describe_execution",
            {
                "executionArn": EXECUTION,
                "stateMachineArn": ARN,
                "status": "SUCCEEDED",
                "startDate": "2026-12-02T00:00:00Z",
                "output": json.dumps(
                    {
                        "status": "complete",
                        "results_uri": f"s3://{BUCKET}/lt/run1/results.json",
                        "requests": 12,
                        "reported": 1,
                        "expected": 1,
                    }
                ),
            },
            {"executionArn": EXECUTION},
        )
        code = run_loadtest(
            _args("--out", str(tmp_path / "out"), "--workers", "1"),
            sfn=sfn,
            s3=s3,
            sleep=lambda s: None,
            log=lines.append,
        )
        stub.assert_no_pending_responses()
    assert code == 0
    assert (tmp_path / "out" / "results.json").read_bytes() == json.dumps(result).encode()
    assert (tmp_path / "out" / "load-ttft.svg").read_text().startswith("<svg")
    assert any("1 done" in line for line in lines) and any(
        "wave 1/1: 12 requests from 1/1 workers" in line for line in lines
    )


def test_a_failed_execution_exits_1_with_its_cause(tmp_path, capsys):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    with Stubber(sfn) as stub:
        _started(stub, {})
        stub.add_response(
            "describe_execution",
            {
                "executionArn": EXECUTION,
                "stateMachineArn": ARN,
                "status": "FAILED",
                "startDate": "2026-12-02T00:00:00Z",
                "error": "LoadTestConfigInvalid",
                "cause": "load test config: workers: expected an integer",
            },
            {"executionArn": EXECUTION},
        )
        assert run_loadtest(_args("--out", str(tmp_path)), sfn=sfn, sleep=lambda s: None) == 1
    assert "LoadTestConfigInvalid" in capsys.readouterr().err


def test_no_wait_returns_after_starting(tmp_path, capsys):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    with Stubber(sfn) as stub:
        _started(stub, {})
        assert run_loadtest(_args("--out", str(tmp_path), "--no-wait"), sfn=sfn) == 0
    assert EXECUTION in capsys.readouterr().out


def test_report_renders_a_load_tests_results(tmp_path, capsys):
    from speculative_infra.cli.main import main

    fixture = __import__("pathlib").Path(__file__).parent / "fixtures" / "results.json"
    assert main(["report", str(fixture), "--out", str(tmp_path / "r")]) == 0
    report = (tmp_path / "r" / "report.md").read_text()
    result = json.loads(fixture.read_text())
    assert "## Steps" in report and "2 waves x 2 workers" in report
    # The step's own numbers, as the merge wrote them.
    step = result["steps"][1]
    assert f"| {step['ttft_ms']['p99']:,.1f} |" in report and f"| {step['requests']} |" in report
    assert (tmp_path / "r" / "load-tpot.svg").read_text().startswith("<svg")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"kind": "distributed_load_test", "steps": []}))
    assert main(["report", str(broken), "--out", str(tmp_path / "b")]) == 2
    assert "not a complete load test results file" in capsys.readouterr().err
    assert main(["report", str(fixture), str(fixture), "--out", str(tmp_path / "c")]) == 2


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--name", "my test"], "--name"),
        (["--reuse-prompts"], "--reuse-prompts"),
        (["--dataset-format", "jsonl"], "--dataset-format"),
    ],
)
def test_options_loadtest_cannot_honour_are_refused_not_ignored(extra, message, capsys, tmp_path):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    with Stubber(sfn):
        assert run_loadtest(_args("--out", str(tmp_path), *extra), sfn=sfn) == 2
    assert message in capsys.readouterr().err


def test_aws_refusing_the_start_is_a_message_not_a_traceback(tmp_path):
    sfn = boto3.client("stepfunctions", region_name="us-west-2")
    lines: list[str] = []
    with Stubber(sfn) as stub:
        stub.add_client_error("start_execution", "StateMachineDoesNotExist", "no such state machine")
        assert run_loadtest(_args("--out", str(tmp_path)), sfn=sfn, log=lines.append) == 1
    assert "StateMachineDoesNotExist" in lines[-1] and "no such state machine" in lines[-1]
