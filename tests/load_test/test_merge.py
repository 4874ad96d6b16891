"""The merge on synthetic worker outputs: exact counts, merged percentiles, failures and slow clients named."""

from __future__ import annotations

import random
from typing import Any

from speculative_infra.benchmark.distributed.merge import merge_outputs
from speculative_infra.benchmark.distributed.sketch import RELATIVE_ACCURACY, LatencySketch
from speculative_infra.benchmark.distributed.worker import SKETCHED, minute_of

from .helpers import http_bench, load_test

CONFIG = load_test(
    [{"duration_s": 120, "request_rate": 2}, {"duration_s": 120, "request_rate": 6}],
    workers=2,
    wave_s=120,
    benchmark=http_bench(slo={"ttft_ms": 100}),
)


def _record(
    i: int, at: float, ttft: float, *, status: str = "ok", late: float = 0.0, failure: str | None = None
):
    ok = status == "ok"
    return {
        "id": f"r{i}",
        "step": 0 if at < 120 else 1,
        "scheduled_s": at,
        "sent_s": at + late / 1000,
        "completed_s": at + 1.0 if status != "cancelled" else at + 0.5,
        "late_ms": late,
        "status": status,
        "failure_class": failure,
        "retries": 0,
        "ttft_ms": ttft if ok else None,
        "tpot_ms": 10.0 if ok else None,
        "e2el_ms": ttft + 90.0 if ok else None,
        "output_tokens": 10 if ok else None,
        "prompt_tokens": 20,
        "meets_slo": (ttft <= 100) if ok else None,
    }


def _document(wave: int, worker: int, records: list[dict[str, Any]], **health: Any) -> dict[str, Any]:
    steps: dict[int, dict[str, LatencySketch]] = {}
    minutes: dict[int, dict[str, LatencySketch]] = {}
    for r in records:
        if r["status"] != "ok":
            continue
        for table, key in ((steps, r["step"]), (minutes, minute_of(r["completed_s"]))):
            sketches = table.setdefault(key, {m: LatencySketch() for m in SKETCHED})
            for metric in SKETCHED:
                sketches[metric].add(r[metric])
    return {
        "wave": wave,
        "worker": worker,
        "status": "ok",
        "error": None,
        "sketches": {
            "steps": {str(k): {m: s.to_dict() for m, s in v.items()} for k, v in steps.items()},
            "minutes": {str(k): {m: s.to_dict() for m, s in v.items()} for k, v in minutes.items()},
        },
        "health": {
            "cpu_percent": health.get("cpu", 20.0),
            "worst_loop_lag_ms_by_minute": health.get("lag", {}),
            "late_requests": sum(health.get("late", {}).values()),
            "late_requests_by_minute": health.get("late", {}),
        },
    }


def _split_records(seed: int = 3):
    rng = random.Random(seed)
    per_worker: dict[tuple[int, int], list[dict[str, Any]]] = {}
    i = 0
    for wave in range(2):
        for at_tenth in range(wave * 1200, (wave + 1) * 1200, 3):
            at = at_tenth / 10
            worker = i % 2
            # Worker 1 of wave 1 is slow: its requests have a long tail.
            tail = 400.0 if (wave, worker) == (1, 1) and rng.random() < 0.2 else 0.0
            per_worker.setdefault((wave, worker), []).append(_record(i, at, rng.uniform(40, 80) + tail))
            i += 1
    return per_worker


def test_percentiles_come_from_merged_sketches_and_counts_from_records():
    per_worker = _split_records()
    outputs = {pair: _document(*pair, recs) for pair, recs in per_worker.items()}
    records = [r for recs in per_worker.values() for r in recs]
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    for step in result["steps"]:
        mine = sorted(r["ttft_ms"] for r in records if r["step"] == step["step"])
        assert step["requests"] == step["ok"] == len(mine)
        for p in (50, 90, 99):
            exact = mine[int(p / 100 * (len(mine) - 1))]
            assert abs(step["ttft_ms"][f"p{p}"] - exact) <= RELATIVE_ACCURACY * exact + 1e-3
        within = sum(1 for r in records if r["step"] == step["step"] and r["ttft_ms"] <= 100)
        assert step["slo_attainment"] == round(within / len(mine), 4)
    assert result["status"] == "complete" and result["workers"]["reported"] == 4
    # The slow worker's tail is in step 1's p99 (an average of per-worker p99s would halve it).
    assert result["steps"][1]["ttft_ms"]["p99"] > 400


