"""`report`'s table read back: every number in the Markdown is the field of the level it came from, in its
own column, rounded to the digits shown (not a neighbour's value, not p50 for p99, not ms for s)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from speculative_infra.benchmark.config import (
    CostConfig,
    HttpTarget,
    Level,
    LoadConfig,
    SloConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.failures import Failure, FailureClass
from speculative_infra.benchmark.load import LevelRun, RequestOutcome, StopReason
from speculative_infra.benchmark.metrics import summarize_level
from speculative_infra.benchmark.report import render_report
from speculative_infra.benchmark.report_markdown import render_markdown
from speculative_infra.benchmark.results import BenchmarkResult, LevelResult

from .test_metrics import outcome

WORKLOAD = WorkloadConfig(input_tokens=100, output_tokens=400, seed=1)
_Field = Callable[[LevelResult], float | None]

# Header -> the field(s) of the level shown there, each with its digits after the point (None: a count).
COLUMNS: dict[str, tuple[tuple[_Field, int | None], ...]] = {
    "ok / failed": ((lambda lv: lv.completed, None), (lambda lv: lv.failed, None)),
    "req/s": ((lambda lv: lv.request_throughput, 2),),
    "out tok/s": ((lambda lv: lv.output_throughput, 1),),
    "tok/s per user": ((lambda lv: lv.output_tokens_per_second_per_user, 1),),
    "TTFT p50 / p99 (ms)": ((lambda lv: lv.median_ttft_ms, 1), (lambda lv: lv.p99_ttft_ms, 1)),
    "TPOT p50 / p99 (ms)": ((lambda lv: lv.median_tpot_ms, 2), (lambda lv: lv.p99_tpot_ms, 2)),
    "ITL p50 (ms)": ((lambda lv: lv.median_itl_ms, 2),),
    "E2E p50 / p99 (s)": ((lambda lv: _s(lv.median_e2el_ms), 2), (lambda lv: _s(lv.p99_e2el_ms), 2)),
    "tok/chunk": ((lambda lv: lv.mean_tokens_per_chunk, 2),),
    "lag p99 (ms)": ((lambda lv: lv.p99_client_lag_ms, 2),),
    "$/M out": ((lambda lv: lv.cost_per_million_output_tokens, 3),),
    "good / goodput req/s": ((lambda lv: lv.good_requests, None), (lambda lv: lv.request_goodput, 2)),
}


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def _outcomes(rng: random.Random, count: int, concurrency: int) -> list[RequestOutcome]:
    out = []
    for i in range(count):
        sent = 0.9 * (i // concurrency) + 0.003 * (i % concurrency)
        chunks = [sent + rng.uniform(0.04, 0.4)]
        for _ in range(rng.randint(60, 110)):
            chunks.append(chunks[-1] + rng.uniform(0.002, 0.011))
        usage = len(chunks) * rng.choice([2, 3, 4])
        out.append(outcome(i, sent=sent, chunks=chunks, usage=usage, freed=sent - rng.uniform(0, 0.004)))
    return out


def _level(
    rng: random.Random, concurrency: int, rate: float | None = None, stop=StopReason.COMPLETE
) -> LevelResult:
    outcomes = _outcomes(rng, 4 * concurrency, concurrency)
    failed = outcome(99, sent=0.0, chunks=[0.1], failure=Failure(FailureClass.STREAM_BROKEN, "cut"))
    run = LevelRun(Level(concurrency, rate), 0.0, 10.0, 0, len(outcomes) + 1, [*outcomes, failed], stop, None)
    level, _ = summarize_level(
        run, WORKLOAD, CostConfig(price_per_hour=4.2, instance_count=2), "usage", SloConfig(ttft_ms=250.0)
    )
    return level


def _result(levels: list[LevelResult], label: str = "eagle") -> BenchmarkResult:
    return BenchmarkResult(
        label=label,
        target=HttpTarget(base_url="http://127.0.0.1:8000", model="m"),
        workload=WORKLOAD,
        load=LoadConfig(concurrency_levels=(1, 2, 4), requests_per_level=4),
        cost=CostConfig(price_per_hour=4.2, instance_count=2),
        slo=SloConfig(ttft_ms=250.0),
        started_at="2026-12-01T00:00:00+00:00",
        status="complete",
        levels=levels,
    )


def _tables(markdown: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each table of the Markdown: its headers and its rows of cells."""
    tables: list[tuple[list[str], list[list[str]]]] = []
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            tables.append(([c.strip() for c in line.strip("|").split("|")], rows))
    return tables


