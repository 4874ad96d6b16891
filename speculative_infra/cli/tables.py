"""Plain-text tables for terminal output (no dependency, wraps long cells)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    wrapped = [[textwrap.wrap(c, max_width) or [""] for c in row] for row in cells]
    widths = [max(len(line) for row in wrapped for line in row[i]) for i in range(len(headers))]
    out: list[str] = []
    for index, row in enumerate(wrapped):
        height = max(len(c) for c in row)
        for k in range(height):
            parts = [(c[k] if k < len(c) else "").ljust(w) for c, w in zip(row, widths, strict=True)]
            out.append("  ".join(parts).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)
