"""The endpoint canary against the SageMaker-runtime stand-in (real event stream, SigV4, boto3)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from typing import Any

import pytest

from speculative_infra_lambda.endpoint_canary import handler
from speculative_infra_lambda.endpoint_canary.emf import METRIC_NAMES, NAMESPACE, run_documents
from tests.benchmark.conftest import SCENARIOS, aws_env  # noqa: F401 (the fixture)
from tests.benchmark.stand_ins.server import ServerProcess


@pytest.fixture(scope="module")
def runtime() -> Iterator[ServerProcess]:
    with ServerProcess(SCENARIOS) as server:
        yield server


# Dummy credentials, no shared config: boto3 signs requests that only reach the stand-in.
pytestmark = pytest.mark.usefixtures("aws_env")


class Context:
    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def schedule_input(runtime: ServerProcess, endpoint: str, **settings: Any) -> dict[str, Any]:
    """What the EndpointCanary construct writes into the schedule's input, pointed at the stand-in."""
    return {
        "target": {
            "kind": "sagemaker",
            "endpoint_name": endpoint,
            "region": "us-west-2",
            "endpoint_url": runtime.base_url,
            "container": "vllm",
            "client": "boto3",
        },
        "requests": 3,
        "output_tokens": 12,
        "request_timeout_s": 10,
        **settings,
    }


