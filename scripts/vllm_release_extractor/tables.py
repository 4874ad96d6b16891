"""The summary tables of docs/vllm-releases.md, from the written records."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .constants import version_key


def load_records(out_dir: Path) -> list[dict[str, Any]]:
    records = [json.loads(p.read_text(encoding="utf-8")) for p in out_dir.glob("*.json")]
    return sorted(records, key=lambda r: version_key(r["vllm_version"]))


def long_option_count(flags: Iterable[Mapping[str, Any]]) -> int:
    """``vllm serve`` long options, not counting ``--no-``/``--disable-`` negations or ``--help``."""
    return len({o for f in flags for o in [f["name"], *f["aliases"]] if o.startswith("--")})


def release_table(records: Iterable[Mapping[str, Any]]) -> str:
    """Markdown table: one row per release with flag counts and speculative facts."""
    lines = [
        "| vLLM | long options | flag entries | boolean | negatable | choices | value type unknown | "
        "spec fields | methods | refused methods | EAGLE3 allow-list | unknown spec keys | front-end args module |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|",
    ]
    for rec in records:
        flags = rec["serve_flags"]
        spec = rec["speculative"]
        allow = spec["eagle3_target_allowlist"]
        cells = [
            rec["vllm_version"],
            str(long_option_count(flags)),
            str(len(flags)),
            str(sum(f["boolean"] for f in flags)),
            str(sum(f["negatable"] for f in flags)),
            str(sum(f["choices"] is not None for f in flags)),
            str(sum(f["value_type"] == "unknown" for f in flags)),
            str(len(spec["fields"])),
            str(len(spec["methods"])),
            ", ".join(spec["refused_methods"]) or "-",
            "none" if allow is None else ", ".join(allow),
            spec["unknown_keys"],
            f"`{rec['source'].get('frontend_module', '?')}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def methods_table(records: Iterable[Mapping[str, Any]]) -> str:
    """Markdown list of the speculative methods each release adds or removes."""
    lines = []
    prev: set[str] | None = None
    for rec in records:
        methods = set(rec["speculative"]["methods"])
        if prev is None:
            lines.append(f"- {rec['vllm_version']}: {', '.join(sorted(methods))}")
        else:
            added, removed = sorted(methods - prev), sorted(prev - methods)
            if added or removed:
                parts = []
                if added:
                    parts.append("adds " + ", ".join(added))
                if removed:
                    parts.append("removes " + ", ".join(removed))
                lines.append(f"- {rec['vllm_version']}: {'; '.join(parts)}")
        prev = methods
    return "\n".join(lines)
