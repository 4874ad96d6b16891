"""`speculative-infra check SPEC.yaml`: exit 0 deployable, 1 errors found, 2 unreadable or invalid spec."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.check import CheckResult, check
from speculative_infra.cli.tables import render_table
from speculative_infra.cost import estimate_cost
from speculative_infra.facts import CONTEXT_FILE, ContextFileError, facts_from_context, read_context_file
from speculative_infra.safe_files import MAX_RESULTS_BYTES, InputFileError, read_json
from speculative_infra.serving_cost import ServingWorkload, compare_serving_costs, throughput_from_results
from speculative_infra.spec import SpecError, load_spec

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_INVALID = 2


def add_check_command(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check",
        help="check a deployment spec against the catalog and rules",
        description="Resolve a deployment spec (YAML, at most 1 MiB of UTF-8) against the catalog and run "
        "every compatibility rule.",
        epilog="exit status: 0 deployable (warnings allowed); 1 errors found; 2 the spec cannot be read or is "
        "invalid (not UTF-8, too large, YAML or schema errors).\n"
        "spec format: docs/spec.md; rule codes: docs/rules.md (in the project's repository).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("spec", help="path to a deployment spec (YAML)")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--context",
        type=Path,
        default=Path(CONTEXT_FILE),
        help=f"facts fetched by `speculative-infra facts fetch` (default: ./{CONTEXT_FILE} if it exists)",
    )
    costs = parser.add_argument_group(
        "serving cost", "compare real time, asynchronous (scale to zero) and batch for a daily volume"
    )
    costs.add_argument("--daily-tokens", type=float, help="output tokens a day, e.g. 5e7")
    costs.add_argument("--throughput", type=float, help="output tokens/s one instance sustains")
    costs.add_argument(
        "--benchmark-results",
        type=Path,
        help="a `speculative-infra bench` results.json: its best output throughput (instead of --throughput)",
    )
    costs.add_argument(
        "--wakes-per-day", type=int, default=1, help="async: wakes from zero a day (default 1)"
    )
    costs.add_argument("--jobs-per-day", type=int, default=1, help="batch: transform jobs a day (default 1)")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    try:
        spec = load_spec(args.spec)
    except SpecError as err:
        if args.format == "json":
            problems = [{"field": path, "reason": reason} for path, reason in err.problems]
            print(json.dumps({"ok": False, "spec_errors": problems}, indent=2))
        else:
            print(str(err), file=sys.stderr)
        return EXIT_INVALID
    try:
        fetched = facts_from_context(read_context_file(args.context))
    except ContextFileError as err:
        print(f"speculative-infra check: {err}", file=sys.stderr)
        return EXIT_INVALID
    result = check(spec, fetched)
    try:
        costs = _serving_costs(args, result)
    except ValueError as err:
        print(f"speculative-infra check: {err}", file=sys.stderr)
        return EXIT_INVALID
    if args.format == "json":
        data = result.as_dict()
        if costs is not None:
            data["serving_costs"] = costs
        print(json.dumps(data, indent=2))
    else:
        print(format_text(result) + ("" if costs is None else "\n\n" + format_costs(costs)))
    return EXIT_OK if result.ok else EXIT_FINDINGS


def _serving_costs(args: argparse.Namespace, result: CheckResult) -> dict[str, Any] | None:
    """The --daily-tokens comparison, or None when not asked for; ValueError names a bad flag."""
    if args.daily_tokens is None:
        if args.throughput is not None or args.benchmark_results is not None:
            raise ValueError("--throughput and --benchmark-results need --daily-tokens")
        return None
    if (args.throughput is None) == (args.benchmark_results is None):
        raise ValueError("--daily-tokens needs one of --throughput or --benchmark-results")
    if args.throughput is not None:
        throughput, source = args.throughput, "--throughput"
    else:
        try:
            results = read_json(args.benchmark_results, max_bytes=MAX_RESULTS_BYTES, what="results file")
        except InputFileError as err:
            raise ValueError(f"--benchmark-results {err}") from None
        try:
            throughput = throughput_from_results(results)
        except ValueError as err:
            raise ValueError(f"--benchmark-results {args.benchmark_results}: {err}") from None
        source = f"best level of {args.benchmark_results}"
    try:
        workload = ServingWorkload(
            daily_output_tokens=args.daily_tokens,
            output_tokens_per_second=throughput,
            real_time_min_instances=max(1, result.deployment.cost().min_instances),
            async_wakes_per_day=args.wakes_per_day,
            batch_jobs_per_day=args.jobs_per_day,
        )
    except ValueError as err:
        raise ValueError(f"serving cost: {err}") from None
    spec = result.deployment.spec
    batch_types = load_catalog().sagemaker.transform_instance_types.types
    unavailable = (
        None
        if spec.instance_type in batch_types
        else f"batch transform does not offer {spec.instance_type} (SI103)"
    )
    price = estimate_cost(spec.instance_type, result.deployment.region, 1, 1)
    modes = compare_serving_costs(price, workload, batch_unavailable=unavailable)
    return {
        "daily_output_tokens": workload.daily_output_tokens,
        "output_tokens_per_second": throughput,
        "throughput_source": source,
        "usd_per_instance_hour": price.usd_per_hour,
        "price_note": f"{price.note}; async and batch at the real-time on-demand rate (the catalog's)",
        "modes": [m.as_dict() for m in modes],
    }


def format_costs(costs: dict[str, Any]) -> str:
    rows = [
        (
            m["mode"],
            "-" if m["instance_hours_per_day"] is None else f"{m['instance_hours_per_day']:.2f}",
            "-" if m["usd_per_day"] is None else f"${m['usd_per_day']:,.2f}",
            m["note"],
        )
        for m in costs["modes"]
    ]
    header = (
        f"Serving cost for {costs['daily_output_tokens']:,.0f} output tokens a day at "
        f"{costs['output_tokens_per_second']:,.1f} tokens/s per instance ({costs['throughput_source']}); "
        f"{costs['price_note']}"
    )
    return header + "\n" + render_table(["mode", "instance-h/day", "$/day", "how"], rows, max_width=70)


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _flatten(f"{prefix}.{key}" if prefix else str(key), item)
        return rows
    if isinstance(value, list):
        return [(prefix, "; ".join(map(str, value)) if value else "-")]
    return [(prefix, "-" if value is None else json.dumps(value) if isinstance(value, bool) else str(value))]


def describe_longest_sequence(memory: dict[str, Any]) -> str:
    """`memory.longest_sequence_that_fits` in words: beyond the model's context it is room, not a length
    (room for how many sequences of the full context the KV cache holds at once)."""
    if not memory.get("full_context_fits"):
        return str(memory["longest_sequence_that_fits"])
    count = memory["full_context_sequences_at_once"]
    sequences = "1 such sequence" if count == 1 else f"{count} such sequences"
    return (
        f"the model's full context fits ({memory['model_context_tokens']} tokens), with room for {sequences}"
    )


def _memory_rows(memory: dict[str, Any]) -> dict[str, Any]:
    shown = {k: v for k, v in memory.items() if k not in _MEMORY_JSON_ONLY}
    shown["longest_sequence_that_fits"] = describe_longest_sequence(memory)
    return shown


# Said in words on the longest_sequence_that_fits row of the text output.
_MEMORY_JSON_ONLY = ("model_context_tokens", "full_context_fits", "full_context_sequences_at_once")


def format_text(result: CheckResult) -> str:
    summary = result.deployment.summary()
    defaults = summary.pop("defaults")
    summary.pop("cost")  # one line below
    if summary["memory"] is not None:
        summary["memory"] = _memory_rows(summary["memory"])
    lines = ["Resolved deployment", render_table(["field", "value"], _flatten("", summary), max_width=80), ""]
    host = result.deployment.host
    if host is not None:
        name = host.inference_ami_version or "SageMaker's default host image"
        driver = "driver not documented" if host.driver is None else f"driver {host.driver}"
        lines += [f"Host assumed: {name} ({driver}): {host.reason}", ""]
    lines += [f"Cost: {result.deployment.cost().summary()}", ""]
    if defaults:
        lines += ["Defaults applied", *(f"  - {d}" for d in defaults), ""]
    if result.findings:
        rows = [(f.code, f.severity.value, f.message, f.fix) for f in result.findings]
        lines += ["Findings", render_table(["code", "severity", "message", "fix"], rows, max_width=56), ""]
    verdict = "DEPLOYABLE" if result.ok else "NOT DEPLOYABLE"
    lines.append(f"{verdict}: {len(result.errors)} error(s), {len(result.warnings)} warning(s)")
    return "\n".join(lines)
