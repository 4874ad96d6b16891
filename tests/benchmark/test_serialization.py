"""Standard-library records: validation errors name the field, JSON round trips, old files load.

``fixtures/`` holds files written by the engine when its models were pydantic models (results
JSON, CSV and JSONL of a sweep with retries, failures and an aborted level; a SageMaker sweep's
state saved after its first level). They pin the file formats: the current writers must read
them and write them back byte for byte.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import io
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.benchmark import (
    BenchmarkConfig,
    BenchmarkResult,
    BenchmarkState,
    ConfigError,
    CostConfig,
    HttpTarget,
    LevelResult,
    LoadConfig,
    OutputPaths,
    RequestRecord,
    SageMakerTarget,
    WorkloadConfig,
    load_results,
    new_benchmark,
    run_benchmark,
    run_next_level,
    write_all,
    write_levels_csv,
)
from speculative_infra.benchmark.files import results_json
from speculative_infra.benchmark.schema import MISSING
from speculative_infra.cli.main import main

from .fakes import FakeClock, FakeTransport
from .stand_ins.server import ServerProcess

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"

CONFIG = BenchmarkConfig(
    target=SageMakerTarget(endpoint_name="qwen3-eagle", region="us-west-2", container="lmi"),
    workload=WorkloadConfig(input_tokens=50, output_tokens=10, shared_prefix_tokens=10, seed=4),
    load=LoadConfig(concurrency_levels=(1, 2, 4), requests_per_level=4, warmup_requests=1, max_retries=1),
    cost=CostConfig(price_per_hour=13.12),
    label="lmi",
)


def _flaky(attempt: int, request: Any) -> str:
    """C=1 clean, C=2 one throttled retry and one server error, C=4 every request breaks."""
    rid = request.request_id
    if "-c2-m1" in rid:
        return "throttled" if attempt % 2 == 0 else "ok"
    if "-c2-m3" in rid:
        return "server_error"
    return "stream_broken" if "-c4-" in rid else "ok"


def _sweep() -> BenchmarkState:
    clock = FakeClock()
    transport = FakeTransport(clock, CONFIG.workload, tokens_per_chunk=3, plan=_flaky)
    return asyncio.run(clock.drive(run_benchmark(CONFIG, transport, clock=clock)))


# --- the engine without pydantic or matplotlib (AWS Lambda) ------------------------------------

_LAMBDA_SCRIPT = textwrap.dedent(
    """
    import importlib.abc
    import json
    import sys
    import tempfile
    from pathlib import Path

    BLOCKED = ("pydantic", "pydantic_core", "aiohttp", "matplotlib")
    for name in BLOCKED:
        sys.modules[name] = None  # `import pydantic` now raises ImportError

    # The Lambda Python runtime: the standard library, boto3 and boto3's own dependencies.
    ALLOWED = {"speculative_infra", "boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3"}

    class LambdaRuntimeOnly(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            top = fullname.partition(".")[0]
            if top in sys.stdlib_module_names or top in ALLOWED:
                return None
            raise ModuleNotFoundError(f"No module named {fullname!r} (not in the Lambda runtime)", name=fullname)

    sys.meta_path.insert(0, LambdaRuntimeOnly())

    import speculative_infra.benchmark as bench
    import speculative_infra.benchmark.sweep as sweep
    import speculative_infra.benchmark.transports.sagemaker as sagemaker

    config = bench.BenchmarkConfig(
        target=bench.SageMakerTarget(
            endpoint_name="steady", region="us-west-2", endpoint_url=sys.argv[1], client="boto3"
        ),
        workload=bench.WorkloadConfig(input_tokens=30, output_tokens=12),
        load=bench.LoadConfig(concurrency_levels=(1, 2), requests_per_level=2, warmup_requests=0),
    )
    state = bench.new_benchmark(config)
    saved = json.dumps(state.to_dict())  # what a handler returns or puts in S3
    assert sweep.BenchmarkState.from_dict(json.loads(saved)) == state
    assert isinstance(bench.make_transport(config, bench.MonotonicClock()), sagemaker.SageMakerTransport)

    # One Lambda invocation: restore the state, run a level through boto3, save the state again.
    report = bench.run_next_level_blocking(sweep.BenchmarkState.from_dict(json.loads(saved)))
    saved = json.dumps(report.state.to_dict())
    resumed = sweep.BenchmarkState.from_dict(json.loads(saved))
    assert resumed == report.state and resumed.next_concurrency == 2, saved
    out = Path(tempfile.mkdtemp()) / "results.json"
    bench.write_all(resumed.result, bench.OutputPaths.for_results(out), report.records)
    assert bench.load_results(out) == resumed.result

    # The asyncio client needs nothing beyond that either (standard library and botocore).
    import dataclasses
    import speculative_infra.benchmark.transports.sagemaker_async as sagemaker_async

    asyncio_config = dataclasses.replace(config, target=dataclasses.replace(config.target, client="asyncio"))
    assert isinstance(bench.make_transport(asyncio_config, bench.MonotonicClock()), sagemaker_async.AsyncSageMakerTransport)
    other = bench.run_next_level_blocking(bench.new_benchmark(asyncio_config))

    leaked = sorted(name for name in BLOCKED if sys.modules.get(name) is not None)
    print(json.dumps({"completed": report.level.completed + other.level.completed, "status": resumed.result.status, "leaked": leaked}))
    """
)


def test_engine_runs_with_only_the_standard_library_and_boto3(stand_in: ServerProcess, aws_env: None) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _LAMBDA_SCRIPT, stand_in.base_url],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"completed": 4, "status": "running", "leaked": []}


# --- validation --------------------------------------------------------------------------------


def _state_dict() -> dict[str, Any]:
    return _sweep().to_dict()


def _set(data: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    node: Any = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "field"),
    [
        (("colour",), "colour"),
        (("config", "target", "colour"), "config.target.colour"),
        (("config", "load", "colour"), "config.load.colour"),
        (("result", "levels", 1, "colour"), "result.levels[1].colour"),
    ],
)
def test_from_dict_rejects_an_unknown_key_naming_it(path: tuple[str | int, ...], field: str) -> None:
    data = _set(_state_dict(), path, "red")
    with pytest.raises(ConfigError) as caught:
        BenchmarkState.from_dict(data)
    assert caught.value.field == field and caught.value.value == "red"
    assert str(caught.value).startswith(f"{field}: unknown field of ")
    assert "allowed: " in str(caught.value)


@pytest.mark.parametrize(
    ("path", "value", "field", "allowed"),
    [
        (("next_level_index",), "1", "next_level_index", "an integer >= 0"),
        (("config", "load", "concurrency_levels"), "1,2", "config.load.concurrency_levels", "a list"),
        (
            ("config", "load", "concurrency_levels", 1),
            0,
            "config.load.concurrency_levels[1]",
            "an integer >= 1",
        ),
        (("config", "workload", "input_tokens"), True, "config.workload.input_tokens", "an integer >= 1"),
        (("config", "target", "kind"), "tgi", "config.target.kind", "one of 'sagemaker', 'openai_http'"),
        (("config", "target", "endpoint_name"), "", "config.target.endpoint_name", "a string of 1 to 63"),
        (("result", "status"), "done", "result.status", "one of 'running', 'complete'"),
        (("result", "levels", 0, "completed"), 4.0, "result.levels[0].completed", "an integer"),
        (
            ("result", "levels", 0, "mean_ttft_ms"),
            "fast",
            "result.levels[0].mean_ttft_ms",
            "null or a finite",
        ),
        (
            ("result", "levels", 1, "failure_classes", "x"),
            "1",
            "result.levels[1].failure_classes['x']",
            "integer",
        ),
        (("result", "client"), ["fake"], "result.client", "an object with string keys"),
    ],
)
def test_from_dict_rejects_a_wrong_type_naming_the_field(
    path: tuple[str | int, ...], value: Any, field: str, allowed: str
) -> None:
    data = _set(_state_dict(), path, value)
    with pytest.raises(ConfigError) as caught:
        BenchmarkState.from_dict(data)
    error = caught.value
    assert error.field == field and error.value == value and allowed in error.allowed
    assert str(error) == f"{field}: expected {error.allowed}, got {value!r}"


def test_from_dict_reports_a_missing_key_and_a_non_object() -> None:
    data = _state_dict()
    del data["config"]["target"]["endpoint_name"]
    with pytest.raises(
        ConfigError, match=r"^config\.target\.endpoint_name: required field is missing"
    ) as caught:
        BenchmarkState.from_dict(data)
    assert caught.value.value is MISSING
    with pytest.raises(ConfigError, match=r"^target\.kind: required field is missing"):
        BenchmarkConfig.from_dict({"target": {"endpoint_name": "e"}})
    with pytest.raises(ConfigError, match="expected a JSON object with the fields of BenchmarkResult"):
        BenchmarkResult.from_dict([])  # type: ignore[arg-type]


def test_constructors_validate_and_normalise() -> None:
    with pytest.raises(ConfigError) as caught:
        SageMakerTarget(endpoint_name="x" * 64)
    assert caught.value.field == "endpoint_name" and isinstance(caught.value, ValueError)
    for bad in ({"request_timeout_s": float("inf")}, {"ramp_up_s": -1.0}, {"max_retries": 1.5}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            LoadConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="concurrency_levels: expected at least one level"):
        LoadConfig(concurrency_levels=())
    with pytest.raises(ConfigError, match="base_url: expected an http"):
        HttpTarget(base_url="localhost:8000")
    load = LoadConfig(concurrency_levels=[1, 2], request_timeout_s=5)  # type: ignore[arg-type]
    assert load.concurrency_levels == (1, 2) and isinstance(load.request_timeout_s, float)
    assert HttpTarget(base_url="http://h:1/").base_url == "http://h:1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        load.max_retries = 5  # type: ignore[misc]
    config = BenchmarkConfig(target={"kind": "openai_http", "base_url": "http://h"})  # type: ignore[arg-type]
    assert config.target == HttpTarget(base_url="http://h")


def test_state_round_trips_through_json() -> None:
    state = _sweep()
    assert state.result.status == "aborted" and len(state.result.levels) == 3
    data = json.loads(json.dumps(state.to_dict(), allow_nan=False))
    assert data == state.to_dict()
    restored = BenchmarkState.from_dict(data)
    assert restored == state and restored.to_dict() == data
    assert isinstance(restored.config.load.concurrency_levels, tuple)
    assert BenchmarkConfig.from_dict(CONFIG.to_dict()) == CONFIG
    for level in state.result.levels:
        assert LevelResult.from_dict(level.to_dict()) == level


def test_running_a_level_leaves_the_given_state_unchanged() -> None:
    clock = FakeClock()
    state = new_benchmark(CONFIG, clock=clock, run_id="r")
    before = state.to_dict()
    report = asyncio.run(
        clock.drive(run_next_level(state, FakeTransport(clock, CONFIG.workload), clock=clock))
    )
    assert state.to_dict() == before and report.state.next_level_index == 1
    assert report.state.result.levels and not state.result.levels


def test_written_files_load_back(tmp_path: Path) -> None:
    state = _sweep()
    paths = OutputPaths.for_results(tmp_path / "r.json")
    write_all(state.result, paths)
    assert load_results(paths.results) == state.result


# --- files written before the move to dataclasses ----------------------------------------------

# Fields added since those files were written, with the value an old file means by leaving them out.
ADDED_SINCE_V1: dict[str, Any] = {
    "client": "auto",
    "dataset": None,
    "request_rates": None,
    "burstiness": 1.0,
    "max_concurrency": None,
    "slo": None,
    "request_rate": None,
    "achieved_request_rate": None,
    "good_requests": None,
    "request_goodput": None,
    "output_goodput": None,
    "rate_sweep": None,
    "max_sustained_rate": None,
    "workers": 1,
}


def _without_added(data: Any) -> Any:
    """``data`` without the fields added since v1 where they hold their defaults (anything else stays)."""
    if isinstance(data, dict):
        return {
            k: _without_added(v)
            for k, v in data.items()
            if not (k in ADDED_SINCE_V1 and v == ADDED_SINCE_V1[k])
        }
    if isinstance(data, list):
        return [_without_added(v) for v in data]
    return data


def _csv_columns(text: str, columns: list[str]) -> list[list[str]]:
    rows = list(csv.DictReader(io.StringIO(text)))
    return [[row[c] for c in columns] for row in rows]


def test_results_written_by_the_pydantic_engine_load_and_are_rewritten_identically(tmp_path: Path) -> None:
    path = FIXTURES / "results_v1.json"
    result = load_results(path)
    assert (
        result.label == "eagle \u2013 v1 \u201cfixture\u201d" and result.status == "aborted"
    )  # non-ASCII kept
    assert result.target == HttpTarget(base_url="http://127.0.0.1:8000", api="completions", model="qwen3-32b")
    assert result.cost == CostConfig(price_per_hour=4.2, instance_count=2)
    assert [lv.concurrency for lv in result.levels] == [1, 2, 4]
    assert result.levels[1].retried_classes == {"throttled": 1}
    assert result.levels[2].mean_ttft_ms is None and result.levels[2].failure_classes == {"stream_broken": 3}
    original = path.read_text(encoding="utf-8")
    assert _without_added(json.loads(results_json(result))) == json.loads(original)
    write_levels_csv(result, tmp_path / "levels.csv")
    old_csv = (FIXTURES / "results_v1.csv").read_text(encoding="utf-8")
    old_columns = old_csv.splitlines()[0].split(",")
    new_csv = (tmp_path / "levels.csv").read_text(encoding="utf-8")
    assert _csv_columns(new_csv, old_columns) == _csv_columns(old_csv, old_columns)
    lines = (FIXTURES / "results_v1.requests.jsonl").read_text(encoding="utf-8").splitlines()
    records = [RequestRecord.from_dict(json.loads(line)) for line in lines]
    assert {r.status for r in records} == {"ok", "failed", "cancelled"} and any(
        r.retried_classes for r in records
    )
    assert [_without_added(r.to_dict()) for r in records] == [json.loads(line) for line in lines]


def test_state_saved_by_the_pydantic_engine_resumes() -> None:
    raw = json.loads((FIXTURES / "state_v1.json").read_text(encoding="utf-8"))
    state = BenchmarkState.from_dict(raw)
    # Fields added since then take their defaults; everything the file held comes back unchanged.
    assert _without_added(state.to_dict()) == raw
    assert state.run_id == "lam1" and state.next_concurrency == 2 and state.config.workload.seed == 123456
    clock = FakeClock()
    transport = FakeTransport(clock, state.config.workload)
    report = asyncio.run(clock.drive(run_next_level(state, transport, clock=clock)))
    assert report.state.done and report.state.result.status == "complete"
    assert [lv.concurrency for lv in report.state.result.levels] == [1, 2]
    assert all(r.request_id.startswith("lam1-c2-") for r in report.records)


def test_report_rejects_a_file_that_is_not_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text(
        json.dumps({**json.loads(results_json(_sweep().result)), "status": 3})
    )
    for name in ("bad.json", "wrong.json"):
        assert main(["report", str(tmp_path / name), "--out", str(tmp_path / "out")]) == 2  # bad input
    err = capsys.readouterr().err
    assert "bad.json is not a bench results file: Expecting property name" in err
    assert "wrong.json is not a bench results file: status: expected one of 'running'" in err
    assert "Traceback" not in err
