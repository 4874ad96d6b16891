"""`speculative-infra plan predict|recommend|calibrate`: what a deployment will deliver and cost, before deploy.

Exit status: 0 a prediction; 1 `check` refuses the spec (findings printed); 2 a bad spec or argument.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from speculative_infra.check import check
from speculative_infra.cli.tables import render_table
from speculative_infra.facts import CONTEXT_FILE, ContextFileError, facts_from_context, read_context_file
from speculative_infra.planner.calibration import (
    MeasuredFactor,
    factor_key,
    read_factors,
    write_factor,
)
from speculative_infra.planner.predict import Plan, PlanNotPossible, predict
from speculative_infra.planner.recommend import SLO_KEYS, recommend
from speculative_infra.planner.workload import (
    TEXT_KINDS,
    PlanInputError,
    Workload,
    positive_float,
    positive_int,
)
from speculative_infra.safe_files import InputFileError, write_text
from speculative_infra.spec import SpecError, load_spec

EXIT_OK, EXIT_FINDINGS, EXIT_INVALID = 0, 1, 2


def _numbers(name: str, positive: Any, many: bool = True) -> Any:
    """An argparse type: a comma-separated list (or, with many=False, one value) of positive numbers."""

    def parse(text: str) -> Any:
        parts = [part for part in text.split(",") if part.strip()]
        if not many and len(parts) != 1:
            raise argparse.ArgumentTypeError(f"{name}: one number, got {text!r}")
        try:
            values = [positive(name, float(part)) for part in parts]
        except (ValueError, PlanInputError) as err:
            raise argparse.ArgumentTypeError(f"{name}: {err}") from None
        return values if many else values[0]

    return parse


def _slo(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or key.strip() not in SLO_KEYS:
            raise argparse.ArgumentTypeError(f"--slo: {part!r} is not one of {', '.join(SLO_KEYS)}=<ms>")
        try:
            out[key.strip()] = positive_float(f"--slo {key.strip()}", float(value))
        except (ValueError, PlanInputError) as err:
            raise argparse.ArgumentTypeError(f"--slo: {err}") from None
    return out


def _workload_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input-tokens",
        type=_numbers("--input-tokens", positive_int, many=False),
        required=True,
        help="mean input tokens",
    )
    parser.add_argument(
        "--output-tokens",
        type=_numbers("--output-tokens", positive_int, many=False),
        required=True,
        help="mean output tokens",
    )
    parser.add_argument(
        "--prefix-tokens", type=int, default=0, help="input tokens every request shares (default 0)"
    )
    parser.add_argument(
        "--text-kind",
        choices=TEXT_KINDS,
        default="chat",
        help="the kind of text, for the draft's acceptance (default chat)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--context",
        type=Path,
        default=Path(CONTEXT_FILE),
        help=f"fetched facts and your calibration factors (default: ./{CONTEXT_FILE} if it exists)",
    )


def add_plan_command(subparsers: Any) -> None:
    plan = subparsers.add_parser(
        "plan",
        help="predict throughput, latency and cost; recommend the cheapest deployment meeting SLOs",
        description="The planner (docs/planner.md): predictions from the catalog, the memory model and "
        "constants fitted on public measured runs.",
    )
    sub = plan.add_subparsers(dest="plan_command", required=True)
    p = sub.add_parser("predict", help="predict one spec at load levels")
    p.add_argument("spec", help="a deployment spec (YAML)")
    _workload_args(p)
    p.add_argument(
        "--concurrency",
        type=_numbers("--concurrency", positive_int),
        default=None,
        help="closed-loop users, e.g. 1,8,32",
    )
    p.add_argument(
        "--request-rate",
        type=_numbers("--request-rate", positive_float),
        default=None,
        help="open-loop req/s",
    )
    p.add_argument("--acceptance-length", type=float, default=None, help="override the draft's acceptance")
    p.set_defaults(handler=run_predict)
    r = sub.add_parser("recommend", help="the cheapest deployment of a model that meets the SLOs")
    r.add_argument("--model", required=True, help="Hugging Face model id")
    _workload_args(r)
    r.add_argument("--concurrency", type=_numbers("--concurrency", positive_int), default=None)
    r.add_argument("--request-rate", type=_numbers("--request-rate", positive_float), default=None)
    r.add_argument("--slo", type=_slo, default={}, help="ttft_ms=..,tpot_ms=..,e2el_ms=..")
    r.add_argument(
        "--region", default="us-east-1", help="prices and offers of this region (default us-east-1)"
    )
    r.add_argument("--families", default=None, help="instance families to consider, e.g. g5,g6e,g7e")
    r.add_argument(
        "--max-usd-per-hour", type=_numbers("--max-usd-per-hour", positive_float, many=False), default=None
    )
    r.add_argument(
        "--top",
        type=_numbers("--top", positive_int, many=False),
        default=5,
        help="candidates to show (default 5)",
    )
    r.add_argument("--write-spec", type=Path, default=None, help="write the best candidate's spec (YAML)")
    r.set_defaults(handler=run_recommend)
    c = sub.add_parser("calibrate", help="store measured/predicted factors from your benchmark results")
    c.add_argument("results", type=Path, help="a `speculative-infra bench` or EndpointBenchmark results.json")
    c.add_argument("--spec", required=True, help="the deployment spec the results were measured on")
    c.add_argument(
        "--context", type=Path, default=Path(CONTEXT_FILE), help=f"where to store (default ./{CONTEXT_FILE})"
    )
    c.set_defaults(handler=run_calibrate)


def _fail(message: str) -> int:
    print(f"speculative-infra plan: {message}", file=sys.stderr)
    return EXIT_INVALID


def _context(path: Path) -> tuple[dict[str, Any], dict[str, MeasuredFactor]]:
    context = read_context_file(path)
    return facts_from_context(context), read_factors(context)


def _workload(args: argparse.Namespace) -> Workload:
    return Workload(args.input_tokens, args.output_tokens, args.prefix_tokens, args.text_kind)


def run_predict(args: argparse.Namespace) -> int:
    if not args.concurrency and not args.request_rate:
        return _fail("give --concurrency and/or --request-rate")
    if args.acceptance_length is not None and not (
        math.isfinite(args.acceptance_length) and args.acceptance_length >= 1
    ):
        return _fail(f"--acceptance-length must be a number >= 1, got {args.acceptance_length}")
    try:
        spec = load_spec(args.spec)
        fetched, factors = _context(args.context)
        workload = _workload(args)
    except SpecError as err:
        return _fail(str(err))
    except (ContextFileError, PlanInputError, ValueError) as err:
        return _fail(str(err))
    result = check(spec, fetched)
    if not result.ok:
        if args.format == "json":
            print(json.dumps({"ok": False, "findings": [f.as_dict() for f in result.findings]}, indent=2))
        else:
            print("check refuses this spec; fix it before planning:", file=sys.stderr)
            for finding in result.findings:
                print(f"  {finding.code} {finding.severity}: {finding.message}", file=sys.stderr)
        return EXIT_FINDINGS
    if result.deployment.model is None:
        return _fail(f"no facts for {spec.model.id}: run `speculative-infra facts fetch {spec.model.id}`")
    try:
        plan = predict(
            result.deployment,
            workload,
            concurrency=args.concurrency or [],
            request_rates=args.request_rate or [],
            acceptance_length=args.acceptance_length,
            factors=factors,
        )
    except (PlanNotPossible, PlanInputError) as err:
        return _fail(str(err))
    rows = plan.as_dicts(workload)
    if args.format == "json":
        print(json.dumps(_plan_json(plan, rows), indent=2))
    else:
        print(_plan_text(plan, rows))
    return EXIT_OK


def _plan_json(plan: Plan, rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "ok": True,
        "predictions": rows,
        "assumptions": {**plan.assumptions, "usd_per_hour": plan.usd_per_hour, "price": plan.price_note},
        "notes": plan.notes,
    }


def _plan_text(plan: Plan, rows: list[dict[str, Any]]) -> str:
    def cell(v: Any) -> str:
        return "-" if v is None else f"{v:g}" if isinstance(v, float) else str(v)

    table = [
        [
            cell(r["concurrency"] if r["concurrency"] is not None else f"{r['request_rate']}/s"),
            cell(r["ttft_ms"]),
            cell(r["tpot_ms"]),
            cell(r["e2e_latency_ms"]),
            cell(r["output_tokens_per_s_per_request"]),
            cell(r["output_tokens_per_s"]),
            cell(r["usd_per_million_output_tokens"]),
            r["bound"],
        ]
        for r in rows
    ]
    head = ["load", "TTFT ms", "TPOT ms", "E2E ms", "tok/s/req", "tok/s", "$/M out", "bound"]
    lines = [render_table(head, table), ""]
    for key, value in plan.assumptions.items():
        lines.append(f"  {key}: {value['value'] if isinstance(value, dict) and 'value' in value else value}")
        if isinstance(value, dict) and "source" in value:
            lines.append(f"      ({value['source']})")
    lines.append(f"  price: {plan.price_note}")
    lines += [f"  note: {n}" for n in plan.notes]
    return "\n".join(lines)


def run_recommend(args: argparse.Namespace) -> int:
    loads = [bool(args.concurrency), bool(args.request_rate)]
    if loads.count(True) != 1 or len(args.concurrency or args.request_rate) != 1:
        return _fail("give one --concurrency C or one --request-rate R")
    try:
        fetched, factors = _context(args.context)
        workload = _workload(args)
        candidates = recommend(
            model_id=args.model,
            workload=workload,
            concurrency=args.concurrency[0] if args.concurrency else None,
            request_rate=args.request_rate[0] if args.request_rate else None,
            slo=args.slo,
            region=args.region,
            families=[f.strip() for f in args.families.split(",")] if args.families else None,
            max_usd_per_hour=args.max_usd_per_hour,
            fetched=fetched,
            factors=factors,
        )
    except (ContextFileError, PlanInputError, PlanNotPossible, ValueError) as err:
        return _fail(str(err))
    if not candidates:
        return _fail("no candidate passes every rule; widen --families or --max-usd-per-hour")
    top = candidates[: args.top]
    if args.write_spec is not None:
        import yaml

        try:
            write_text(args.write_spec, yaml.safe_dump(top[0].spec, sort_keys=False), what="spec")
        except InputFileError as err:
            return _fail(str(err))
    if args.format == "json":
        out = [
            {"spec": c.spec, "prediction": c.prediction, "meets_slo": c.meets_slo, "misses": c.misses}
            for c in top
        ]
        print(json.dumps({"ok": True, "candidates": out, "considered": len(candidates)}, indent=2))
        return EXIT_OK
    print(_recommend_text(top, len(candidates)))
    return EXIT_OK


def _describe(spec: dict[str, Any]) -> str:
    s = spec.get("speculative")
    draft = "no speculation" if not s else f"{s['method']} {s['model']} k={s['num_speculative_tokens']}"
    return f"{spec['instance_type']} TP={spec['engine']['tensor_parallel_size']} vLLM {spec['container']['version']}, {draft}"


def _recommend_text(top: list[Any], considered: int) -> str:
    best = top[0]
    p = best.prediction
    lines = [
        f"best of {considered} deployments that pass every rule: {_describe(best.spec)}",
        f"  ${p['usd_per_million_output_tokens']}/M output tokens (${p['usd_per_million_tokens']}/M in+out), "
        f"{p['output_tokens_per_s']} tok/s, {p['output_tokens_per_s_per_request']} tok/s per request, "
        f"p50 E2E {p['e2e_latency_ms']} ms, bound by {p['bound']}"
        + ("" if best.meets_slo else f"; misses the SLO: {', '.join(best.misses)} (no candidate meets it)"),
    ]
    if len(top) > 1:
        runner = top[1]
        why = (
            f"misses the SLO ({', '.join(runner.misses)})"
            if not runner.meets_slo
            else f"costs ${runner.prediction['usd_per_million_output_tokens']}/M output tokens"
        )
        lines.append(f"runner-up: {_describe(runner.spec)}: {why}")
    lines.append("")
    for c in top:
        mark = "meets SLO" if c.meets_slo else "misses: " + ", ".join(c.misses)
        lines.append(f"  {_describe(c.spec)}: ${c.prediction['usd_per_million_output_tokens']}/M out; {mark}")
    return "\n".join(lines)


def run_calibrate(args: argparse.Namespace) -> int:
    from speculative_infra.benchmark.files import load_results

    try:
        results = load_results(args.results)
        spec = load_spec(args.spec)
        fetched, _ = _context(args.context)
    except SpecError as err:
        return _fail(str(err))
    except (OSError, ContextFileError, ValueError) as err:
        return _fail(f"cannot read {args.results} or {args.spec}: {err}")
    result = check(spec, fetched)
    d = result.deployment
    if d.instance is None or d.model is None or d.container is None:
        return _fail("the spec does not resolve to a known instance, model and container")
    w = results.workload
    workload = Workload(w.input_tokens, w.output_tokens, w.shared_prefix_tokens)
    ratios = []
    for level in results.levels:
        if level.request_rate is not None or not level.output_throughput or not level.completed:
            continue
        plan = predict(d, workload, concurrency=[level.concurrency])
        predicted = plan.levels[0].output_tokens_per_s
        if predicted and math.isfinite(level.output_throughput) and level.output_throughput > 0:
            ratios.append(level.output_throughput / predicted)
    if not ratios:
        return _fail(f"{args.results} has no completed closed-loop level to compare with")
    factor = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    if not 0.05 <= factor <= 20:  # what read_factors accepts: a wider gap is a wrong spec, not a factor
        return _fail(
            f"measured / predicted output tokens/s is {factor:.3g}; allowed: 0.05 to 20. Check that --spec is "
            f"the deployment {args.results} measured"
        )
    spec_model = (d.speculative or {}).get("model")
    key = factor_key(
        d.instance.gpu_name, f"{d.container.framework} {d.container.version}", d.model_id, spec_model
    )
    try:
        write_factor(args.context, MeasuredFactor(key, factor, len(ratios), str(args.results)))
    except ValueError as err:  # ContextFileError, InputFileError: an unreadable or unwritable context file
        return _fail(str(err))
    print(
        f"measured / predicted output tokens/s over {len(ratios)} level(s): {factor:.3f}; stored under "
        f"{key!r} in {args.context}; later predictions for this deployment use it and say so",
        file=sys.stderr,
    )
    return EXIT_OK
