"""The Markdown summary of results files: tables per level. No matplotlib, so the post-deploy Lambda
can write it too (report.py adds the plots)."""

from __future__ import annotations

from collections.abc import Sequence

from .config import MAX_LABEL_CHARS
from .results import BenchmarkResult

# What one report draws (docs/security.md, "Hostile input"): a report of more takes minutes of
# matplotlib, and nobody reads it. A sweep has tens of levels (a rate sweep at most 24 probes).
MAX_REPORT_RESULTS = 50
"""Results files compared in one report: plot colours repeat after 10, a legend of 50 is unreadable."""
MAX_REPORT_LEVELS = 10_000
"""Levels over all the files: each is a point in every plot and a row of a table."""


PLOT_RANGE = (1e-6, 1e12)
"""Magnitudes a plot draws (0 too): ms, tok/s, req/s and $ of a real run lie far inside; near the
float limit (1e308) or among denormals (5e-324) the plotting libraries' tick arithmetic overflows."""


def plottable(value: float | None) -> bool:
    """Whether a results value (a hostile file may hold anything JSON allows) is drawn in a plot."""
    if value is None or isinstance(value, bool):
        return False
    low, high = PLOT_RANGE
    return value == 0 or low <= abs(value) <= high


def result_problem(result: BenchmarkResult) -> str | None:
    """Why ``report`` refuses to draw this results file (None: it does not)."""
    if len(result.label) > MAX_LABEL_CHARS:
        return (
            f"its label has {len(result.label)} characters; a report names configurations with at most "
            f"{MAX_LABEL_CHARS} (give bench --label a shorter name)"
        )
    if len(result.levels) > MAX_REPORT_LEVELS:
        return f"it has {len(result.levels)} levels; a report draws at most {MAX_REPORT_LEVELS}"
    return None


def results_problem(results: Sequence[BenchmarkResult]) -> str | None:
    """Why ``report`` refuses to draw these files together (None: it does not)."""
    if len(results) > MAX_REPORT_RESULTS:
        return f"{len(results)} results files; a report compares at most {MAX_REPORT_RESULTS}"
    total = sum(len(r.levels) for r in results)
    if total > MAX_REPORT_LEVELS:
        return f"the files hold {total} levels together; a report draws at most {MAX_REPORT_LEVELS}"
    return None


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _table(result: BenchmarkResult) -> list[str]:
    lines = [
        "| C | ok / failed | req/s | out tok/s | tok/s per user | TTFT p50 / p99 (ms) "
        "| TPOT p50 / p99 (ms) | ITL p50 (ms) | E2E p50 / p99 (s) | tok/chunk | lag p99 (ms) | $/M out |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    goodput = any(lv.good_requests is not None for lv in result.levels)
    if goodput:
        lines[0] += " good / goodput req/s |"
        lines[1] += "---|"
    for lv in result.levels:
        e2e_med = None if lv.median_e2el_ms is None else lv.median_e2el_ms / 1000
        e2e_p99 = None if lv.p99_e2el_ms is None else lv.p99_e2el_ms / 1000
        partial = "" if lv.complete else f" ({lv.stop_reason})"
        name = f"{lv.request_rate:g}/s" if lv.request_rate is not None else str(lv.concurrency)
        lines.append(
            f"| {name}{partial} | {lv.completed} / {lv.failed} | {_fmt(lv.request_throughput, 2)} "
            f"| {_fmt(lv.output_throughput)} | {_fmt(lv.output_tokens_per_second_per_user)} "
            f"| {_fmt(lv.median_ttft_ms)} / {_fmt(lv.p99_ttft_ms)} "
            f"| {_fmt(lv.median_tpot_ms, 2)} / {_fmt(lv.p99_tpot_ms, 2)} | {_fmt(lv.median_itl_ms, 2)} "
            f"| {_fmt(e2e_med, 2)} / {_fmt(e2e_p99, 2)} | {_fmt(lv.mean_tokens_per_chunk, 2)} "
            f"| {_fmt(lv.p99_client_lag_ms, 2)} | {_fmt(lv.cost_per_million_output_tokens, 3)} |"
            + (f" {lv.good_requests} / {_fmt(lv.request_goodput, 2)} |" if goodput else "")
        )
    if any(lv.request_rate is not None for lv in result.levels):
        lines[0] = lines[0].replace("| C |", "| rate (req/s) |", 1)
    return lines


def _section(result: BenchmarkResult) -> list[str]:
    w = result.workload
    prefix = f", shared prefix {w.shared_prefix_tokens}" if w.shared_prefix_tokens else ""
    lines = [
        f"## {result.label}",
        "",
        f"- Target: `{result.target_name()}`; started {result.started_at}; status **{result.status}**",
        f"- Workload: {w.input_tokens} input / {w.output_tokens} output tokens{prefix}, seed {w.seed}, "
        f"forced length {'on' if w.force_output_length else 'off'}, temperature "
        f"{'server default' if w.temperature is None else w.temperature}",
        _load_line(result),
    ]
    if w.dataset is not None:
        lines.append(
            f"- Prompts: dataset `{w.dataset.path}` ({w.dataset.format}), output length {w.dataset.output_length}"
        )
    if result.slo is not None:
        objectives = ", ".join(f"{k} <= {v:g}" for k, v in result.slo.given().items())
        lines.append(f"- SLOs: {objectives}")
    if result.rate_sweep is not None:
        found = result.max_sustained_rate
        lines.append(
            "- Rate sweep: highest rate within the SLOs "
            + (f"**{found:g} requests/s**" if found is not None else "none (not even the start rate)")
        )
    if result.cost.price_per_hour is not None:
        lines.append(f"- Price: ${result.cost.price_per_hour:g}/h x {result.cost.instance_count} instance(s)")
    if result.error:
        lines.append(f"- Error: {result.error}")
    lines += ["", *_table(result), ""]
    failures = [
        (
            f"{lv.request_rate:g}/s" if lv.request_rate is not None else f"C={lv.concurrency}",
            cls,
            n,
            lv.failure_examples.get(cls, ""),
        )
        for lv in result.levels
        for cls, n in sorted(lv.failure_classes.items())
    ]
    if failures:
        lines += ["Failures:", ""]
        lines += [f"- {c}: {n} x `{cls}` (e.g. {example})" for c, cls, n, example in failures]
        lines.append("")
    sources = {src for lv in result.levels for src in lv.output_tokens_source}
    if sources - {"usage", "details"}:
        lines += [f"Note: some output token counts are estimates ({', '.join(sorted(sources))}).", ""]
    return lines


def _load_line(result: BenchmarkResult) -> str:
    load = result.load
    if result.rate_sweep is not None or load.request_rates is not None:
        cap = f", at most {load.max_concurrency} open" if load.max_concurrency else ""
        return f"- Load: open loop, burstiness {load.burstiness:g}{cap}, timeout {load.request_timeout_s:g} s"
    return (
        f"- Load: closed loop, ramp-up {load.ramp_up_s:g} s, sustained {'yes' if load.sustain_load else 'no'}, "
        f"timeout {load.request_timeout_s:g} s"
    )


def summary_lines(results: Sequence[BenchmarkResult]) -> list[str]:
    """'# Benchmark report' and one section per results file."""
    lines = ["# Benchmark report", ""]
    for result in results:
        lines += _section(result)
    return lines


def render_markdown(results: Sequence[BenchmarkResult]) -> str:
    return "\n".join(
        [*summary_lines(results), "Metric names follow `vllm bench serve`; see docs/benchmarking.md.", ""]
    )
