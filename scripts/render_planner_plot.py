#!/usr/bin/env python3
"""Draw docs/planner-accuracy.svg (predicted vs measured per-request output tokens/s on the held-out runs)
and the accuracy table in docs/planner.md between its accuracy-table markers.

    .venv/bin/python scripts/render_planner_plot.py          # write it
    .venv/bin/python scripts/render_planner_plot.py --check  # exit 1 if it is stale (make test runs this)
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from bench_planner import evaluate

from scripts.planner_runs import absolute_errors, held_out_levels

OUT = Path(__file__).resolve().parent.parent / "docs" / "planner-accuracy.svg"
DOC = OUT.parent / "planner.md"
START, END = "<!-- accuracy-table -->", "<!-- /accuracy-table -->"
SIZE, PAD = 520, 60
COLOURS = {"g5": "#1f77b4", "g6e": "#ff7f0e", "g7e": "#2ca02c"}


def render() -> str:
    rows = evaluate(held_out_levels())
    values = [float(v) for r in rows for v in (r["pred_per_req"], r["meas_per_req"]) if v]  # type: ignore[arg-type]
    low, high = math.log10(min(values) * 0.8), math.log10(max(values) * 1.25)

    def at(v: float) -> float:
        return PAD + (math.log10(v) - low) / (high - low) * (SIZE - 2 * PAD)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE}" height="{SIZE}" font-family="sans-serif" font-size="11">',
        f'<rect width="{SIZE}" height="{SIZE}" fill="white"/>',
        f'<text x="{SIZE / 2}" y="20" text-anchor="middle" font-size="13">Planner on held-out runs: '
        "per-request output tok/s (log scales)</text>",
    ]
    for factor, dash in ((1.0, ""), (1.15, "4,3"), (1 / 1.15, "4,3")):
        a, b = 10**low, 10**high
        parts.append(
            f'<line x1="{at(a):.1f}" y1="{SIZE - at(a * factor):.1f}" x2="{at(b / factor if factor > 1 else b):.1f}" '
            f'y2="{SIZE - at((b / factor if factor > 1 else b) * factor):.1f}" stroke="#999" stroke-dasharray="{dash}"/>'
        )
    for r in rows:
        family = str(r["instance"]).split(".")[1]
        x, y = at(float(r["meas_per_req"])), SIZE - at(float(r["pred_per_req"]))  # type: ignore[arg-type]
        shape = "rect" if r["spec"] == "eagle3" else "circle"
        colour = COLOURS.get(family, "#555")
        if shape == "circle":
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}" fill-opacity="0.7"/>')
        else:
            parts.append(
                f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" fill="none" stroke="{colour}"/>'
            )
    for tick in (10, 20, 50, 100, 200, 500):
        if low <= math.log10(tick) <= high:
            parts.append(f'<text x="{at(tick):.1f}" y="{SIZE - PAD + 16}" text-anchor="middle">{tick}</text>')
            parts.append(f'<text x="{PAD - 6}" y="{SIZE - at(tick) + 4:.1f}" text-anchor="end">{tick}</text>')
    parts.append(f'<text x="{SIZE / 2}" y="{SIZE - 18}" text-anchor="middle">measured</text>')
    parts.append(
        f'<text x="16" y="{SIZE / 2}" text-anchor="middle" transform="rotate(-90 16 {SIZE / 2})">predicted</text>'
    )
    legend = [*(f"{f}: {c}" for f, c in COLOURS.items())]
    for i, (family, colour) in enumerate(COLOURS.items()):
        parts.append(f'<circle cx="{PAD + 10}" cy="{PAD + 10 + 16 * i}" r="4" fill="{colour}"/>')
        parts.append(f'<text x="{PAD + 20}" y="{PAD + 14 + 16 * i}">{escape(family)}</text>')
    parts.append(
        f'<text x="{PAD + 4}" y="{PAD + 14 + 16 * len(legend)}">circle: no speculation; square: EAGLE3; '
        "dashed: +/-15%</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        START,
        "| held-out levels | metric | median abs error | p90 abs error |",
        "|---|---|---|---|",
    ]
    groups: dict[str, list[dict[str, object]]] = {"all": rows}
    for r in rows:
        groups.setdefault(f"{r['model']} {r['spec']}", []).append(r)
    for name, group in groups.items():
        for label, pred, meas in (
            ("per-request output tok/s", "pred_per_req", "meas_per_req"),
            ("aggregate output tok/s", "pred_agg", "meas_agg"),
            ("p50 end-to-end latency", "pred_p50", "meas_p50"),
        ):
            pairs = [(float(r[pred]), float(r[meas])) for r in group if r[pred] is not None and r[meas]]  # type: ignore[arg-type]
            if not pairs:
                continue
            median, p90 = absolute_errors(pairs)
            lines.append(f"| {name} ({len(pairs)}) | {label} | {median:.1%} | {p90:.1%} |")
    return "\n".join([*lines, END])


def with_table(doc: str, rows: list[dict[str, object]]) -> str:
    head, _, rest = doc.partition(START)
    _, _, tail = rest.partition(END) if END in rest else ("", "", rest)
    return head + table(rows) + tail


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = render()
    doc = with_table(DOC.read_text(encoding="utf-8"), evaluate(held_out_levels()))
    if args.check:
        stale = [
            p
            for p, want in ((OUT, text), (DOC, doc))
            if not p.exists() or p.read_text(encoding="utf-8") != want
        ]
        if stale:
            print(f"{', '.join(map(str, stale))} stale: run scripts/render_planner_plot.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    DOC.write_text(doc, encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
