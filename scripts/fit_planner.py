#!/usr/bin/env python3
"""Fit the planner's constants on the fitting runs only and write speculative_infra/planner/planner_calibration.yaml.

    .venv/bin/python scripts/fit_planner.py            # fit, print the fit's own error, write the file
    .venv/bin/python scripts/fit_planner.py --check    # exit 1 if the file is not what a fit gives

Fitted: the share of memory bandwidth each fitted GPU reaches, one compute and one prefill efficiency,
the roofline blend's exponent, the share of the tensor-parallel link an all-reduce reaches, the per-layer
and per-draft-pass overheads, the all-reduce latency, the per-request overhead outside the engine, and
the acceptance of the Qwen3-32B EAGLE3 head per kind of text (no published figure exists).
The loss is the squared log error of per-request output tokens/s and of p50 end-to-end latency. The
optimizer is a plain Nelder-Mead (no SciPy), restarted until it stops improving.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.planner_runs import FIT_MODEL, MeasuredLevel, fitting_levels
from speculative_infra.planner.calibration import CALIBRATION_FILE, PlannerCalibration
from speculative_infra.planner.predict import predict

OUT = Path(__file__).resolve().parent.parent / "speculative_infra" / "planner" / CALIBRATION_FILE
GPUS = ["A10G", "L40S", "RTX-PRO-6000-Blackwell-Server"]
DRAFT = "RedHatAI/Qwen3-32B-speculator.eagle3"
KINDS = ["chat", "tool_calling", "long_context"]
K = 4  # the suite's num_speculative_tokens
# bandwidth x 3, compute, prefill, roofline exponent, link, layer overhead (us), draft pass overhead (ms),
# all-reduce latency (us), request overhead (ms), accepted drafts per step x 3
STARTS = [
    [0.8, 0.8, 0.8, 0.5, 0.5, 4.0, 0.5, 40.0, 0.3, 20.0, 50.0, 1.5, 1.5, 1.5],
]
FRACTIONS = 5  # x[0:5] are shares of a peak, at most 1
START = STARTS[0]


def calibration_from(x: Sequence[float], fitted_on: list[MeasuredLevel]) -> PlannerCalibration:
    bw = [min(1.0, v) for v in x[0:3]]
    compute, prefill = min(1.0, x[3]), min(1.0, x[4])
    return PlannerCalibration.model_validate(
        {
            "description": "Fitted by scripts/fit_planner.py on the runs listed in fitted_on (and no other).",
            "fitted_on": [{"id": lv.id, "source": lv.source} for lv in fitted_on],
            "constants": {
                "bandwidth": round(statistics.mean(bw), 4),
                "compute": round(compute, 4),
                "prefill": round(prefill, 4),
                "roofline_exponent": round(x[5], 3),
                "link": round(min(1.0, x[6]), 4),
                "layer_overhead_us": round(x[7], 2),
                "draft_pass_overhead_ms": round(x[8], 3),
                "allreduce_latency_us": round(x[9], 2),
                "request_overhead_ms": round(x[10], 2),
            },
            "per_gpu": {
                gpu: {"bandwidth": round(b, 4), "compute": round(compute, 4), "prefill": round(prefill, 4)}
                for gpu, b in zip(GPUS, bw, strict=True)
            },
            "acceptance": {
                DRAFT: [
                    {
                        "text_kind": kind,
                        "k": K,
                        "acceptance_length": round(min(K + 1.0, 1 + a), 3),
                        "source": f"fitted on the {FIT_MODEL} EAGLE3 runs in fitted_on (no published figure)",
                        "confidence": "reported",
                    }
                    for kind, a in zip(KINDS, x[11:14], strict=True)
                ]
            },
            "error_band": {
                "output_tokens_per_s_per_request": {"low": 1.0, "high": 1.0},
                "output_tokens_per_s": {"low": 1.0, "high": 1.0},
            },
        }
    )


def ratios(cal: PlannerCalibration, levels: list[MeasuredLevel]) -> list[tuple[float, float | None, float]]:
    """(per-request tok/s measured/predicted, p50 latency measured/predicted or None, aggregate ratio)."""
    out = []
    for lv in levels:
        plan = predict(lv.resolved(), lv.workload, concurrency=[lv.concurrency], calibration=cal)
        p = plan.levels[0]
        assert p.output_tokens_per_s_per_request and p.e2e_s and p.output_tokens_per_s
        per = lv.per_request_tokens_per_s / p.output_tokens_per_s_per_request
        lat = None if lv.p50_e2e_ms is None else lv.p50_e2e_ms / 1000 / p.e2e_s
        agg = (lv.output_tokens_per_s or lv.per_request_tokens_per_s * lv.concurrency) / p.output_tokens_per_s
        out.append((per, lat, agg))
    return out


def loss(x: Sequence[float], levels: list[MeasuredLevel]) -> float:
    if (
        any(v <= 0 for v in x[:11])
        or any(v > 1 for v in x[:FRACTIONS])
        or not 1 <= x[5] <= 50
        or x[6] > 1
        or any(v < 0 or v > K for v in x[11:14])
    ):
        return 1e9
    total = 0.0
    for per, lat, _ in ratios(calibration_from(x, levels), levels):
        total += math.log(per) ** 2 + (math.log(lat) ** 2 if lat else 0.0)
    return total / len(levels)


def nelder_mead(f: Callable[[list[float]], float], start: list[float], step: float = 0.25) -> list[float]:
    n = len(start)
    simplex = [start] + [[v * (1 + step) if i == j else v for j, v in enumerate(start)] for i in range(n)]
    values = [f(p) for p in simplex]
    for _ in range(400 * n):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < 1e-7:
            break
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [
                    [b + 0.5 * (p - b) for b, p in zip(best, q, strict=True)] for q in simplex[1:]
                ]
                values = [values[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def fit() -> PlannerCalibration:
    levels = fitting_levels()
    best, best_loss = START, loss(START, levels)
    for start in STARTS:  # a few starts, each restarted until its loss stops falling; the best wins
        point, point_loss = start, loss(start, levels)
        for _ in range(6):
            x = nelder_mead(lambda p: loss(p, levels), point)
            value = loss(x, levels)
            if value > point_loss - 1e-6:
                break
            point, point_loss = x, value
        if point_loss < best_loss:
            best, best_loss = point, point_loss
    cal = calibration_from(best, levels)
    got = ratios(cal, levels)
    band = {
        "output_tokens_per_s_per_request": {
            "low": round(quantile([r[0] for r in got], 0.1), 3),
            "high": round(quantile([r[0] for r in got], 0.9), 3),
        },
        "output_tokens_per_s": {
            "low": round(quantile([r[2] for r in got], 0.1), 3),
            "high": round(quantile([r[2] for r in got], 0.9), 3),
        },
    }
    data = cal.model_dump()
    data["error_band"] = band
    print(f"fitted on {len(levels)} levels; loss {best_loss:.4f}", file=sys.stderr)
    for name, index in (("per-request tok/s", 0), ("aggregate tok/s", 2)):
        errors = sorted(abs(1 / r[index] - 1) for r in got)
        print(f"  fit error {name}: median {statistics.median(errors):.1%}", file=sys.stderr)
    return PlannerCalibration.model_validate(data)


def render(cal: PlannerCalibration) -> str:
    header = (
        "# The planner's fitted constants. Generated by scripts/fit_planner.py: do not edit by hand.\n"
        "# fitted_on lists every measured run the constants were fitted on; the planner is judged only on\n"
        "# runs not in that list (docs/planner.md, benchmarks/bench_planner.py).\n"
    )
    return header + yaml.safe_dump(cal.model_dump(), sort_keys=False, width=110)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="fail if the committed file differs from a fit")
    args = parser.parse_args()
    text = render(fit())
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run scripts/fit_planner.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
