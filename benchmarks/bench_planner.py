#!/usr/bin/env python3
"""The planner's accuracy on measured runs it was NOT fitted on, and the time of a whole-catalog recommend.

    .venv/bin/python benchmarks/bench_planner.py            # summary
    .venv/bin/python benchmarks/bench_planner.py --table    # every held-out level, predicted vs measured

Held out: every clean run of the benchmark suite that is not of Qwen3-32B (the fitting model), and the
reference article's own figures (tests/golden/planner_article_runs.json). Errors are |predicted /
measured - 1|; "pick" asks whether `plan recommend`, restricted to the instance types measured for one
scenario (model, workload, concurrency), picks the one that measured cheapest per output token.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.planner_runs import MeasuredLevel, absolute_errors, held_out_levels
from speculative_infra.catalog import load_catalog
from speculative_infra.planner.predict import predict
from speculative_infra.planner.recommend import recommend
from speculative_infra.planner.workload import Workload


def evaluate(levels: list[MeasuredLevel]) -> list[dict[str, float | str | None]]:
    rows = []
    for lv in levels:
        plan = predict(lv.resolved(), lv.workload, concurrency=[lv.concurrency])
        p = plan.levels[0]
        measured_agg = lv.output_tokens_per_s or lv.per_request_tokens_per_s * lv.concurrency
        rows.append(
            {
                "id": lv.id,
                "model": lv.model_id,
                "instance": lv.instance_type,
                "c": lv.concurrency,
                "spec": "eagle3" if lv.speculative else "plain",
                "pred_per_req": p.output_tokens_per_s_per_request,
                "meas_per_req": lv.per_request_tokens_per_s,
                "pred_agg": p.output_tokens_per_s,
                "meas_agg": measured_agg,
                "pred_p50": None if p.e2e_s is None else p.e2e_s * 1000,
                "meas_p50": lv.p50_e2e_ms,
            }
        )
    return rows


def picks(levels: list[MeasuredLevel]) -> tuple[int, int, list[str]]:
    """Scenarios measured on several instance types: does the planner's cheapest match the measured one?"""
    catalog = load_catalog()
    scenarios: dict[tuple[str, str, int], dict[str, float]] = defaultdict(dict)
    workloads: dict[tuple[str, str, int], Workload] = {}
    for lv in levels:
        price = catalog.price(lv.instance_type, "us-east-1")
        measured_agg = lv.output_tokens_per_s or lv.per_request_tokens_per_s * lv.concurrency
        if price is None or not measured_agg:
            continue
        key = (lv.model_id, lv.id.split("/")[4] if lv.id.count("/") >= 5 else lv.id, lv.concurrency)
        cost = price.usd_per_hour / 3600 / measured_agg * 1e6
        best = scenarios[key].get(lv.instance_type)
        scenarios[key][lv.instance_type] = cost if best is None else min(best, cost)
        workloads[key] = lv.workload
    hits, total, misses = 0, 0, []
    for key, costs in scenarios.items():
        if len(costs) < 2:
            continue
        families = sorted({name.split(".")[1] for name in costs})
        candidates = recommend(
            model_id=key[0],
            workload=workloads[key],
            concurrency=key[2],
            request_rate=None,
            slo={},
            region="us-east-1",
            families=families,
        )
        measured = [c for c in candidates if c.spec["instance_type"] in costs]
        if not measured:
            continue
        total += 1
        picked = measured[0].spec["instance_type"]
        cheapest = min(costs, key=costs.__getitem__)
        if picked == cheapest:
            hits += 1
        else:
            misses.append(f"{key}: picked {picked}, measured cheapest {cheapest}")
    return hits, total, misses


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--table", action="store_true", help="print every held-out level")
    args = parser.parse_args()
    levels = held_out_levels()
    rows = evaluate(levels)
    if args.table:
        for r in rows:
            print(
                f"{r['id'][:78]:78} c={r['c']:>3} per-req {r['pred_per_req']:7.1f} vs {r['meas_per_req']:7.1f}"
                f"  agg {r['pred_agg']:7.1f} vs {r['meas_agg']:7.1f}"
            )
    print(f"held-out levels: {len(rows)} ({len({r['model'] for r in rows})} models, fitted on none of them)")
    for label, pred, meas in (
        ("per-request output tok/s", "pred_per_req", "meas_per_req"),
        ("aggregate output tok/s", "pred_agg", "meas_agg"),
        ("p50 end-to-end latency", "pred_p50", "meas_p50"),
    ):
        pairs = [(float(r[pred]), float(r[meas])) for r in rows if r[pred] is not None and r[meas]]  # type: ignore[arg-type]
        median, p90 = absolute_errors(pairs)
        print(f"  {label:26} median abs error {median:6.1%}   p90 {p90:6.1%}   ({len(pairs)} levels)")
    by_model: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        by_model[f"{r['model']} {r['spec']}"].append((float(r["pred_per_req"]), float(r["meas_per_req"])))  # type: ignore[arg-type]
    for model, pairs in sorted(by_model.items()):
        median, p90 = absolute_errors(pairs)
        print(f"    {model:48} per-request median {median:6.1%} p90 {p90:6.1%} ({len(pairs)})")
    hits, total, misses = picks(levels)
    print(f"  recommend picks the measured-cheapest instance type: {hits} of {total} scenarios")
    for miss in misses:
        print(f"    miss: {miss}")
    start = time.perf_counter()
    candidates = recommend(
        model_id="Qwen/Qwen3-32B",
        workload=Workload(1000, 560, 478, "document_correction"),
        concurrency=32,
        request_rate=None,
        slo={},
        region="us-east-1",
    )
    elapsed = time.perf_counter() - start
    best = candidates[0]
    spec = best.spec.get("speculative")
    print(
        f"  whole-catalog recommend (Qwen3-32B, 1000 in / 560 out, C=32): {elapsed:.2f} s over "
        f"{len(candidates)} candidates; best {best.spec['instance_type']}"
        f" {'with ' + spec['method'] + ' k=' + str(spec['num_speculative_tokens']) if spec else 'without speculation'}"
        f" at ${best.usd_per_million_output_tokens}/M output tokens"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
