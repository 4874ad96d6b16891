"""Both SageMaker clients (boto3 threads, and asyncio with botocore's signer and decoder) against the
stand-in's event stream; the stand-in verifies every SigV4 signature as the runtime API does."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

import pytest

from speculative_infra.benchmark.clock import MonotonicClock
from speculative_infra.benchmark.config import BenchmarkConfig, LoadConfig, SageMakerTarget, WorkloadConfig
from speculative_infra.benchmark.results import BenchmarkResult
from speculative_infra.benchmark.sweep import run_benchmark
from speculative_infra.benchmark.transports.sagemaker import SageMakerTransport

from .conftest import SCENARIOS
from .stand_ins.server import ServerProcess

pytestmark = pytest.mark.usefixtures("aws_env")
OUTPUT_TOKENS = 24
CLIENT = ["boto3"]


@pytest.fixture(autouse=True, params=["boto3", "asyncio"])
def client(request: pytest.FixtureRequest) -> str:
    CLIENT[0] = request.param
    return str(request.param)


def target(server: ServerProcess, endpoint: str, **kwargs: Any) -> SageMakerTarget:
    return SageMakerTarget(
        endpoint_name=endpoint, region="us-west-2", endpoint_url=server.base_url, client=CLIENT[0], **kwargs
    )


def bench(
    server: ServerProcess | None,
    endpoint: str,
    *,
    levels: tuple[int, ...] = (1,),
    requests: int = 4,
    warmup: int | None = 1,
    sm_target: SageMakerTarget | None = None,
    **load: Any,
) -> BenchmarkResult:
    assert server is not None or sm_target is not None
    if server is not None:
        server.truth(clear=True)  # only this run's requests in the truth
    config = BenchmarkConfig(
        target=sm_target or target(server, endpoint),  # type: ignore[arg-type]
        workload=WorkloadConfig(input_tokens=40, output_tokens=OUTPUT_TOKENS, seed=5),
        load=LoadConfig(
            concurrency_levels=levels,
            requests_per_level=requests,
            warmup_requests=warmup,
            request_timeout_s=10,
            retry_backoff_s=0.01,
            **load,
        ),
    )
    return asyncio.run(run_benchmark(config)).result


def truth_for(server: ServerProcess, scenario: str) -> list[dict[str, Any]]:
    return [t for t in server.truth(clear=False) if t["scenario"] == scenario]


def test_vllm_stream_split_across_payload_parts_and_utf8(stand_in: ServerProcess) -> None:
    # 5-byte PayloadParts cut SSE lines, JSON and 2-4 byte UTF-8 characters apart.
    behavior = SCENARIOS["utf8_parts"]
    result = bench(stand_in, "utf8_parts", levels=(1, 3), requests=6)
    assert result.status == "complete", result.error
    truth = truth_for(stand_in, "utf8_parts")
    # Only requests the server answered: the filler requests that hold the concurrency until the measured
    # ones finish are cancelled when the level ends, sometimes before their first chunk.
    answered = [t for t in truth if t["first_content_at"] is not None]
    server_ttft_ms = statistics.median((t["first_content_at"] - t["received_at"]) * 1000 for t in answered)
    for level in result.levels:
        assert level.completed == 6 and level.failed == 0
        assert level.mean_tokens_per_chunk == pytest.approx(2.0)
        assert level.output_tokens_source == {"usage": 6}
        assert level.median_ttft_ms is not None and level.median_ttft_ms >= behavior.ttft_s * 1000 - 0.5
        # Loose bound: this test proves parsing across part boundaries, not timing accuracy (that is
        # benchmarks/bench_engine_accuracy.py's job); boto3's signing under a loaded CI core varies.
        assert level.median_ttft_ms == pytest.approx(server_ttft_ms, abs=15.0)
        assert level.median_tpot_ms == pytest.approx(behavior.expected_tpot_s(OUTPUT_TOKENS) * 1000, abs=1.0)
    assert truth[0]["params"]["ignore_eos"] is True
    assert truth[0]["params"]["content_type"] == "application/json"
    assert "model" not in truth[0]["params"]  # the DLC serves one model; none is named


def test_one_byte_payload_parts(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "one_byte_parts", requests=2).levels
    assert level.completed == 2 and level.mean_output_tokens == OUTPUT_TOKENS


def test_lmi_container_format_with_inference_component(stand_in: ServerProcess) -> None:
    sm_target = target(stand_in, "lmi_sse", container="lmi", inference_component_name="ic-qwen")
    [level] = bench(None, "lmi_sse", sm_target=sm_target, requests=3).levels
    assert level.completed == 3
    assert level.output_tokens_source == {"details": 3}
    params = truth_for(stand_in, "lmi_sse")[0]["params"]
    assert params["inference_component"] == "ic-qwen"
    assert params["lmi_parameters"]["max_new_tokens"] == OUTPUT_TOKENS
    assert params["lmi_parameters"]["ignore_eos_token"] is True


@pytest.mark.parametrize(
    ("scenario", "failure_class"),
    [
        ("sm_stream_error", "model_stream_error"),
        ("sm_internal", "internal_stream_failure"),
        ("sm_model_error", "model_error"),
        ("sm_broken", "stream_broken"),
        ("missing-endpoint", "client_error"),  # ValidationError: endpoint not found
    ],
)
def test_failure_classes(stand_in: ServerProcess, scenario: str, failure_class: str) -> None:
    [level] = bench(stand_in, scenario, requests=2, warmup=0, abort_after_failures=10).levels
    assert level.failure_classes == {failure_class: 2}
    assert level.completed == 0


def test_throttling_retried_before_any_byte(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "sm_throttle", requests=2, warmup=0).levels
    assert level.completed == 2
    assert level.retried_classes == {"throttled": 1}


def test_throttling_that_persists_is_a_failure(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "sm_throttle_always", requests=1, warmup=0, max_retries=1).levels
    assert level.failure_classes == {"throttled": 1}
    assert level.retried_classes == {"throttled": 1}


def test_endpoint_url_from_the_standard_environment_variable(
    stand_in: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", stand_in.base_url)
    sm_target = SageMakerTarget(endpoint_name="steady", region="eu-west-1", client=CLIENT[0])
    [level] = bench(None, "steady", sm_target=sm_target, requests=1).levels
    assert level.completed == 1


def test_connection_pool_is_sized_to_the_concurrency(stand_in: ServerProcess, client: str) -> None:
    if client != "boto3":
        pytest.skip("the asyncio client has no pool limit to size")
    transport = SageMakerTransport(
        target(stand_in, "steady"), WorkloadConfig(), timeout_s=5, clock=MonotonicClock()
    )

    async def sizes() -> list[int]:
        seen = []
        for concurrency in (4, 64, 16):
            await transport.start(concurrency)
            assert transport._client is not None
            seen.append(transport._client.meta.config.max_pool_connections)
        await transport.close()
        return seen

    assert asyncio.run(sizes()) == [10, 64, 64]


def test_missing_credentials_stop_at_once(stand_in: ServerProcess, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = bench(stand_in, "steady", levels=(1, 2), requests=5, warmup=0)
    assert result.status == "aborted"
    assert result.levels[0].failure_classes == {"credentials_error": 1}


def test_missing_region_is_reported_not_raised(stand_in: ServerProcess) -> None:
    sm_target = SageMakerTarget(endpoint_name="steady", client=CLIENT[0])
    result = bench(None, "steady", sm_target=sm_target)
    assert result.status == "error"
    assert "region" in (result.error or "")


def test_a_signature_the_runtime_would_refuse_stops_the_sweep(
    stand_in: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stand-in verifies SigV4 (secret = access key id): another secret makes every signature wrong.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    result = bench(stand_in, "steady", levels=(1, 2), requests=3, warmup=0)
    assert result.status == "aborted"
    assert result.levels[0].failure_classes == {"credentials_error": 1}


def test_temporary_credentials_sign_their_session_token(
    stand_in: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token-from-sts")
    [level] = bench(stand_in, "steady", requests=2).levels
    assert level.completed == 2
