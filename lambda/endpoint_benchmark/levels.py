"""How a results level is named and ordered: by concurrency (closed loop) or request rate (open loop)."""

from __future__ import annotations

from typing import Any


def level_load(level: dict[str, Any]) -> float:
    """What "higher" means for a level: its request rate in open loop, else its concurrency."""
    rate = level.get("request_rate")
    return float(rate) if rate is not None else float(level["concurrency"])


def level_name(level: dict[str, Any]) -> str:
    rate = level.get("request_rate")
    return f"{rate:g} requests/s" if rate is not None else f"concurrency {level['concurrency']}"


def level_key(level: dict[str, Any]) -> str:
    """Short name for files and metric dimensions: ``c32`` or ``r2.5``."""
    rate = level.get("request_rate")
    return f"r{rate:g}" if rate is not None else f"c{level['concurrency']}"
