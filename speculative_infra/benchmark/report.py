"""PNG plots and a Markdown summary of one or more results files (to compare configurations).

Uses matplotlib's object API with the Agg canvas: no pyplot global state, no display needed.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..safe_files import write_bytes, write_text
from .config import MAX_CONCURRENCY
from .report_markdown import plottable, summary_lines
from .results import BenchmarkResult, LevelResult

_Getter = Callable[[LevelResult], float | None]


@dataclass(frozen=True, slots=True)
class ReportFiles:
    markdown: Path
    images: tuple[Path, ...]


def _series(result: BenchmarkResult, x: _Getter, y: _Getter) -> tuple[list[float], list[float], list[int]]:
    xs: list[float] = []
    ys: list[float] = []
    cs: list[int] = []
    for level in result.levels:
        if level.request_rate is not None:
            continue  # open-loop levels have their own plot, against the rate
        xv, yv = x(level), y(level)
        if plottable(xv) and plottable(yv) and _drawn_concurrency(level):
            assert xv is not None and yv is not None
            xs.append(float(xv))
            ys.append(float(yv))
            cs.append(level.concurrency)
    return xs, ys, cs


def _drawn_concurrency(level: LevelResult) -> bool:
    # On a log axis: a positive count (a hostile file may say -7e12 or 1e30).
    return 0 < level.concurrency <= MAX_CONCURRENCY


def _concurrency(level: LevelResult) -> float:
    return float(level.concurrency)


# Above this many levels a tick label per level (or a C= note per point) is unreadable and costs
# matplotlib seconds per plot: the axis then gets its own ticks.
_LABELLED_POINTS = 16


def _concurrency_axis(ax: Axes, results: Sequence[BenchmarkResult]) -> None:
    levels = sorted(
        {
            lv.concurrency
            for r in results
            for lv in r.levels
            if lv.request_rate is None and _drawn_concurrency(lv)
        }
    )
    ax.set_xscale("log", base=2)
    if levels and len(levels) <= _LABELLED_POINTS and levels[0] > 0:
        ax.set_xticks(levels)
        ax.set_xticklabels([str(c) for c in levels])
    ax.set_xlabel("concurrency")
    ax.grid(True, alpha=0.3)


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    # Into memory first: matplotlib would open the path itself, following a symbolic link or
    # blocking on a FIFO; write_bytes replaces only a regular file.
    image = io.BytesIO()
    fig.savefig(image, dpi=110, format="png")
    write_bytes(path, image.getvalue(), what="plot")
    return path


def _plot_latency(results: Sequence[BenchmarkResult], path: Path) -> Path:
    fig = Figure(figsize=(11, 4.2))
    ttft_ax, e2e_ax = fig.subplots(1, 2)
    for i, result in enumerate(results):
        color = f"C{i % 10}"  # one colour per configuration: solid median, dashed p99
        for getter, style, name in (
            (lambda lv: lv.median_ttft_ms, "-o", "median"),
            (lambda lv: lv.p99_ttft_ms, "--x", "p99"),
        ):
            xs, ys, _ = _series(result, _concurrency, getter)
            ttft_ax.plot(xs, ys, style, color=color, label=f"{result.label} {name}")
        for getter, style, name in (
            (lambda lv: lv.median_e2el_ms, "-o", "median"),
            (lambda lv: lv.p99_e2el_ms, "--x", "p99"),
        ):
            xs, ys, _ = _series(result, _concurrency, getter)
            e2e_ax.plot(xs, [y / 1000.0 for y in ys], style, color=color, label=f"{result.label} {name}")
    ttft_ax.set_title("Time to first token")
    ttft_ax.set_ylabel("TTFT (ms)")
    e2e_ax.set_title("End-to-end latency")
    e2e_ax.set_ylabel("E2E latency (s)")
    for ax in (ttft_ax, e2e_ax):
        _concurrency_axis(ax, results)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_simple(
    results: Sequence[BenchmarkResult],
    path: Path,
    getter: _Getter,
    title: str,
    ylabel: str,
    log_y: bool = False,
) -> Path:
    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    drawn = 0
    for result in results:
        xs, ys, _ = _series(result, _concurrency, getter)
        if log_y:  # a log axis shows positive values only
            xs, ys = [x for x, y in zip(xs, ys, strict=True) if y > 0], [y for y in ys if y > 0]
        drawn += len(ys)
        ax.plot(xs, ys, "-o", label=result.label)
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    if log_y and drawn:
        ax.set_yscale("log")
    _concurrency_axis(ax, results)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_tradeoff(results: Sequence[BenchmarkResult], path: Path) -> Path:
    fig = Figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    for result in results:
        xs, ys, cs = _series(
            result, lambda lv: lv.output_tokens_per_second_per_user, lambda lv: lv.output_throughput
        )
        ax.plot(xs, ys, "-o", label=result.label)
        for x, y, c in zip(xs, ys, cs, strict=True) if len(xs) <= _LABELLED_POINTS else ():
            ax.annotate(f"C={c}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_title("Aggregate vs per-user output rate")
    ax.set_xlabel("per-user output tok/s")
    ax.set_ylabel("aggregate output tok/s")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def _plot_rates(results: Sequence[BenchmarkResult], path: Path) -> Path:
    """Open-loop levels: throughput and goodput, and TTFT, against the request rate (a rate sweep's
    answer marked)."""
    fig = Figure(figsize=(11, 4.2))
    rate_ax, ttft_ax = fig.subplots(1, 2)
    for i, result in enumerate(results):
        color = f"C{i % 10}"
        levels = sorted(
            (lv for lv in result.levels if lv.request_rate is not None), key=lambda lv: lv.request_rate or 0
        )
        for ax, getter, style, label in (
            (rate_ax, _output_throughput, "-o", "output tok/s"),
            (rate_ax, _output_goodput, "--x", "goodput tok/s"),
            (ttft_ax, _median_ttft, "-o", "median"),
            (ttft_ax, _p99_ttft, "--x", "p99"),
        ):
            points = [
                (lv.request_rate or 0.0, v)
                for lv in levels
                if plottable(lv.request_rate) and plottable(v := getter(lv)) and v is not None
            ]
            if points:
                ax.plot(
                    [x for x, _ in points],
                    [y for _, y in points],
                    style,
                    color=color,
                    label=f"{result.label} {label}",
                )
        if result.max_sustained_rate is not None and plottable(result.max_sustained_rate):
            for ax in (rate_ax, ttft_ax):
                ax.axvline(result.max_sustained_rate, color=color, linestyle=":", alpha=0.7)
    rate_ax.set_title("Throughput and goodput (dotted: highest rate within the SLOs)")
    rate_ax.set_ylabel("output tok/s")
    ttft_ax.set_title("Time to first token")
    ttft_ax.set_ylabel("TTFT (ms)")
    for ax in (rate_ax, ttft_ax):
        ax.set_xlabel("request rate (req/s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _output_throughput(level: LevelResult) -> float | None:
    return level.output_throughput


def _output_goodput(level: LevelResult) -> float | None:
    return level.output_goodput


def _median_ttft(level: LevelResult) -> float | None:
    return level.median_ttft_ms


def _p99_ttft(level: LevelResult) -> float | None:
    return level.p99_ttft_ms


def render_report(results: Sequence[BenchmarkResult], out_dir: Path) -> ReportFiles:
    if not results:
        raise ValueError("no results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    closed = any(lv.request_rate is None for r in results for lv in r.levels)
    images: list[Path] = []
    if closed:
        images += [
            _plot_latency(results, out_dir / "latency_vs_concurrency.png"),
            _plot_simple(
                results,
                out_dir / "per_user_throughput_vs_concurrency.png",
                lambda lv: lv.output_tokens_per_second_per_user,
                "Output rate per user",
                "tok/s per user",
            ),
            _plot_tradeoff(results, out_dir / "throughput_vs_per_user.png"),
        ]
    if any(lv.request_rate is not None for r in results for lv in r.levels):
        images.append(_plot_rates(results, out_dir / "throughput_and_goodput_vs_rate.png"))
    has_cost = closed and any(
        lv.cost_per_million_output_tokens is not None
        for r in results
        for lv in r.levels
        if lv.request_rate is None
    )
    if has_cost:
        images.append(
            _plot_simple(
                results,
                out_dir / "cost_vs_concurrency.png",
                lambda lv: lv.cost_per_million_output_tokens,
                "Cost per million output tokens",
                "$ / M output tokens (log scale)",
                log_y=True,  # cost roughly halves per doubling of concurrency until saturation
            )
        )
    lines = summary_lines(results)
    lines += ["## Plots", ""]
    lines += [f"![{image.stem}]({image.name})" for image in images]
    if closed and not has_cost:
        lines += ["", "No price was given (`--price-per-hour`), so there is no cost plot."]
    lines += [
        "",
        "Metric names follow `vllm bench serve`; see docs/benchmarking.md for definitions.",
        "",
    ]
    markdown = out_dir / "report.md"
    write_text(markdown, "\n".join(lines), what="report")
    return ReportFiles(markdown=markdown, images=tuple(images))
