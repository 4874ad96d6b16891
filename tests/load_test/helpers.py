"""Configurations shared by the load-test tests."""

from __future__ import annotations

from typing import Any

from speculative_infra.benchmark.config import BenchmarkConfig
from speculative_infra.benchmark.distributed.profile import LoadTestConfig


def http_bench(port: int | None = None, scenario: str = "steady", **extra: Any) -> BenchmarkConfig:
    base = f"http://127.0.0.1:{port}/{scenario}" if port else "http://127.0.0.1:9/none"
    return BenchmarkConfig.from_dict(
        {
            "target": {"kind": "openai_http", "base_url": base},
            "workload": {"input_tokens": 20, "output_tokens": 10},
            **extra,
        }
    )


def load_test(steps: list[dict[str, Any]], port: int | None = None, **extra: Any) -> LoadTestConfig:
    bench = extra.pop("benchmark", None) or http_bench(port)
    return LoadTestConfig(benchmark=bench, steps=tuple(steps), **extra)
