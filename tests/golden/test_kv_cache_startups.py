"""The memory model against real vLLM start-ups (tests/golden/kv_cache_startups.yaml): within 10%."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ModelFacts
from speculative_infra.sizing import MemoryPlan, memory_plan

ROWS: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "kv_cache_startups.yaml").read_text())[
    "rows"
]
TOLERANCE = 0.10
MIN_ROWS = 12  # ratchet: rows are added, never dropped


def plan_for_row(row: dict[str, Any]) -> MemoryPlan:
    return memory_plan(
        model=ModelFacts.model_validate(row["model"]),
        draft=None,
        speculative=None,
        engine=row["engine"],
        gpu_name=row.get("gpu_name", "logged"),
        gpu_memory_mib=(row["gpu_total_gib"] or 0) * 1024,
        tensor_parallel_size=row["tensor_parallel_size"],
        vllm_version=row["vllm_version"],
        overheads=load_catalog().vllm.memory_overheads,
    )


def _ids(check: str) -> list[dict[str, Any]]:
    return [pytest.param(r, id=r["id"]) for r in ROWS if check in r["checks"]]


def test_the_table_keeps_its_rows():
    assert len(ROWS) >= MIN_ROWS
    assert all(r["source"] and r["quote"] and r["checks"] for r in ROWS)


@pytest.mark.parametrize("row", _ids("tokens"))
def test_tokens_from_the_logged_kv_cache(row):
    logged = row["logged"]
    predicted = plan_for_row(row).cache_tokens(logged["available_kv_gib"] * 1024)
    assert predicted == pytest.approx(logged["kv_cache_tokens"], rel=TOLERANCE)


@pytest.mark.parametrize("row", _ids("budget"))
def test_available_kv_cache_from_the_gpu_memory(row):
    predicted_gib = plan_for_row(row).kv_available_mib / 1024
    assert predicted_gib == pytest.approx(row["logged"]["available_kv_gib"], rel=TOLERANCE)


@pytest.mark.parametrize("row", [r for r in _ids("budget") if "weights_gib" in r.values[0]["logged"]])
def test_weights_as_loaded(row):
    assert plan_for_row(row).weights_mib / 1024 == pytest.approx(row["logged"]["weights_gib"], rel=TOLERANCE)


def calibration_table() -> list[tuple[str, str, str, str]]:
    """(row, what, logged, predicted and error) for docs/memory.md."""
    lines = []
    for row in ROWS:
        plan, logged = plan_for_row(row), row["logged"]
        if "tokens" in row["checks"]:
            tokens = plan.cache_tokens(logged["available_kv_gib"] * 1024)
            error = tokens / logged["kv_cache_tokens"] - 1
            lines.append(
                (row["id"], "KV cache tokens", f"{logged['kv_cache_tokens']:,}", f"{tokens:,} ({error:+.1%})")
            )
        if "budget" in row["checks"]:
            gib = plan.kv_available_mib / 1024
            error = gib / logged["available_kv_gib"] - 1
            lines.append(
                (
                    row["id"],
                    "available KV cache",
                    f"{logged['available_kv_gib']} GiB",
                    f"{gib:.2f} GiB ({error:+.1%})",
                )
            )
    return lines
