"""The merge: one result from every worker's output, percentiles from merged sketches only.

Counts, throughput and goodput come from the per-request records (exact); every percentile comes from
the workers' sketches merged bucket by bucket (within the sketch's relative accuracy of the exact order
statistic); no per-worker percentile is ever averaged. A worker that failed or never reported is listed
with its wave, and the minutes its share of the load was missing are marked, as are the minutes in which
the clients (late sends, a lagging event loop, a saturated CPU), not the endpoint, were the bottleneck.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .profile import LoadTestConfig
from .schedule import wave_window
from .sketch import RELATIVE_ACCURACY, LatencySketch
from .worker import SKETCHED, minute_of

PERCENTILES = (50.0, 90.0, 99.0)
LATE_SHARE = 0.01
"""A minute in which more than 1% of the requests left late was limited by the clients."""
CPU_BOUND_PERCENT = 90.0
"""A worker busier than this over its wave could not keep up whatever its lag says."""
RESULT_KIND = "distributed_load_test"


def _percentiles(sketch: LatencySketch) -> dict[str, float | None]:
    return {f"p{p:g}": _round(sketch.percentile(p)) for p in PERCENTILES}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def merged_sketches(documents: Iterable[Mapping[str, Any]], part: str) -> dict[int, dict[str, LatencySketch]]:
    """Per key (step or minute), per metric: the merge of every worker's sketch."""
    out: dict[int, dict[str, LatencySketch]] = defaultdict(lambda: {m: LatencySketch() for m in SKETCHED})
    for document in documents:
        for key, metrics in document["sketches"][part].items():
            for metric, data in metrics.items():
                out[int(key)][metric].merge(LatencySketch.from_dict(data, f"sketches.{part}.{key}.{metric}"))
    return out


def _window_counts(
    records: Sequence[Mapping[str, Any]], start: float, end: float, late_ms: float, slo: bool
) -> dict[str, Any]:
    """Exact figures of the requests scheduled in [start, end) and the tokens completed in it."""
    scheduled = [r for r in records if start <= r["scheduled_s"] < end]
    statuses = Counter(r["status"] for r in scheduled)
    failures = Counter(r["failure_class"] for r in scheduled if r["status"] == "failed")
    done = [
        r
        for r in records
        if r["status"] == "ok" and r["completed_s"] is not None and start <= r["completed_s"] < end
    ]
    seconds = max(end - start, 1e-9)
    good = sum(1 for r in done if r["meets_slo"])
    # Attainment: of the window's requests that ended (cancelled ones did not), those within every objective.
    ended = statuses["ok"] + statuses["failed"]
    met = sum(1 for r in scheduled if r["meets_slo"])
    return {
        "requests": len(scheduled),
        "ok": statuses["ok"],
        "failed": statuses["failed"],
        "cancelled": statuses["cancelled"],
        "throttled": failures["throttled"],
        "failure_classes": dict(sorted(failures.items())),
        "completed": len(done),
        "request_rate": round(len(scheduled) / seconds, 4),
        "output_throughput": round(sum(r["output_tokens"] or 0 for r in done) / seconds, 3),
        "request_goodput": round(good / seconds, 4) if slo else None,
        "slo_attainment": round(met / ended, 4) if slo and ended else None,
        "late_requests": sum(1 for r in scheduled if r["late_ms"] > late_ms),
    }


def merge_outputs(
    config: LoadTestConfig,
    outputs: Mapping[tuple[int, int], Mapping[str, Any] | None],
    records: Sequence[Mapping[str, Any]],
    *,
    started_at: str,
) -> dict[str, Any]:
    """Every expected (wave, worker) is a key of ``outputs``; None: it never reported."""
    slo = config.benchmark.slo is not None and bool(config.benchmark.slo.given())
    ok_docs = [doc for doc in outputs.values() if doc is not None and doc.get("status") == "ok"]
    missing = [
        {"wave": wave, "worker": worker, "error": "no output (the worker failed, timed out or was not run)"}
        if doc is None
        else {"wave": wave, "worker": worker, "error": str(doc.get("error") or doc.get("status"))}
        for (wave, worker), doc in sorted(outputs.items())
        if doc is None or doc.get("status") != "ok"
    ]
    step_sketches = merged_sketches(ok_docs, "steps")
    minute_sketches = merged_sketches(ok_docs, "minutes")
    steps = []
    for i, (step, start) in enumerate(zip(config.steps, config.step_starts(), strict=True)):
        figures = _window_counts(records, start, start + step.duration_s, config.late_threshold_ms, slo)
        sketches = step_sketches.get(i) or {m: LatencySketch() for m in SKETCHED}
        steps.append(
            {
                "step": i,
                "description": step.describe(),
                "start_s": start,
                "end_s": start + step.duration_s,
                "request_rate_target": step.request_rate,
                "ramp_to_rate": step.ramp_to_rate,
                "concurrency": step.concurrency,
                **figures,
                **{metric: _percentiles(sketches[metric]) for metric in SKETCHED},
            }
        )
    timeline = _timeline(config, records, minute_sketches, ok_docs, missing, slo)
    return {
        "kind": RESULT_KIND,
        "config": config.to_dict(),
        "started_at": started_at,
        "status": "complete" if not missing else "partial",
        "sketch": {"library": "ddsketch", "relative_accuracy": RELATIVE_ACCURACY},
        "workers": {
            "per_wave": config.workers,
            "waves": config.waves,
            "expected": len(outputs),
            "reported": len(ok_docs),
            "failed": missing,
            "max_cpu_percent": max((d["health"]["cpu_percent"] for d in ok_docs), default=None),
        },
        "totals": _window_counts(records, 0.0, config.duration_s, config.late_threshold_ms, slo),
        "steps": steps,
        "timeline": timeline,
        "client_bottleneck_minutes": [m["minute"] for m in timeline if m["client_bottleneck"]],
    }


