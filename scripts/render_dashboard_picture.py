"""Draw the reference endpoint's dashboard (app.py) as an SVG grid of its widgets, from the synthesized
DashboardBody: docs/constructs/endpoint-dashboard.svg.

python scripts/render_dashboard_picture.py          # rewrite the picture
python scripts/render_dashboard_picture.py --check  # exit 1 if it is stale (used by `make test`)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from generated_page import write_or_check  # noqa: E402

from speculative_infra.constructs.dashboard_body import read_dashboard_body  # noqa: E402

TARGET = ROOT / "docs" / "constructs" / "endpoint-dashboard.svg"
STACK, CELL_W, CELL_H, PAD = "SpeculativeVllmReference", 40, 34, 4
KIND_FILL = {"text": "#f3f4f6", "metric": "#e8f1fb", "alarm": "#fdf0e6"}


def reference_dashboard() -> dict[str, Any]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("example_app", ROOT / "app.py")
    assert spec is not None and spec.loader is not None
    app_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app_module)
    with tempfile.TemporaryDirectory() as out:
        assembly = app_module.build_app(out).synth()
        template = assembly.get_stack_by_name(STACK).template
    (dashboard,) = [r for r in template["Resources"].values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    return read_dashboard_body(dashboard["Properties"]["DashboardBody"])


def _lines(widget: dict[str, Any]) -> tuple[str, list[str]]:
    props = widget.get("properties", {})
    if widget["type"] == "text":
        text = [line.lstrip("# ") for line in props["markdown"].splitlines() if line.strip()]
        return text[0], text[1:]
    if widget["type"] == "alarm":
        return props.get("title", "alarms"), [f"{len(props['alarms'])} alarms"]
    labels = []
    for row in props.get("metrics", []):
        options = row[-1] if isinstance(row[-1], dict) else {}
        if options.get("visible") is False:
            continue
        name = row[1] if len(row) > 1 and not isinstance(row[1], dict) else "expression"
        stat = options.get("stat", "Average")
        axis = " (right)" if options.get("yAxis") == "right" else ""
        labels.append(f"{options.get('label', name)}: {name} {stat}{axis}")
    return props.get("title", ""), labels


def render(body: dict[str, Any]) -> str:
    widgets = body["widgets"]
    height = max(w["y"] + w["height"] for w in widgets)
    width_px, height_px = 24 * CELL_W, height * CELL_H
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width_px}" height="{height_px}" '
        f'viewBox="0 0 {width_px} {height_px}" font-family="sans-serif">',
        f'<rect width="{width_px}" height="{height_px}" fill="white"/>',
    ]
    for widget in widgets:
        x, y = widget["x"] * CELL_W + PAD, widget["y"] * CELL_H + PAD
        w, h = widget["width"] * CELL_W - 2 * PAD, widget["height"] * CELL_H - 2 * PAD
        title, lines = _lines(widget)
        fill = KIND_FILL.get(widget["type"], "#ffffff")
        parts.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4" fill="{fill}" stroke="#9aa5b1"/>'
        )
        parts.append(
            f'<text x="{x + 8}" y="{y + 18}" font-size="13" font-weight="bold">{escape(title)}</text>'
        )
        room = max(0, (h - 28) // 15)
        shown = (
            lines[:room] if len(lines) <= room else [*lines[: room - 1], f"... {len(lines) - room + 1} more"]
        )
        for i, line in enumerate(shown):
            chars = max(10, w // 6)
            text = line if len(line) <= chars else line[: chars - 1] + "…"
            parts.append(
                f'<text x="{x + 8}" y="{y + 36 + i * 15}" font-size="11" fill="#333">{escape(text)}</text>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.exit(write_or_check(TARGET, render(reference_dashboard()), "Draw the reference dashboard as SVG."))
