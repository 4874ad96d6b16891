"""Lambda entry point of the endpoint canary, invoked by EventBridge Scheduler.

The schedule's input is the canary's configuration (written by the EndpointCanary construct):

    {"target": {"kind": "sagemaker", "endpoint_name": ..., "inference_component_name": ..., "container": ...},
     "requests": 3, "output_tokens": 64, "request_timeout_s": 60}

Each run sends one uncounted warm-up request (it opens the connection, as `speculative-infra bench`
warms up, so no measured TTFT includes DNS, TCP and TLS set-up), then ``requests`` streaming requests one
after another (concurrency 1, no retries: the canary reports failures, it does not hide them) with the
fixed prompts in prompts.jsonl, through the project's benchmark engine, and prints CloudWatch EMF lines
(see emf.py). A run never raises for an endpoint problem: a failed request is a measurement. Requests
the invocation's deadline cut off are neither: they are left out. A malformed input raises.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from speculative_infra.benchmark.config import BenchmarkConfig
from speculative_infra.benchmark.results import RequestRecord
from speculative_infra.benchmark.sweep import new_benchmark, run_next_level_blocking
from speculative_infra.benchmark.transports import Transport

from .emf import run_documents

PROMPTS = "prompts.jsonl"
MARGIN_S = 10.0  # kept back from the invocation's time to print the metrics


class CanaryInputError(ValueError):
    """The schedule's input is not a canary configuration."""


def prompts_path() -> str:
    return str(resources.files(__package__) / PROMPTS)


def benchmark_config(event: dict[str, Any]) -> BenchmarkConfig:
    """The engine's configuration for one canary run: one level, concurrency 1, fixed prompts."""
    try:
        target = dict(event["target"])
        requests = int(event.get("requests", 3))
        output_tokens = int(event.get("output_tokens", 64))
        timeout = float(event.get("request_timeout_s", 60))
    except (KeyError, TypeError, ValueError) as err:
        raise CanaryInputError(f"canary input needs a target and numeric settings: {err!r}") from None
    return BenchmarkConfig.from_dict(
        {
            "target": target,
            "workload": {
                "output_tokens": output_tokens,
                "dataset": {"path": prompts_path(), "format": "jsonl", "output_length": "forced"},
            },
            "load": {
                "concurrency_levels": [1],
                "requests_per_level": requests,
                "warmup_requests": 1,
                "request_timeout_s": timeout,
                "max_retries": 0,
                "abort_after_failures": requests
                + 1,  # measure every request (and the warm-up), even when all fail
            },
            "label": "canary",
        }
    )


def per_request_samples(records: list[RequestRecord]) -> dict[str, list[float]]:
    """TTFT, TPOT and output tokens/s of each successful measured request, and the run's tokens per chunk."""
    samples: dict[str, list[float]] = {
        "TimeToFirstToken": [],
        "TimePerOutputToken": [],
        "OutputTokensPerSecond": [],
        "TokensPerChunk": [],
    }
    tokens = chunks = 0
    for record in records:
        if record.phase != "measured" or record.status != "ok":
            continue
        if record.ttft_ms is not None:
            samples["TimeToFirstToken"].append(round(record.ttft_ms, 3))
        if record.tpot_ms is not None:
            samples["TimePerOutputToken"].append(round(record.tpot_ms, 3))
        if record.output_tokens and record.e2el_ms:
            samples["OutputTokensPerSecond"].append(
                round(record.output_tokens / (record.e2el_ms / 1000.0), 3)
            )
        if record.output_tokens and record.chunks:
            tokens += record.output_tokens
            chunks += record.chunks
    # Mean accepted draft length + 1 under speculative decoding (vLLM streams one chunk per step): all
    # tokens over all chunks, as the benchmark computes its baseline, not a mean of per-request ratios.
    if chunks:
        samples["TokensPerChunk"].append(round(tokens / chunks, 4))
    return samples


def run_canary(
    event: dict[str, Any], seconds_available: float, transport: Transport | None = None
) -> dict[str, Any]:
    config = benchmark_config(event)
    state = new_benchmark(config)
    target = state.result.target_name()
    requests = config.load.requests_per_level or 1
    report = run_next_level_blocking(state, seconds_available=seconds_available, transport=transport)
    if report.level is None:  # the engine could not start the level (no transport): every request failed
        failures = {"unavailable": requests}
        samples: dict[str, list[float]] = {}
        error = report.state.result.error
    else:
        # Cancelled requests (cut off by the invocation's deadline) are not measurements.
        measured = [r for r in report.records if r.phase == "measured" and r.status != "cancelled"]
        requests = len(measured)
        failures = {}
        for record in measured:
            if record.status == "failed":
                key = record.failure_class or "unknown"
                failures[key] = failures.get(key, 0) + 1
        samples = per_request_samples(report.records)
        error = None
    for line in run_documents(target, samples, requests, failures):
        print(line)
    return {
        "target": target,
        "requests": requests,
        "failures": failures,
        "error": error,
        **{name: (sum(values) / len(values) if values else None) for name, values in samples.items()},
    }


def handler(event: dict[str, Any], context: Any, transport: Transport | None = None) -> dict[str, Any]:
    remaining = context.get_remaining_time_in_millis() / 1000.0 if context is not None else 120.0
    result = run_canary(event, max(1.0, remaining - MARGIN_S), transport=transport)
    print(json.dumps({"handler": "canary", **result}, default=str))
    return result
