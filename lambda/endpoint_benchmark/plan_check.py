"""The planner's prediction (made at synth) beside what the benchmark measured: how far the plan was off."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .levels import level_key, level_name

# Figures compared, in the benchmark's own names (results.json levels); higher is better for the first
# two, lower for the latencies and the cost.
COMPARED = (
    "output_throughput",
    "output_tokens_per_second_per_user",
    "median_ttft_ms",
    "median_tpot_ms",
    "median_e2el_ms",
    "cost_per_million_output_tokens",
)


def predicted_for(prediction: dict[str, Any] | None, level: dict[str, Any]) -> dict[str, Any] | None:
    """The predicted level with the same concurrency (or request rate) as a measured one."""
    if not prediction:
        return None
    key = level_key(level)
    for candidate in prediction.get("levels") or []:
        if isinstance(candidate, dict) and _key(candidate) == key:
            return candidate
    return None


def _key(level: dict[str, Any]) -> str | None:
    try:
        return level_key(level)
    except (KeyError, TypeError, ValueError):
        return None


def ratio(measured: Any, predicted: Any) -> float | None:
    """measured / predicted, or None when either is missing or the prediction is not positive."""
    if not isinstance(measured, int | float) or not isinstance(predicted, int | float) or predicted <= 0:
        return None
    return float(measured) / float(predicted)


def comparison(prediction: dict[str, Any] | None, levels: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """Per completed level: predicted, measured and measured / predicted of each compared figure."""
    if not prediction:
        return None
    rows = []
    for level in levels:
        predicted = predicted_for(prediction, level)
        if predicted is None or not level.get("completed"):
            continue
        rows.append(
            {
                "level": level_key(level),
                "bound": predicted.get("bound"),
                "predicted": {name: predicted.get(name) for name in COMPARED},
                "measured": {name: level.get(name) for name in COMPARED},
                "measured_over_predicted": {
                    name: _rounded(ratio(level.get(name), predicted.get(name))) for name in COMPARED
                },
            }
        )
    return {"assumptions": prediction.get("assumptions") or {}, "levels": rows}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def plan_markdown(compared: dict[str, Any] | None, levels: Sequence[dict[str, Any]]) -> str:
    """A report section: one row per level with output tok/s, TTFT and cost, predicted vs measured."""
    if not compared or not compared["levels"]:
        return ""
    by_key = {level_key(level): level for level in levels}
    lines = [
        "## Planned vs measured",
        "",
        "The planner's prediction at synth (`speculative-infra plan predict` gives the same) beside this run.",
        "",
        "| Level | Bound | Output tok/s predicted | measured | measured / predicted | p50 TTFT ms predicted | measured |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in compared["levels"]:
        p, m, r = row["predicted"], row["measured"], row["measured_over_predicted"]
        lines.append(
            f"| {level_name(by_key[row['level']])} | {row['bound'] or ''} | {_cell(p['output_throughput'])} | "
            f"{_cell(m['output_throughput'])} | {_cell(r['output_throughput'], '.2f')} | "
            f"{_cell(p['median_ttft_ms'])} | {_cell(m['median_ttft_ms'])} |"
        )
    acceptance = compared["assumptions"].get("acceptance_length")
    if isinstance(acceptance, dict):
        lines += ["", f"Assumed acceptance length: {acceptance.get('value')} ({acceptance.get('source')})."]
    return "\n".join(lines) + "\n"


def _cell(value: Any, fmt: str = ",.1f") -> str:
    return "" if not isinstance(value, int | float) else format(value, fmt)
