"""Lambda entry point: the same replayed prompts against the served endpoint and the candidate.

Event (from the retraining state machine):

    {"served": "qwen3-endpoint", "candidate": "qwen3-cand-1a2b3c4d", "container": "vllm",
     "dataset_s3_uri": "s3://bucket/retraining/cycle-7/", "concurrency": 8,
     "requests": 64, "output_tokens": 256, "margin": 0.05, "request_timeout_s": 120}

The prompts are the cycle's dataset (the ShareGPT lines the dataset step wrote from captured traffic).
Each endpoint gets one closed-loop level at ``concurrency`` with the same prompts (a fixed seed), one
after the other, through the project's benchmark engine (boto3 client). The answer carries both
measurements and the throughput the candidate must beat; the state machine's Choice state decides.
A level that measured nothing raises: the cycle then fails and the served head stays.
"""

from __future__ import annotations

import json
from typing import Any

from speculative_infra.benchmark.config import BenchmarkConfig
from speculative_infra.benchmark.results import LevelResult
from speculative_infra.benchmark.sweep import new_benchmark, run_next_level_blocking
from speculative_infra.benchmark.transports import Transport

MARGIN_S = 30.0
SEED = 20260101  # both endpoints answer the same prompts


class EvaluationError(RuntimeError):
    """An endpoint could not be measured; the message says which and why."""


def _config(event: dict[str, Any], endpoint: str) -> BenchmarkConfig:
    try:
        concurrency = int(event.get("concurrency", 8))
        requests = int(event.get("requests", 64))
        output_tokens = int(event.get("output_tokens", 256))
        timeout = float(event.get("request_timeout_s", 120))
        dataset = str(event["dataset_s3_uri"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"evaluation input needs dataset_s3_uri and numeric settings: {err!r}") from None
    return BenchmarkConfig.from_dict(
        {
            "target": {
                "kind": "sagemaker",
                "endpoint_name": endpoint,
                "container": event.get("container", "vllm"),
                "client": "boto3",
                **({"endpoint_url": event["endpoint_url"]} if event.get("endpoint_url") else {}),
                **({"region": event["region"]} if event.get("region") else {}),
            },
            "workload": {
                "output_tokens": output_tokens,
                "seed": SEED,
                "dataset": {"path": dataset, "format": "sharegpt", "output_length": "forced"},
            },
            "load": {
                "concurrency_levels": [concurrency],
                "requests_per_level": requests,
                "request_timeout_s": timeout,
            },
            "label": f"retraining evaluation: {endpoint}",
        }
    )


def measure(event: dict[str, Any], endpoint: str, seconds: float, transport: Transport | None) -> LevelResult:
    report = run_next_level_blocking(
        new_benchmark(_config(event, endpoint)), seconds_available=seconds, transport=transport
    )
    level = report.level
    if level is None or not level.completed or level.output_throughput is None:
        why = report.state.result.error or (
            f"{level.failed} of {level.planned_requests} failed" if level else "no level"
        )
        raise EvaluationError(f"{endpoint}: nothing measured ({why})")
    return level


def _figures(level: LevelResult) -> dict[str, float]:
    return {
        "output_throughput": round(float(level.output_throughput or 0.0), 3),
        "tokens_per_chunk": round(float(level.mean_tokens_per_chunk or 0.0), 4),
        "median_ttft_ms": round(float(level.median_ttft_ms or 0.0), 3),
        "completed": level.completed,
        "failed": level.failed,
    }


def evaluate(
    event: dict[str, Any], seconds_available: float, transport: Transport | None = None
) -> dict[str, Any]:
    margin = float(event.get("margin", 0.05))
    each = max(1.0, seconds_available / 2)
    served = _figures(measure(event, str(event["served"]), each, transport))
    candidate = _figures(measure(event, str(event["candidate"]), each, transport))
    return {
        "served": served,
        "candidate": candidate,
        "margin": margin,
        "required_output_throughput": round(served["output_throughput"] * (1 + margin), 3),
    }


def handler(event: dict[str, Any], context: Any, transport: Transport | None = None) -> dict[str, Any]:
    remaining = context.get_remaining_time_in_millis() / 1000.0 if context is not None else 840.0
    result = evaluate(event, max(1.0, remaining - MARGIN_S), transport=transport)
    print(json.dumps({"handler": "retraining_evaluate", **result}))
    return result
