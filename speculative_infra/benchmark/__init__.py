"""Benchmark engine for LLM endpoints: closed-loop load, vLLM-named metrics, tokens per dollar.

Pure Python with no CDK import. Configuration, results and the resumable sweep state are
standard-library dataclasses with explicit validation (:class:`ConfigError`) and JSON conversion
(``to_dict()`` / ``from_dict()``). The transports run on the standard library (an HTTP/1.1 client on
asyncio protocols) plus botocore for SageMaker signing, so the engine runs in an AWS Lambda function
bundled as source files; boto3 (its threaded SageMaker client) and matplotlib (report) are imported only
by the modules that need them.

Typical use::

    config = BenchmarkConfig(target=HttpTarget(base_url="http://localhost:8000"))
    state = asyncio.run(run_benchmark(config))
    write_all(state.result, OutputPaths.for_results(Path("results.json")))
"""

from .clock import Clock, MonotonicClock
from .config import (
    BenchmarkConfig,
    ConfigError,
    CostConfig,
    HttpTarget,
    Level,
    LoadConfig,
    SageMakerTarget,
    SloConfig,
    Target,
    WorkloadConfig,
)
from .failures import Failure, FailureClass
from .files import (
    OutputPaths,
    append_request_records,
    load_results,
    write_all,
    write_levels_csv,
    write_results,
)
from .load import LevelProgress, LevelRun, RequestOutcome, StopReason, run_level
from .metrics import cost_per_million_output_tokens, percentile, summarize_level
from .results import BenchmarkResult, LevelResult, RequestRecord
from .sweep import (
    BenchmarkState,
    LevelReport,
    finish_with_error,
    new_benchmark,
    run_benchmark,
    run_next_level,
    run_next_level_blocking,
)
from .transports import TargetUnavailable, Transport, WireRequest, make_transport
from .workload import Phase, Prompt, PromptFactory

__all__ = [
    "BenchmarkConfig",
    "BenchmarkResult",
    "BenchmarkState",
    "Clock",
    "ConfigError",
    "CostConfig",
    "Failure",
    "FailureClass",
    "HttpTarget",
    "Level",
    "LevelProgress",
    "LevelReport",
    "LevelResult",
    "LevelRun",
    "LoadConfig",
    "MonotonicClock",
    "OutputPaths",
    "Phase",
    "Prompt",
    "PromptFactory",
    "RequestOutcome",
    "RequestRecord",
    "SageMakerTarget",
    "SloConfig",
    "StopReason",
    "Target",
    "TargetUnavailable",
    "Transport",
    "WireRequest",
    "WorkloadConfig",
    "append_request_records",
    "cost_per_million_output_tokens",
    "finish_with_error",
    "load_results",
    "make_transport",
    "new_benchmark",
    "percentile",
    "run_benchmark",
    "run_level",
    "run_next_level",
    "run_next_level_blocking",
    "summarize_level",
    "write_all",
    "write_levels_csv",
    "write_results",
]
