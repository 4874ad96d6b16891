"""Hostile input, `report`: a results file of very many levels, a huge label or many files is refused
with the limit and its reason (exit 2) in seconds; any JSON document at all ends in an exit status,
never a traceback."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speculative_infra.benchmark.config import MAX_LABEL_CHARS
from speculative_infra.benchmark.report_markdown import MAX_REPORT_LEVELS, MAX_REPORT_RESULTS
from speculative_infra.cli.main import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # matplotlib: missing glyphs, empty legends
FIXTURE = Path(__file__).parent / "fixtures" / "results_v1.json"
DOC: dict[str, Any] = json.loads(FIXTURE.read_text())


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def with_levels(count: int) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    level = doc["levels"][0]
    doc["levels"] = [{**level, "concurrency": i + 1} for i in range(count)]
    return doc


def test_report_refuses_more_levels_than_it_draws_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "many.json", with_levels(MAX_REPORT_LEVELS + 1))
    started = time.monotonic()
    assert exit_code(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
    assert time.monotonic() - started < 20
    err = capsys.readouterr().err
    assert f"{MAX_REPORT_LEVELS + 1} levels" in err and f"at most {MAX_REPORT_LEVELS}" in err
    assert "Traceback" not in err and not (tmp_path / "rep").exists()


def test_report_refuses_a_megabyte_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "label.json", {**DOC, "label": "L" * 1_000_000})
    started = time.monotonic()
    assert exit_code(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
    assert time.monotonic() - started < 5
    err = capsys.readouterr().err
    assert "1000000 characters" in err and f"at most {MAX_LABEL_CHARS}" in err and "Traceback" not in err


def test_report_refuses_more_files_than_it_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = [str(write(tmp_path / f"r{i}.json", DOC)) for i in range(MAX_REPORT_RESULTS + 1)]
    assert exit_code(["report", *paths, "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_REPORT_RESULTS}" in err and "Traceback" not in err


def test_a_report_of_many_levels_finishes_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    path = write(tmp_path / "many.json", with_levels(2_000))  # took ~100 s before tick labels were capped
    started = time.monotonic()
    assert exit_code(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    assert time.monotonic() - started < 30
    assert "Traceback" not in capsys.readouterr().err


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def run_report(tmp_path: Path, text: str) -> tuple[int, str]:
    path = tmp_path / "r.json"
    path.write_text(text)
    code = exit_code(["report", str(path), "--out", str(tmp_path / "rep")])
    return code, ""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=JSON)
def test_report_of_any_json_document_exits_with_a_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Any
) -> None:
    code, _ = run_report(tmp_path, json.dumps(doc))
    # 2: a bad argument (limits); 3: not a results file (the status `report` has always used for it).
    assert code in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    key=st.sampled_from([*sorted(set(DOC)), "levels.0"]),
    value=JSON,
)
def test_report_of_a_results_file_with_one_field_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any
) -> None:
    doc = copy.deepcopy(DOC)
    if key == "levels.0":
        doc["levels"][0] = value
    else:
        doc[key] = value
    code, _ = run_report(tmp_path, json.dumps(doc))
    assert code in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


NUMBER = st.one_of(
    st.none(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -1.0, 1e-300, 1e300, -1e300, 1.7976931348623157e308, 5e-324]),
)
LEVEL_NUMBERS = (
    "output_throughput",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_e2el_ms",
    "p99_e2el_ms",
    "output_tokens_per_second_per_user",
    "cost_per_million_output_tokens",
    "output_goodput",
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    levels=st.lists(
        st.fixed_dictionaries(
            {
                "concurrency": st.integers(min_value=-(10**30), max_value=10**30),
                "request_rate": st.none() | st.floats(allow_nan=False, allow_infinity=False),
                **{name: NUMBER for name in LEVEL_NUMBERS},
            }
        ),
        min_size=1,
        max_size=6,
    ),
    label=st.text(max_size=MAX_LABEL_CHARS),
    sustained=NUMBER,
)
def test_report_draws_results_with_hostile_numbers_or_refuses_them(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    levels: list[dict[str, Any]],
    label: str,
    sustained: Any,
) -> None:
    doc = copy.deepcopy(DOC)
    base = doc["levels"][0]
    doc["levels"] = [{**base, **level} for level in levels]
    doc["label"] = label
    doc["max_sustained_rate"] = sustained
    code, _ = run_report(tmp_path, json.dumps(doc))
    err = capsys.readouterr().err
    assert code in (0, 2), err
    assert "Traceback" not in err


@settings(max_examples=40, deadline=None)
@given(values=st.lists(NUMBER, min_size=1, max_size=8), concurrency=st.integers(-(10**30), 10**30))
def test_the_svg_charts_draw_hostile_numbers_without_raising(values: list[Any], concurrency: int) -> None:
    from speculative_infra.benchmark.report_svg import sweep_charts
    from speculative_infra.benchmark.results import BenchmarkResult

    doc = copy.deepcopy(DOC)
    base = doc["levels"][0]
    doc["levels"] = [
        {**base, "concurrency": concurrency + i, **{name: v for name in LEVEL_NUMBERS}}
        for i, v in enumerate(values)
    ]
    charts = sweep_charts([BenchmarkResult.from_dict(doc)])
    assert all(
        svg.startswith("<svg") and "nan" not in svg.lower().replace("nanoseconds", "")
        for svg in charts.values()
    )