def test_throughput_and_rates_are_exact_from_the_records():
    per_worker = _split_records()
    records = [r for recs in per_worker.values() for r in recs]
    outputs = {pair: _document(*pair, recs) for pair, recs in per_worker.items()}
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    step = result["steps"][0]
    done = [r for r in records if 0 <= r["completed_s"] < 120]
    assert step["output_throughput"] == round(10 * len(done) / 120, 3)
    assert step["request_rate"] == round(sum(1 for r in records if r["scheduled_s"] < 120) / 120, 4)


def test_a_worker_that_never_reported_is_listed_and_its_minutes_marked():
    per_worker = _split_records()
    outputs: dict[tuple[int, int], Any] = {pair: _document(*pair, recs) for pair, recs in per_worker.items()}
    outputs[(1, 0)] = None
    outputs[(0, 1)] = {"wave": 0, "worker": 1, "status": "failed", "error": "ConnectionError: refused"}
    records = per_worker[(0, 0)] + per_worker[(1, 1)]
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    assert result["status"] == "partial"
    assert [(f["wave"], f["worker"]) for f in result["workers"]["failed"]] == [(0, 1), (1, 0)]
    assert "ConnectionError" in result["workers"]["failed"][0]["error"]
    reasons = {m["minute"]: m["client_reasons"] for m in result["timeline"]}
    assert all("1 of 2 workers did not report" in reasons[m] for m in range(4))


def test_minutes_where_the_clients_fell_behind_are_marked_not_averaged_away():
    per_worker = _split_records()
    records = [r for recs in per_worker.values() for r in recs]
    for r in records:  # worker 0 of wave 0 sent its minute-1 requests late
        if r["scheduled_s"] // 60 == 1 and int(r["id"][1:]) % 2 == 0:
            r["late_ms"] = 80.0
    outputs = {pair: _document(*pair, recs) for pair, recs in per_worker.items()}
    outputs[(0, 0)]["health"]["late_requests_by_minute"] = {"1": 100}
    outputs[(1, 1)]["health"]["worst_loop_lag_ms_by_minute"] = {"3": 120.0}
    outputs[(1, 0)]["health"]["cpu_percent"] = 97.0
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    assert result["client_bottleneck_minutes"] == [1, 2, 3]
    reasons = {m["minute"]: " ".join(m["client_reasons"]) for m in result["timeline"]}
    assert "requests left late" in reasons[1]
    assert "event loop lag up to 120 ms" in reasons[3] and "CPU" in reasons[2]
    assert result["steps"][0]["late_requests"] == 100
    assert not result["timeline"][0]["client_bottleneck"]


def test_failures_and_throttles_are_counted_by_class():
    records = [
        _record(0, 1.0, 50),
        _record(1, 2.0, 50, status="failed", failure="throttled"),
        _record(2, 3.0, 50, status="failed", failure="server_error"),
        _record(3, 4.0, 50, status="cancelled"),
    ]
    outputs = {
        (w, k): _document(w, k, records if (w, k) == (0, 0) else []) for w in range(2) for k in range(2)
    }
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    step = result["steps"][0]
    assert (step["ok"], step["failed"], step["throttled"], step["cancelled"]) == (1, 2, 1, 1)
    assert step["failure_classes"] == {"server_error": 1, "throttled": 1}
    assert result["timeline"][0]["errors"] == 2 and result["timeline"][0]["throttles"] == 1


def test_arrivals_a_worker_never_sent_are_named_in_their_minute():
    per_worker = _split_records()
    outputs = {pair: _document(*pair, recs) for pair, recs in per_worker.items()}
    for pair, doc in outputs.items():
        doc["planned_requests"] = len(per_worker[pair]) + (7 if pair == (1, 0) else 0)
        doc["requests"] = len(per_worker[pair])
    records = [r for recs in per_worker.values() for r in recs]
    result = merge_outputs(CONFIG, outputs, records, started_at="t0")
    reasons = {m["minute"]: " ".join(m["client_reasons"]) for m in result["timeline"]}
    assert "7 scheduled requests of this minute's wave were never sent" in reasons[2]
    assert result["client_bottleneck_minutes"] == [2]
