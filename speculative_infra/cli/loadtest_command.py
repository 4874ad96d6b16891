"""`speculative-infra loadtest`: start EndpointLoadTest's state machine, follow it, fetch its results.

The options lay themselves over the construct's test (steps, workers, workload, SLOs); none given runs
the test as the construct defines it. loadtest_run does the starting, polling and fetching.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from speculative_infra.cli.bench_options import (
    add_slo_and_timeout_arguments,
    add_workload_arguments,
    int_at_least,
    positive_float,
)

_ARN = re.compile(r"arn:aws[a-z-]*:states:[a-z0-9-]+:\d{12}:stateMachine:[A-Za-z0-9_-]{1,80}")
_STEP = re.compile(r"(?:(?P<c>c)(?P<conc>\d+)|(?P<rate>[0-9.]+)(?:-(?P<ramp>[0-9.]+))?):(?P<seconds>[0-9.]+)")

_EPILOG = """\
steps: RATE:SECONDS (open loop, e.g. 5:600 then 15:1200), START-END:SECONDS (a ramp of the rate) or
cCONCURRENCY:SECONDS (closed loop, e.g. c32:300); all open or all closed.
outputs: results.json, report.md and the SVG charts of the merged run, in --out.
exit status: 0 complete; 1 the execution failed or some workers did not report (results kept);
2 bad arguments; 3 still running at --max-wait (the execution goes on; its ARN is printed).
docs/load-testing.md explains the profile, the merge and the limits."""


def state_machine_arn(text: str) -> str:
    if not _ARN.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"expected a Step Functions state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>, "
            f"EndpointLoadTest's StateMachineArn output), got {text!r}"
        )
    return text


def load_step(text: str) -> dict[str, Any]:
    found = _STEP.fullmatch(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(
            f"expected RATE:SECONDS, START-END:SECONDS or cN:SECONDS, got {text!r}"
        )
    try:
        seconds = float(found["seconds"])
        if found["c"]:
            return {"duration_s": seconds, "concurrency": int(found["conc"])}
        step: dict[str, Any] = {"duration_s": seconds, "request_rate": float(found["rate"])}
        if found["ramp"]:
            step["ramp_to_rate"] = float(found["ramp"])
        return step
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers in {text!r}") from None


def add_loadtest_command(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = subparsers.add_parser(
        "loadtest",
        help="run a distributed load test (EndpointLoadTest's state machine) and fetch its results",
        description="Start an execution of an EndpointLoadTest state machine, show its progress (wave, "
        "requests, TTFT percentiles) while it runs, and write its merged, scaling-aligned results locally.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("state_machine_arn", type=state_machine_arn, metavar="STATE_MACHINE_ARN")
    profile = parser.add_argument_group("profile (default: the construct's)")
    profile.add_argument(
        "--step", action="append", type=load_step, metavar="LOAD:SECONDS", help="repeat, in order"
    )
    profile.add_argument("--workers", type=int_at_least(1), metavar="N", help="Lambda workers per wave")
    profile.add_argument("--wave-seconds", type=positive_float, metavar="S", help="sending time of one wave")
    profile.add_argument(
        "--drain-seconds", type=positive_float, metavar="S", help="time to finish after a wave"
    )
    profile.add_argument(
        "--burstiness", type=positive_float, metavar="B", help="gamma shape of the gaps (1: Poisson)"
    )
    profile.add_argument("--arrival-seed", metavar="TEXT", help="seeds the arrival schedule")
    work = parser.add_argument_group("workload (default: the construct's)")
    add_workload_arguments(work)
    add_slo_and_timeout_arguments(parser)
    # None: not given, so the construct's own value stands (bench's defaults would override it).
    parser.set_defaults(input_tokens=None, output_tokens=None, shared_prefix_tokens=None, timeout=None)
    run = parser.add_argument_group("running")
    run.add_argument(
        "--out", type=Path, default=Path("load-test-results"), help="default: ./load-test-results"
    )
    run.add_argument("--name", metavar="NAME", help="execution name (default: loadtest-<UTC time>)")
    run.add_argument(
        "--poll-seconds",
        type=positive_float,
        default=30.0,
        metavar="S",
        help="between progress checks (default: 30)",
    )
    run.add_argument(
        "--max-wait",
        type=positive_float,
        metavar="S",
        help="stop following after this long (default: 8 days, a week's test and its merge)",
    )
    run.add_argument("--no-wait", action="store_true", help="start the execution, print its ARN and return")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from speculative_infra.cli.loadtest_run import run_loadtest

    return run_loadtest(args)
