"""The dependency-free SVG charts: valid XML, points placed on the right scale."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from speculative_infra.benchmark.report_svg import HEIGHT, LEFT, TOP, line_chart

SVG = "{http://www.w3.org/2000/svg}"


def test_chart_is_valid_svg_with_one_point_per_value() -> None:
    svg = line_chart(
        "T <&>", "x", "y", [("a", [(1, 10.0), (8, 40.0), (32, 80.0)]), ("empty", [])], log_x=True
    )
    root = ET.fromstring(svg)
    circles = root.findall(f"{SVG}circle")
    assert len(circles) == 3
    xs = [float(c.get("cx", "0")) for c in circles]
    ys = [float(c.get("cy", "0")) for c in circles]
    assert xs[0] == LEFT and xs == sorted(xs)  # the lowest concurrency sits on the left edge
    assert abs((xs[1] - xs[0]) / (xs[2] - xs[0]) - 3 / 5) < 1e-6  # log2(8)/log2(32): a log axis
    assert ys[2] == TOP and ys[0] > ys[1] > ys[2]  # higher values higher up, the top value on the frame
    assert "T &lt;&amp;&gt;" in svg


def test_chart_without_data() -> None:
    root = ET.fromstring(line_chart("T", "x", "y", [("a", [])]))
    assert root.findall(f"{SVG}circle") == []
    assert float(root.get("height", "0")) == HEIGHT
