"""`bench` progress without a terminal: a line every interval of a level with "level k of n", the requests
done and the time left. Unit tests drive the printer with progress reports on a chosen clock (no sleeping);
one end-to-end run against the stand-in server checks the lines reach stderr."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from speculative_infra.benchmark.config import LoadConfig
from speculative_infra.benchmark.load import LevelProgress
from speculative_infra.benchmark.results import LevelResult
from speculative_infra.cli import bench_progress
from speculative_infra.cli.bench_progress import ProgressBar, format_duration, time_left
from speculative_infra.cli.main import main

from .stand_ins.server import ServerProcess

# Two closed-loop levels of 2 warm-up + 8 measured requests each.
LOAD = LoadConfig(concurrency_levels=(1, 4), requests_per_level=8, warmup_requests=2)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _progress(
    elapsed: float,
    measured: int,
    warmup: int = 2,
    concurrency: int = 1,
    failed: int = 0,
    rate: float | None = None,
) -> LevelProgress:
    return LevelProgress(
        concurrency=concurrency,
        warmup_total=2,
        warmup_done=warmup,
        measured_total=8,
        measured_done=measured,
        measured_failed=failed,
        elapsed_s=elapsed,
        request_rate=rate,
    )


def _lines(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if line]


def test_a_line_every_interval_with_the_level_the_requests_and_the_time_left():
    out = io.StringIO()
    bar = ProgressBar(out, True, LOAD, interval_s=10)
    bar.update(_progress(4.0, 0))  # before the first interval: nothing
    bar.update(_progress(9.99, 2))  # boundary: still nothing
    bar.update(_progress(10.0, 3))  # 5 of 10 requests in 10 s: 2 s each
    bar.update(_progress(15.0, 5))  # within the next interval: nothing
    # This level: 5 requests left x 2 s. The next (C=4): 10 requests x 2 s per slot / 4 slots.
    assert _lines(out) == [
        "level 1 of 2 (C=1): 3/8 requests done, 0 failed; about 10 s left in this level, 15 s in all"
    ]
    bar.update(_progress(20.0, 8, failed=1))
    assert _lines(out)[-1].startswith("level 1 of 2 (C=1): 8/8 requests done, 1 failed; about 0 s left")


def test_warm_up_and_an_unknown_pace_are_said():
    out = io.StringIO()
    ProgressBar(out, True, LOAD, interval_s=0).update(_progress(3.0, 0, warmup=0))
    assert _lines(out) == [
        "level 1 of 2 (C=1): 0/8 requests done, 0 failed (warm-up 0/2); time left not known yet"
    ]


def test_the_next_level_counts_from_its_own_start():
    out = io.StringIO()
    bar = ProgressBar(out, True, LOAD, interval_s=10)
    bar.update(_progress(20.0, 8))
    level = LevelResult(
        concurrency=1,
        completed=8,
        failed=0,
        complete=True,
        stop_reason="complete",
        warmup_requests=2,
        planned_requests=8,
        cancelled=0,
    )
    bar.level_done(level)
    bar.update(_progress(5.0, 2, concurrency=4))  # 5 s into level 2: not yet
    bar.update(_progress(12.0, 6, concurrency=4))  # 8 of 10 in 12 s: 2 left at 1.5 s
    last = _lines(out)[-1]
    # The last level: no "in all".
    assert last == "level 2 of 2 (C=4): 6/8 requests done, 0 failed; about 3 s left in this level"


def test_the_time_budget_caps_the_estimate():
    budget = LoadConfig(concurrency_levels=(1, 4), requests_per_level=8, warmup_requests=2, time_budget_s=12)
    out = io.StringIO()
    ProgressBar(out, True, budget, interval_s=10).update(_progress(10.0, 3))
    assert _lines(out)[-1].endswith("about 10 s left in this level, 2 s in all (the time budget)")


def test_open_loop_levels_take_their_arrivals():
    load = LoadConfig(request_rates=(1.0, 2.0), requests_per_level=8, warmup_requests=2)
    left = time_left(_progress(5.0, 3, rate=1.0, concurrency=0), load.levels[1:], load, 0.0)
    assert left is not None
    assert left.level_s == pytest.approx(5.0)  # 5 left at 1 s each
    assert left.sweep_s == pytest.approx(5.0 + 10 / 2.0)  # the next level's 10 arrivals at 2/s


def test_a_rate_sweep_numbers_its_levels_without_a_total():
    out = io.StringIO()
    ProgressBar(out, True, LOAD, levels_known=False, interval_s=0).update(_progress(10.0, 3, rate=2.0))
    assert _lines(out) == ["level 1 (R=2): 3/8 requests done, 0 failed; about 10 s left in this level"]


def test_a_terminal_gets_the_bar_and_quiet_gets_nothing():
    terminal = Terminal()
    ProgressBar(terminal, True, LOAD, interval_s=0).update(_progress(10.0, 3))
    assert terminal.getvalue().startswith("\r") and "level 1 of 2" not in terminal.getvalue()
    quiet = io.StringIO()
    ProgressBar(quiet, False, LOAD, interval_s=0).update(_progress(10.0, 3))
    assert quiet.getvalue() == ""


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (59.4, "59 s"),
        (59.6, "1 min 00 s"),
        (61, "1 min 01 s"),
        (3599, "59 min 59 s"),
        (3600, "1 h 00 min"),
        (7325, "2 h 02 min"),
    ],
)
def test_durations(seconds, text):
    assert format_duration(seconds) == text


def test_the_lines_reach_stderr_when_it_is_not_a_terminal(
    stand_in: ServerProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_progress, "PLAIN_INTERVAL_S", 0.0)  # a line at every report, no waiting
    argv = ["bench", "--url", f"{stand_in.base_url}/steady", "--concurrency", "1,2"]
    argv += ["--input-tokens", "40", "--output-tokens", "20", "--requests-per-level", "4", "--warmup", "1"]
    assert main([*argv, "--output", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err.splitlines()
    first = [line for line in err if line.startswith("level 1 of 2 (C=1): ")]
    second = [line for line in err if line.startswith("level 2 of 2 (C=2): ")]
    assert first and second
    assert re.fullmatch(
        r"level 1 of 2 \(C=1\): 4/4 requests done, 0 failed; about 0 s left in this level, .+ in all",
        first[-1],
    )
    assert "in all" not in second[-1]  # the last level
    assert any(line.startswith("C=1") and " ok 4 failed 0 " in line for line in err)  # the summary line stays
