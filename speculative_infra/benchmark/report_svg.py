"""Dependency-free SVG line charts of a sweep, for places without matplotlib (the post-deploy Lambda).

Same four views as report.py's PNGs: latency, per-user rate and cost against concurrency, and
aggregate against per-user output rate. Concurrency axes are logarithmic (levels double).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from .report_markdown import plottable
from .results import BenchmarkResult, LevelResult

WIDTH, HEIGHT = 560, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 50
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")

Getter = Callable[[LevelResult], float | None]
Series = tuple[str, list[tuple[float, float]]]


def _points(result: BenchmarkResult, x: Getter, y: Getter) -> list[tuple[float, float]]:
    points = []
    for level in result.levels:
        xv, yv = x(level), y(level)
        if (
            level.completed
            and plottable(xv)
            and plottable(yv)
            and xv is not None
            and yv is not None
            and xv > 0
        ):
            points.append((float(xv), float(yv)))
    return points


def _scale(values: Sequence[float], log: bool) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    if hi == lo:
        hi, lo = hi + 1, lo - (0 if log else 1)
    return lo, hi


def line_chart(
    title: str, x_label: str, y_label: str, series: Sequence[Series], *, log_x: bool = False
) -> str:
    """An SVG document with one polyline per series; empty series are skipped."""
    drawn = [(name, pts) for name, pts in series if pts]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    if not drawn:
        parts.append(f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle">no data</text></svg>')
        return "\n".join(parts)
    xs = [p[0] for _, pts in drawn for p in pts]
    ys = [p[1] for _, pts in drawn for p in pts] + [0.0]
    x_lo, x_hi = _scale(xs, log_x)
    y_lo, y_hi = _scale(ys, False)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        v = math.log10(x) if log_x else x
        return LEFT + (v - x_lo) / (x_hi - x_lo) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (y - y_lo) / (y_hi - y_lo) * plot_h

    parts.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#444"/>')
    for i in range(5):  # y grid with values
        value = y_lo + (y_hi - y_lo) * i / 4
        y = py(value)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,.4g}</text>')
    for x in sorted(set(xs)):
        parts.append(f'<text x="{px(x):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{x:,.4g}</text>')
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">{escape(x_label)}</text>'
    )
    parts.append(
        f'<text x="16" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 16 {TOP + plot_h / 2})">{escape(y_label)}</text>'
    )
    for index, (name, pts) in enumerate(drawn):
        color = COLORS[index % len(COLORS)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(pts))
        parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        parts += [f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>' for x, y in pts]
        parts.append(f'<text x="{LEFT + 8}" y="{TOP + 14 + 14 * index}" fill="{color}">{escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _load(level: LevelResult) -> float:
    """The x of a level: its request rate (open loop) or its concurrency."""
    return float(level.request_rate) if level.request_rate is not None else float(level.concurrency)


def sweep_charts(results: Sequence[BenchmarkResult]) -> dict[str, str]:
    """File name -> SVG document for the four standard views (against the request rate, on a linear
    axis, when the levels are open-loop)."""
    open_loop = any(lv.request_rate is not None for r in results for lv in r.levels)
    axis = "request rate (req/s)" if open_loop else "concurrency"
    log_x = not open_loop

    def series(y: Getter, x: Getter = _load, suffix: str = "") -> list[Series]:
        return [(f"{r.label}{suffix}", _points(r, x, y)) for r in results]

    charts = {
        "latency_vs_concurrency.svg": line_chart(
            f"Latency vs {axis.split(' (')[0]}",
            axis,
            "ms",
            [
                *series(lambda lv: lv.median_ttft_ms, suffix=" TTFT p50"),
                *series(lambda lv: lv.median_e2el_ms, suffix=" E2E p50"),
            ],
            log_x=log_x,
        ),
        "per_user_throughput_vs_concurrency.svg": line_chart(
            "Output rate per user",
            axis,
            "tok/s per user",
            series(lambda lv: lv.output_tokens_per_second_per_user),
            log_x=log_x,
        ),
        "throughput_vs_per_user.svg": line_chart(
            "Aggregate vs per-user output rate",
            "tok/s per user",
            "aggregate output tok/s",
            series(lambda lv: lv.output_throughput, x=lambda lv: lv.output_tokens_per_second_per_user),
        ),
    }
    if any(lv.cost_per_million_output_tokens is not None for r in results for lv in r.levels):
        charts["cost_vs_concurrency.svg"] = line_chart(
            "Cost per million output tokens",
            axis,
            "$ / M output tokens",
            series(lambda lv: lv.cost_per_million_output_tokens),
            log_x=log_x,
        )
    return charts
