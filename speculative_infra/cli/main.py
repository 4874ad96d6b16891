"""Entry point of the `speculative-infra` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from speculative_infra._version import __version__
from speculative_infra.cli.bench_command import add_bench_command
from speculative_infra.cli.catalog_command import add_catalog_command
from speculative_infra.cli.check_command import add_check_command
from speculative_infra.cli.facts_command import add_facts_command
from speculative_infra.cli.loadtest_command import add_loadtest_command
from speculative_infra.cli.plan_command import add_plan_command
from speculative_infra.cli.preflight_command import add_preflight_command
from speculative_infra.cli.report_command import add_report_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="speculative-infra",
        description="Check, plan and benchmark LLM deployments on SageMaker with speculative decoding.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    add_check_command(subparsers)
    add_catalog_command(subparsers)
    add_facts_command(subparsers)
    add_preflight_command(subparsers)
    add_plan_command(subparsers)
    add_bench_command(subparsers)  # the benchmark engine loads only when bench or report runs
    add_report_command(subparsers)
    add_loadtest_command(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("speculative-infra: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