def emitted(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    docs = []
    for line in capsys.readouterr().out.splitlines():
        data = json.loads(line)
        if "_aws" in data:
            docs.append(data)
    return docs


def test_speculative_endpoint_publishes_tokens_per_chunk_the_server_sent(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    result = handler.handler(schedule_input(runtime, "spec"), Context())
    docs = emitted(capsys)
    assert len(docs) == 1  # no errors: no error-class document
    doc = docs[0]
    assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == NAMESPACE
    assert doc["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["Target"]]
    assert doc["Target"] == "sagemaker:spec"
    assert doc["Requests"] == 3 and doc["FailedRequests"] == 0
    # The stand-in sends 3 tokens per chunk, 12 tokens per request: 4 chunks; one figure for the run.
    assert doc["TokensPerChunk"] == [3.0]
    assert len(doc["TimeToFirstToken"]) == 3
    # Its TTFT is 40 ms and its chunks 8 ms apart (3 tokens each): TPOT ~ 8 * 3 / 11 ms.
    assert all(40 <= v < 40 + 60 for v in doc["TimeToFirstToken"])
    assert statistics.median(doc["TimePerOutputToken"]) == pytest.approx(8 * 3 / 11, abs=1.5)
    assert result["failures"] == {} and result["requests"] == 3


def test_canary_figures_match_the_engine_on_the_same_requests(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """The canary publishes the engine's own per-request figures, not a second measurement."""
    config = handler.benchmark_config(schedule_input(runtime, "steady"))
    from speculative_infra.benchmark.sweep import new_benchmark, run_next_level_blocking

    report = run_next_level_blocking(new_benchmark(config), seconds_available=30)
    samples = handler.per_request_samples(report.records)
    assert report.level is not None
    assert statistics.median(samples["TimeToFirstToken"]) == pytest.approx(
        report.level.median_ttft_ms, abs=0.01
    )
    assert statistics.median(samples["TimePerOutputToken"]) == pytest.approx(
        report.level.median_tpot_ms, abs=0.01
    )
    assert statistics.fmean(samples["OutputTokensPerSecond"]) == pytest.approx(
        report.level.output_tokens_per_second_per_user, rel=1e-3
    )


def test_canary_and_a_separate_engine_run_agree_on_the_same_server(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two independent measurements of the speculative stand-in (TTFT 40 ms, 3 tokens per 8 ms chunk):
    the canary's published figures and a `speculative-infra bench`-style run of the engine."""
    import asyncio

    from speculative_infra.benchmark.config import BenchmarkConfig
    from speculative_infra.benchmark.sweep import run_benchmark

    handler.handler(schedule_input(runtime, "spec", requests=5, output_tokens=30), Context())
    canary = emitted(capsys)[0]
    config = BenchmarkConfig.from_dict(
        {
            "target": schedule_input(runtime, "spec")["target"],
            "workload": {"input_tokens": 50, "output_tokens": 30},
            "load": {"concurrency_levels": [1], "requests_per_level": 5, "warmup_requests": 1},
        }
    )
    level = asyncio.run(run_benchmark(config)).result.levels[0]
    assert statistics.median(canary["TimeToFirstToken"]) == pytest.approx(level.median_ttft_ms, abs=8)
    assert statistics.median(canary["TimePerOutputToken"]) == pytest.approx(level.median_tpot_ms, abs=0.5)
    # All tokens over all chunks, the benchmark's definition (30 tokens in chunks of 3 and a last of 0: 3.0).
    assert canary["TokensPerChunk"] == [pytest.approx(level.mean_tokens_per_chunk, abs=1e-4)]
    assert statistics.fmean(canary["OutputTokensPerSecond"]) == pytest.approx(
        level.output_tokens_per_second_per_user, rel=0.1
    )


def test_failures_are_counted_by_class_and_nothing_is_retried(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    result = handler.handler(schedule_input(runtime, "sm_model_error"), Context())
    docs = emitted(capsys)
    main, errors = docs[0], docs[1:]
    assert main["Requests"] == 3 and main["FailedRequests"] == 3
    assert "TimeToFirstToken" not in main  # no sample: nothing published, not a zero
    assert [d["_aws"]["CloudWatchMetrics"][0]["Dimensions"] for d in errors] == [[["Target", "ErrorClass"]]]
    assert errors[0]["Errors"] == 3
    assert sum(result["failures"].values()) == 3


def test_mid_stream_errors_count_as_failures(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    handler.handler(schedule_input(runtime, "sm_stream_error"), Context())
    main = emitted(capsys)[0]
    assert main["FailedRequests"] == 3


def test_an_unreachable_endpoint_is_a_measurement_not_a_crash(capsys: pytest.CaptureFixture[str]) -> None:
    event = {
        "target": {
            "kind": "sagemaker",
            "endpoint_name": "gone",
            "region": "us-west-2",
            "endpoint_url": "http://127.0.0.1:9",
            "container": "vllm",
            "client": "boto3",
        },
        "requests": 2,
        "output_tokens": 8,
        "request_timeout_s": 2,
    }
    handler.handler(event, Context())
    docs = emitted(capsys)
    main = docs[0]
    assert main["Requests"] == 2 and main["FailedRequests"] == 2
    # The engine's own class for a refused connection (docs/handlers.md names it).
    assert [(d["ErrorClass"], d["Errors"]) for d in docs[1:]] == [("connection_error", 2)]


def test_requests_cut_off_by_the_deadline_are_left_out(
    runtime: ServerProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 'slow' stand-in needs ~1.6 s per 30-token request; 0.5 s leaves the measured ones unfinished:
    they are not failures (nor an 'unknown' class), just not measured."""
    result = handler.run_canary(schedule_input(runtime, "slow", output_tokens=30), seconds_available=0.5)
    main = emitted(capsys)[0]
    assert result["failures"] == {} and main["FailedRequests"] == 0
    assert main["Requests"] < 3


def test_a_malformed_schedule_input_names_what_is_missing() -> None:
    with pytest.raises(handler.CanaryInputError, match="target"):
        handler.benchmark_config({"requests": 3})


def test_emf_documents_cap_values_and_declare_every_metric() -> None:
    lines = run_documents("t", {"TimeToFirstToken": list(range(150))}, 150, {"ModelError": 1}, now_ms=1)
    main = json.loads(lines[0])
    assert len(main["TimeToFirstToken"]) == 100
    declared = {m["Name"] for m in main["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert declared == {"TimeToFirstToken", "Requests", "FailedRequests"}
    assert declared <= set(METRIC_NAMES)
    assert json.loads(lines[1])["ErrorClass"] == "ModelError"
