"""`bench` progress on stderr: a bar redrawn in place on a terminal; elsewhere (a CI log, a pipe) one line
every PLAIN_INTERVAL_S seconds of a level, with the level's number, the requests done and the time left;
and one summary line per level either way.

The time left is an estimate from the level's own pace: this level's remaining requests at the pace so far,
and each later level's requests at the same time per request and slot (closed loop: it grows with
concurrency in practice, so this is the least it will take) or at its arrival rate (open loop), capped by
--time-budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # annotations only: `bench --help` and the other commands start without the engine
    from speculative_infra.benchmark.config import Level, LoadConfig
    from speculative_infra.benchmark.load import LevelProgress
    from speculative_infra.benchmark.results import LevelResult

# Often enough that a CI log shows the run is alive, seldom enough to stay readable (seconds of a level,
# on the engine's clock).
PLAIN_INTERVAL_S = 10.0


@dataclass(frozen=True)
class TimeLeft:
    level_s: float  # the rest of this level
    sweep_s: float  # the rest of the sweep, this level included
    budget_capped: bool  # sweep_s is what --time-budget leaves


def time_left(
    p: LevelProgress, later: Sequence[Level], load: LoadConfig, sweep_elapsed_s: float
) -> TimeLeft | None:
    """The estimate described above; None until a request of this level has ended. `sweep_elapsed_s`: the
    sweep's time before this level (for --time-budget)."""
    done = p.warmup_done + p.measured_done
    if done == 0 or p.elapsed_s <= 0:
        return None
    per_request = p.elapsed_s / done  # wall seconds per request at this level's concurrency or rate
    level_s = per_request * (p.warmup_total + p.measured_total - done)
    rest = 0.0
    for level in later:
        count = load.warmup_for(level) + load.requests_for(level)
        if level.request_rate is not None:
            rest += count / level.request_rate
        else:
            rest += count * per_request * max(1, p.concurrency) / level.concurrency
    sweep_s = level_s + rest
    budget = load.time_budget_s
    if budget is not None and sweep_s > budget - sweep_elapsed_s - p.elapsed_s:
        return TimeLeft(level_s, max(0.0, budget - sweep_elapsed_s - p.elapsed_s), True)
    return TimeLeft(level_s, sweep_s, False)


def format_duration(seconds: float) -> str:
    """12 s, 3 min 05 s, 1 h 05 min."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class ProgressBar:
    """Progress of a sweep on `stream`. `load`: the sweep's load settings (None: no time left is said).
    `levels_known`: False for a rate sweep, whose levels the search chooses as it goes (its lines say
    "level k" without "of n", and the time left of the level only)."""

    def __init__(
        self,
        stream: TextIO,
        enabled: bool,
        load: LoadConfig | None = None,
        *,
        levels_known: bool = True,
        interval_s: float | None = None,  # default: PLAIN_INTERVAL_S
    ) -> None:
        self._stream = stream
        self._enabled = enabled
        self._live = enabled and stream.isatty()
        self._load = load
        self._levels: tuple[Level, ...] = load.levels if load is not None and levels_known else ()
        self._interval_s = PLAIN_INTERVAL_S if interval_s is None else interval_s
        self._last_draw = -1.0
        self._levels_done = 0
        self._sweep_elapsed_s = 0.0  # levels finished so far
        self._level_elapsed_s = 0.0  # the current level, as last reported
        self._last_line_s = 0.0

    def update(self, p: LevelProgress) -> None:
        if not self._enabled:
            return
        self._level_elapsed_s = p.elapsed_s
        if self._live:
            self._draw(p)
        elif p.elapsed_s - self._last_line_s >= self._interval_s:
            self._last_line_s = p.elapsed_s
            self._stream.write(self.plain_line(p) + "\n")
            self._stream.flush()

    def _draw(self, p: LevelProgress) -> None:
        done = p.measured_done == p.measured_total
        if not done and p.elapsed_s - self._last_draw < 0.1:
            return
        self._last_draw = p.elapsed_s
        width = 30
        filled = width * p.measured_done // max(1, p.measured_total)
        stage = "" if p.warmup_done >= p.warmup_total else f" warm-up {p.warmup_done}/{p.warmup_total}"
        self._stream.write(
            f"\r{_progress_name(p)} [{'#' * filled}{'.' * (width - filled)}] "
            f"{p.measured_done}/{p.measured_total} failed {p.measured_failed}{stage} {p.elapsed_s:5.0f}s "
        )
        self._stream.flush()

    def plain_line(self, p: LevelProgress) -> str:
        """One line for a log: 'level 2 of 6 (C=8): 40/64 requests done, 0 failed; about 12 s left in this
        level, 3 min 05 s in all'."""
        levels = self._levels
        number = self._levels_done + 1
        position = f"level {number} of {len(levels)}" if levels else f"level {number}"
        text = (
            f"{position} ({_progress_name(p).strip()}): {p.measured_done}/{p.measured_total} requests done, "
            f"{p.measured_failed} failed"
        )
        if p.warmup_done < p.warmup_total:
            text += f" (warm-up {p.warmup_done}/{p.warmup_total})"
        if self._load is None:
            return text
        left = time_left(p, levels[number:], self._load, self._sweep_elapsed_s)
        if left is None:
            return text + "; time left not known yet"
        text += f"; about {format_duration(left.level_s)} left in this level"
        if len(levels) > number or left.budget_capped:
            budget = " (the time budget)" if left.budget_capped else ""
            text += f", {format_duration(left.sweep_s)} in all{budget}"
        return text

    def level_done(self, level: LevelResult) -> None:
        self._levels_done += 1
        self._sweep_elapsed_s += self._level_elapsed_s
        self._level_elapsed_s = self._last_line_s = 0.0
        if not self._enabled:
            return
        if self._live:
            self._stream.write("\r\x1b[K")
        self._stream.write(level_line(level) + "\n")
        self._stream.flush()


def _number(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _progress_name(p: LevelProgress) -> str:
    return f"C={p.concurrency:<4}" if p.request_rate is None else f"R={p.request_rate:<5g}"


def level_name(level: LevelResult) -> str:
    if level.request_rate is None:
        return f"C={level.concurrency:<4}"
    achieved = _number(level.achieved_request_rate, ".2f")
    return f"R={level.request_rate:g}/s (sent {achieved}/s, late p99 {_number(level.p99_client_lag_ms, '.1f')} ms)"


def level_line(level: LevelResult) -> str:
    cost = level.cost_per_million_output_tokens
    text = (
        f"{level_name(level)} ok {level.completed} failed {level.failed}"
        f" | out {_number(level.output_throughput, ',.1f')} tok/s"
        f" | {_number(level.output_tokens_per_second_per_user, '.1f')} tok/s/user"
        f" | TTFT p50 {_number(level.median_ttft_ms, '.0f')} ms"
        f" | TPOT p50 {_number(level.median_tpot_ms, '.1f')} ms"
        f" | E2E p50 {_number(None if level.median_e2el_ms is None else level.median_e2el_ms / 1000, '.2f')} s"
    )
    if cost is not None:
        text += f" | ${cost:.3f}/M out"
    if level.good_requests is not None:
        text += (
            f" | goodput {_number(level.request_goodput, '.2f')} req/s"
            f" ({level.good_requests}/{level.completed + level.failed} within SLO)"
        )
    if not level.complete:
        text += f" [{level.stop_reason}]"
    return text
