"""The HTTP transport against the stand-in server: numbers match what the server did."""

from __future__ import annotations

import asyncio
import statistics
from typing import Any

import pytest

from speculative_infra.benchmark.config import BenchmarkConfig, HttpTarget, LoadConfig, WorkloadConfig
from speculative_infra.benchmark.results import BenchmarkResult
from speculative_infra.benchmark.sweep import run_benchmark

from .conftest import SCENARIOS
from .stand_ins.server import ServerProcess

OUTPUT_TOKENS = 30


def bench(
    server: ServerProcess,
    scenario: str,
    *,
    levels: tuple[int, ...] = (1,),
    requests: int = 6,
    api: str = "chat",
    timeout: float = 10.0,
    warmup: int | None = 1,
    **load: Any,
) -> BenchmarkResult:
    if server is not None:
        server.truth(clear=True)  # only this run's requests in the truth
    config = BenchmarkConfig(
        target=HttpTarget(base_url=f"{server.base_url}/{scenario}", api=api),  # type: ignore[arg-type]
        workload=WorkloadConfig(input_tokens=60, output_tokens=OUTPUT_TOKENS, seed=3),
        load=LoadConfig(
            concurrency_levels=levels,
            requests_per_level=requests,
            warmup_requests=warmup,
            request_timeout_s=timeout,
            retry_backoff_s=0.01,
            **load,
        ),
    )
    return asyncio.run(run_benchmark(config)).result


def server_truth(server: ServerProcess, scenario: str) -> list[dict[str, Any]]:
    return [t for t in server.truth(clear=False) if t["scenario"] == scenario]


def test_timings_match_the_server(stand_in: ServerProcess) -> None:
    behavior = SCENARIOS["steady"]
    result = bench(stand_in, "steady", levels=(1, 4), requests=8)
    assert result.status == "complete"
    truth = server_truth(stand_in, "steady")
    # Only requests the server answered: the filler requests that hold the concurrency until the measured
    # ones finish are cancelled when the level ends, sometimes before their first chunk.
    answered = [t for t in truth if t["first_content_at"] is not None]
    server_ttft_ms = statistics.median((t["first_content_at"] - t["received_at"]) * 1000 for t in answered)
    expected_tpot_ms = behavior.expected_tpot_s(OUTPUT_TOKENS) * 1000
    expected_e2el_s = behavior.expected_e2el_s(OUTPUT_TOKENS)
    for level in result.levels:
        assert level.completed == 8 and level.failed == 0
        # Never below the configured delay (the role-only chunk at ~0 ms is not a token) ...
        assert level.median_ttft_ms is not None and level.median_ttft_ms >= behavior.ttft_s * 1000 - 0.5
        # ... and close to what the server did (tolerance for a loaded 2-core machine).
        assert level.median_ttft_ms == pytest.approx(server_ttft_ms, abs=5.0)
        assert level.median_tpot_ms == pytest.approx(expected_tpot_ms, abs=1.0)
        assert level.median_itl_ms == pytest.approx(behavior.chunk_interval_s * 1000, abs=1.5)
        assert level.median_e2el_ms == pytest.approx(expected_e2el_s * 1000, abs=8.0)
        assert level.output_throughput == pytest.approx(
            level.concurrency * OUTPUT_TOKENS / expected_e2el_s, rel=0.06
        )
        assert level.mean_tokens_per_chunk == pytest.approx(1.0)
        assert level.output_tokens_source == {"usage": 8}
        assert level.p99_client_lag_ms is not None and level.p99_client_lag_ms < 20
    # The payload asked for exactly the output length, with usage in the stream.
    params = truth[0]["params"]
    assert params["max_tokens"] == params["min_tokens"] == OUTPUT_TOKENS and params["ignore_eos"] is True
    assert params["stream_options"] == {"include_usage": True}
    assert params["model"] == "stand-in-model"  # asked from /v1/models
    assert all(t["request_id"] for t in truth)


def test_several_tokens_per_chunk_counted_from_usage(stand_in: ServerProcess) -> None:
    behavior = SCENARIOS["spec"]
    [level] = bench(stand_in, "spec", requests=4).levels
    assert level.mean_tokens_per_chunk == pytest.approx(3.0)
    assert level.mean_output_tokens == OUTPUT_TOKENS  # not the 10 chunks
    assert level.median_itl_ms == pytest.approx(behavior.chunk_interval_s * 1000, abs=1.5)
    assert level.median_tpot_ms == pytest.approx(behavior.expected_tpot_s(OUTPUT_TOKENS) * 1000, abs=1.0)


def test_completions_api(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "no_role", requests=3, api="completions").levels
    assert level.completed == 3
    assert level.median_ttft_ms == pytest.approx(30.0, abs=6.0)
    assert server_truth(stand_in, "no_role")[-1]["protocol"] == "completions"


def test_missing_usage_falls_back_to_a_labelled_estimate(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "no_usage", requests=3).levels
    assert level.completed == 3
    assert level.output_tokens_source == {"max_tokens": 3}
    assert level.input_tokens_source == {"estimate": 3}


@pytest.mark.parametrize(
    ("scenario", "failure_class"),
    [
        ("broken", "stream_broken"),
        ("error_event", "server_error_event"),
        ("no_done", "stream_incomplete"),
        ("http400", "client_error"),
    ],
)
def test_failure_classes(stand_in: ServerProcess, scenario: str, failure_class: str) -> None:
    result = bench(stand_in, scenario, requests=3, warmup=0, abort_after_failures=10)
    [level] = result.levels
    assert level.completed == 0
    assert level.failure_classes == {failure_class: 3}
    assert level.failure_examples[failure_class]


def test_server_errors_abort_the_sweep_with_a_message(stand_in: ServerProcess) -> None:
    result = bench(stand_in, "http500", levels=(1, 2), requests=20, warmup=0)
    assert result.status == "aborted"
    assert len(result.levels) == 1
    assert result.levels[0].failure_classes == {"server_error": 3}
    assert result.error is not None and "HTTP 500" in result.error


def test_stalled_stream_times_out(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "stall", requests=1, warmup=0, timeout=0.4).levels
    assert level.failure_classes == {"timeout": 1}


def test_throttling_is_retried(stand_in: ServerProcess) -> None:
    [level] = bench(stand_in, "throttle2", requests=3, warmup=0).levels
    assert level.completed == 3 and level.failed == 0
    assert level.retried_classes == {"throttled": 2}


def test_unreachable_server(stand_in: ServerProcess) -> None:
    config = BenchmarkConfig(
        target=HttpTarget(base_url="http://127.0.0.1:9"),
        load=LoadConfig(concurrency_levels=(1, 2), requests_per_level=5),
    )
    result = asyncio.run(run_benchmark(config)).result
    assert result.status == "aborted"
    assert result.levels[0].failure_classes == {"connection_error": 2}  # + 1 failed warm-up = 3
    assert "connection_error" in (result.error or "")
