"""Deployment gates: the measured figures a deployment must reach (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .events import Gates
from .levels import level_load, level_name


def gate_failures(gates: Gates, levels: Sequence[dict[str, Any]]) -> list[str]:
    """Messages for every gate missed, evaluated at the highest level measured (concurrency or rate)."""
    measured = [lv for lv in levels if lv.get("completed")]
    if not measured:
        if gates.min_output_throughput is not None or gates.max_p99_ttft_ms is not None:
            return ["no level completed a request, so no gate could be evaluated"]
        return []
    top = max(measured, key=level_load)
    failures = []
    throughput = top.get("output_throughput")
    if gates.min_output_throughput is not None and (throughput or 0.0) < gates.min_output_throughput:
        failures.append(
            f"output throughput at {level_name(top)} was {throughput or 0:.1f} tok/s; "
            f"required >= {gates.min_output_throughput:g}"
        )
    ttft = top.get("p99_ttft_ms")
    if gates.max_p99_ttft_ms is not None and (ttft is None or ttft > gates.max_p99_ttft_ms):
        failures.append(
            f"p99 TTFT at {level_name(top)} was "
            f"{'unknown' if ttft is None else f'{ttft:.0f} ms'}; required <= {gates.max_p99_ttft_ms:g} ms"
        )
    return failures
