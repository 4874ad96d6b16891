"""`speculative-infra check SPEC.yaml`: exit 0 deployable, 1 errors found, 2 unreadable or invalid spec."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from speculative_infra.check import CheckResult, check
from speculative_infra.cli.tables import render_table
from speculative_infra.facts import CONTEXT_FILE, ContextFileError, facts_from_context, read_context_file
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
    print(json.dumps(result.as_dict(), indent=2) if args.format == "json" else format_text(result))
    return EXIT_OK if result.ok else EXIT_FINDINGS


def _flatten(prefix: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, dict):
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _flatten(f"{prefix}.{key}" if prefix else str(key), item)
        return rows
    if isinstance(value, list):
        return [(prefix, "; ".join(map(str, value)) if value else "-")]
    return [(prefix, "-" if value is None else json.dumps(value) if isinstance(value, bool) else str(value))]


def format_text(result: CheckResult) -> str:
    summary = result.deployment.summary()
    defaults = summary.pop("defaults")
    summary.pop("cost")  # one line below
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
