"""Markdown and SVG of a distributed load test's merged result (what `report` and the merge write)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..report_svg import line_chart


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return lines


def render_load_test_markdown(result: Mapping[str, Any]) -> str:
    workers = result["workers"]
    totals = result["totals"]
    accuracy = result["sketch"]["relative_accuracy"]
    lines = [
        "# Distributed load test",
        "",
        f"Started {result['started_at']}; {workers['waves']} waves x {workers['per_wave']} workers; "
        f"{workers['reported']} of {workers['expected']} worker runs reported; status **{result['status']}**.",
        "",
        f"{totals['requests']} requests: {totals['ok']} ok, {totals['failed']} failed "
        f"({totals['throttled']} throttled), {totals['cancelled']} cancelled. Percentiles come from merged "
        f"DDSketches (each within {accuracy:.0%} of the exact value at its rank); counts, throughput and "
        "goodput from the per-request records.",
        "",
        "## Steps",
        "",
        *_table(
            ["step", "load", "requests", "ok", "failed", "req/s", "output tok/s", "goodput req/s",
             "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "late"],
            [
                [s["step"], s["description"], s["requests"], s["ok"], s["failed"], s["request_rate"],
                 s["output_throughput"], s["request_goodput"], s["ttft_ms"]["p50"], s["ttft_ms"]["p99"],
                 s["tpot_ms"]["p50"], s["tpot_ms"]["p99"], s["late_requests"]]
                for s in result["steps"]
            ],
        ),
    ]  # fmt: skip
    scaling = result.get("scaling")
    if scaling:
        lines += ["", "## Scaling", ""]
        if scaling.get("error"):
            lines.append(f"Endpoint metrics unavailable: {scaling['error']}")
        lines += _table(
            ["step", "load", "capacity before", "first scale-out after s", "desired", "in service after s",
             "SLO breach minutes", "requests missing SLO"],
            [
                [v["step"], v["description"], v["capacity_before"], v["first_scale_out_after_s"],
                 v["desired_capacity"], v["capacity_in_service_after_s"], v["slo_breach_minutes"],
                 v["requests_missing_slo"]]
                for v in scaling.get("steps", [])
            ],
        )  # fmt: skip
    failed = workers["failed"]
    if failed:
        lines += ["", "## Workers that did not report", ""]
        lines += [f"- wave {f['wave']}, worker {f['worker']}: {f['error']}" for f in failed]
    bottleneck = [m for m in result["timeline"] if m["client_bottleneck"]]
    lines += ["", "## Client-limited minutes", ""]
    if bottleneck:
        lines += [f"- minute {m['minute']}: " + "; ".join(m["client_reasons"]) for m in bottleneck]
    else:
        lines.append("None: the clients kept to the schedule in every minute.")
    lines += [
        "",
        "## Timeline",
        "",
        *_table(
            ["minute", "req/s", "completed", "errors", "throttles", "output tok/s", "TTFT p50", "TTFT p99",
             "TPOT p50", "TPOT p99", "capacity"],
            [
                [m["minute"], m["requests_per_s"], m["completed"], m["errors"], m["throttles"],
                 m["output_tokens_per_s"], m["ttft_p50_ms"], m["ttft_p99_ms"], m["tpot_p50_ms"],
                 m["tpot_p99_ms"], m.get("capacity")]
                for m in result["timeline"]
            ],
        ),
        "",
    ]  # fmt: skip
    return "\n".join(lines)


def load_test_charts(result: Mapping[str, Any]) -> dict[str, str]:
    """File name -> SVG: load and throughput, TTFT, TPOT and capacity per minute."""
    timeline = result["timeline"]

    def series(key: str) -> list[tuple[float, float]]:
        return [(float(m["minute"]), float(m[key])) for m in timeline if m.get(key) is not None]

    charts = {
        "load-rate.svg": line_chart(
            "Load and throughput per minute",
            "minute",
            "per second",
            [
                ("requests/s", series("requests_per_s")),
                ("output tokens/s / 100", _scaled(series("output_tokens_per_s"), 0.01)),
            ],
        ),
        "load-ttft.svg": line_chart(
            "TTFT per minute",
            "minute",
            "ms",
            [("p50", series("ttft_p50_ms")), ("p99", series("ttft_p99_ms"))],
        ),
        "load-tpot.svg": line_chart(
            "TPOT per minute",
            "minute",
            "ms",
            [("p50", series("tpot_p50_ms")), ("p99", series("tpot_p99_ms"))],
        ),
    }
    if any(m.get("capacity") is not None for m in timeline):
        charts["load-capacity.svg"] = line_chart(
            "Capacity in service per minute",
            "minute",
            "instances or copies",
            [("in service", series("capacity"))],
        )
    return charts


def _scaled(points: list[tuple[float, float]], factor: float) -> list[tuple[float, float]]:
    return [(x, y * factor) for x, y in points]