def _timeline(
    config: LoadTestConfig,
    records: Sequence[Mapping[str, Any]],
    sketches: Mapping[int, Mapping[str, LatencySketch]],
    docs: Sequence[Mapping[str, Any]],
    missing: Sequence[Mapping[str, Any]],
    slo: bool,
) -> list[dict[str, Any]]:
    minutes = max(1, math.ceil(config.duration_s / 60.0 - 1e-9))
    worst_lag: dict[int, float] = defaultdict(float)
    late: Counter[int] = Counter()
    busy_minutes: set[int] = set()
    for doc in docs:
        health = doc["health"]
        for key, lag in health["worst_loop_lag_ms_by_minute"].items():
            worst_lag[int(key)] = max(worst_lag[int(key)], lag)
        late.update({int(k): v for k, v in health["late_requests_by_minute"].items()})
        if health["cpu_percent"] >= CPU_BOUND_PERCENT:
            busy_minutes.update(_wave_minutes(config, doc["wave"]))
    short: Counter[int] = Counter()
    for failure in missing:
        short.update(_wave_minutes(config, failure["wave"]))
    unsent: Counter[int] = Counter()  # open loop: arrivals of a wave its workers never sent
    for doc in docs:
        gap = int(doc.get("planned_requests", 0)) - int(doc.get("requests", 0))
        if config.open_loop and gap > 0:
            first = min(_wave_minutes(config, doc["wave"]))
            unsent[first] += gap
    # One pass over the records: each minute then scans only its own (scheduled or completed in it).
    by_minute: dict[int, dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for record in records:
        by_minute[minute_of(record["scheduled_s"])][id(record)] = record
        if record["completed_s"] is not None:
            by_minute[minute_of(record["completed_s"])][id(record)] = record
    out = []
    for minute in range(minutes):
        start, end = minute * 60.0, min((minute + 1) * 60.0, config.duration_s)
        figures = _window_counts(list(by_minute[minute].values()), start, end, config.late_threshold_ms, slo)
        reasons = []
        if figures["requests"] and late[minute] > LATE_SHARE * figures["requests"]:
            reasons.append(f"{late[minute]} of {figures['requests']} requests left late")
        if worst_lag[minute] > config.late_threshold_ms:
            reasons.append(f"event loop lag up to {worst_lag[minute]:.0f} ms")
        if minute in busy_minutes:
            reasons.append(f"a worker at >= {CPU_BOUND_PERCENT:g}% CPU")
        if short[minute]:
            reasons.append(f"{short[minute]} of {config.workers} workers did not report")
        if unsent[minute]:
            reasons.append(f"{unsent[minute]} scheduled requests of this minute's wave were never sent")
        metric = sketches.get(minute)
        out.append(
            {
                "minute": minute,
                "requests_per_s": figures["request_rate"],
                "completed": figures["completed"],
                "errors": figures["failed"],
                "throttles": figures["throttled"],
                "output_tokens_per_s": figures["output_throughput"],
                "slo_attainment": figures["slo_attainment"],
                **{
                    f"{metric_name[:-3]}_{p}_ms": None if metric is None else value
                    for metric_name in ("ttft_ms", "tpot_ms")
                    for p, value in (
                        _percentiles(metric[metric_name])
                        if metric is not None
                        else dict.fromkeys(("p50", "p99"))
                    ).items()
                    if p in ("p50", "p99")
                },
                "client_bottleneck": bool(reasons),
                "client_reasons": reasons,
            }
        )
    return out


def _wave_minutes(config: LoadTestConfig, wave: int) -> set[int]:
    start, end = wave_window(config, wave)
    return set(range(minute_of(start), max(minute_of(start) + 1, math.ceil(end / 60.0 - 1e-9))))
