"""A level shared by worker processes: the split, the merge, and a real run against the stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from speculative_infra.benchmark.config import Level, LoadConfig
from speculative_infra.benchmark.load import LevelRun, StopReason
from speculative_infra.benchmark.workers import merge, shares, split
from speculative_infra.cli.main import main

from .stand_ins.server import ServerProcess


def test_split_is_even_and_complete() -> None:
    assert split(10, 3) == [4, 3, 3] and split(2, 4) == [1, 1, 0, 0] and split(0, 2) == [0, 0]


def test_closed_loop_shares_split_slots_requests_and_prompt_indices() -> None:
    load = LoadConfig(requests_per_level=10, warmup_requests=5)
    plan = shares(Level(5), load, 2)
    assert [s.concurrency for s, _, _ in plan] == [3, 2]
    assert [(lo.requests_per_level, lo.warmup_requests) for _, lo, _ in plan] == [(5, 3), (5, 2)]
    assert [offsets for _, _, offsets in plan] == [(0, 0), (3, 5)]  # prompts as one process numbers them


def test_open_loop_shares_split_the_rate_and_the_cap() -> None:
    load = LoadConfig(request_rates=(9.0,), max_concurrency=4, requests_per_level=9, warmup_requests=3)
    plan = shares(load.levels[0], load, 3)
    assert [(s.request_rate, s.concurrency) for s, _, _ in plan] == [(3.0, 2), (3.0, 1), (3.0, 1)]
    assert sum(lo.requests_per_level or 0 for _, lo, _ in plan) == 9


def test_more_workers_than_slots_leaves_the_extra_ones_out() -> None:
    plan = shares(Level(2), LoadConfig(requests_per_level=8, warmup_requests=0), 4)
    assert [s.concurrency for s, _, _ in plan] == [1, 1]


def test_merge_keeps_every_outcome_and_the_worst_stop() -> None:
    a = LevelRun(Level(1), 10.0, 12.0, 1, 4, [], StopReason.COMPLETE, None)
    b = LevelRun(Level(1), 9.5, 13.0, 1, 4, [], StopReason.TIME_BUDGET, "time budget reached")
    merged = merge(Level(2), [a, b])
    assert (merged.started_at, merged.ended_at, merged.planned_measured) == (9.5, 13.0, 8)
    assert merged.stop_reason is StopReason.TIME_BUDGET and merged.stop_message == "time budget reached"


@pytest.mark.parametrize(
    "load",
    [
        ["--concurrency", "4", "--requests-per-level", "8", "--warmup", "2"],
        ["--request-rate", "20", "--requests-per-level", "8", "--warmup", "2"],
    ],
)
def test_two_workers_measure_one_level(stand_in: ServerProcess, tmp_path: Path, load: list[str]) -> None:
    out = tmp_path / "r.json"
    stand_in.truth(clear=True)
    argv = ["bench", "--url", f"{stand_in.base_url}/spec", "--workers", "2", "--input-tokens", "30"]
    assert main([*argv, "--output-tokens", "8", *load, "--quiet", "--output", str(out)]) == 0
    result = json.loads(out.read_text())
    [level] = result["levels"]
    assert level["completed"] == 8 and level["failed"] == 0 and result["client"]["workers"] == "2"
    records = [json.loads(line) for line in (tmp_path / "r.requests.jsonl").read_text().splitlines()]
    measured = [r for r in records if r["phase"] == "measured"]
    assert len({r["request_id"] for r in measured}) == 8
    assert {r["request_id"].split("-")[1] for r in measured} == {"w0", "w1"}  # both processes sent
    assert sorted(r["index"] for r in measured) == list(range(8))  # numbered as one process would