def _number(cell: str) -> float | None:
    return None if cell == "-" else float(cell.replace(",", ""))


def _assert_row(headers: list[str], cells: list[str], level: LevelResult) -> None:
    assert len(cells) == len(headers)
    for header, cell in zip(headers[1:], cells[1:], strict=True):
        parts = cell.split(" / ")
        assert len(parts) == len(COLUMNS[header]), header
        for part, (field, digits) in zip(parts, COLUMNS[header], strict=True):
            expected = field(level)
            shown = _number(part)
            if expected is None:
                assert shown is None, header
            elif digits is None:
                assert shown == expected and part == str(expected), header
            else:
                assert shown is not None, header
                assert abs(shown - expected) <= 0.5 * 10**-digits + 1e-9, (header, part, expected)
                assert part == f"{expected:,.{digits}f}", header  # the thousands separator too


@pytest.fixture(scope="module")
def closed() -> BenchmarkResult:
    rng = random.Random(7)
    return _result([_level(rng, 1), _level(rng, 2), _level(rng, 4, stop=StopReason.TIME_BUDGET)])


def test_every_number_of_the_markdown_table_is_its_levels_field(closed: BenchmarkResult) -> None:
    # The levels say different things in every column (a swapped column would show).
    first = closed.levels[0]
    assert max(lv.output_throughput or 0 for lv in closed.levels) > 1000  # a thousands separator shown
    assert first.median_ttft_ms != first.p99_ttft_ms and first.median_tpot_ms != first.p99_tpot_ms
    assert first.good_requests is not None and 0 < first.good_requests < first.completed
    [(headers, rows)] = _tables(render_markdown([closed]))
    assert headers[0] == "C" and set(headers[1:]) == set(COLUMNS)
    assert [r[0] for r in rows] == ["1", "2", "4 (time_budget)"]
    for cells, level in zip(rows, closed.levels, strict=True):
        _assert_row(headers, cells, level)


def test_a_level_without_data_shows_dashes(closed: BenchmarkResult) -> None:
    empty = LevelResult(
        concurrency=8, complete=True, stop_reason="complete", warmup_requests=0, planned_requests=1,
        completed=0, failed=1, cancelled=0, good_requests=0,
    )  # fmt: skip
    result = _result([closed.levels[0], empty])
    [(headers, rows)] = _tables(render_markdown([result]))
    _assert_row(headers, rows[1], empty)
    assert rows[1][1:4] == ["0 / 1", "-", "-"]


def test_open_loop_levels_are_named_by_their_rate() -> None:
    rng = random.Random(8)
    result = _result([_level(rng, 2, rate=5.0), _level(rng, 2, rate=12.5)])
    [(headers, rows)] = _tables(render_markdown([result]))
    assert headers[0] == "rate (req/s)" and [r[0] for r in rows] == ["5/s", "12.5/s"]
    for cells, level in zip(rows, result.levels, strict=True):
        _assert_row(headers, cells, level)


def test_report_md_holds_the_same_numbers(closed: BenchmarkResult, tmp_path: Path) -> None:
    other = _result([_level(random.Random(9), 2)], label="baseline")
    files = render_report([closed, other], tmp_path)
    tables = _tables(files.markdown.read_text(encoding="utf-8"))
    assert len(tables) == 2
    for (headers, rows), result in zip(tables, (closed, other), strict=True):
        assert len(rows) == len(result.levels)
        for cells, level in zip(rows, result.levels, strict=True):
            _assert_row(headers, cells, level)
