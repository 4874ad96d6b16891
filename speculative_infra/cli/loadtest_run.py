"""Start, follow and fetch a distributed load test (the work behind `speculative-infra loadtest`).

Every wait is bounded: polls every --poll-seconds, stops following at --max-wait (the execution goes on).
Progress comes from Step Functions (the Distributed Map run's item counts) and, once a wave has ended,
from its workers' outputs in S3 (requests, failures and TTFT percentiles from their merged sketches).
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import BotoCoreError, ClientError

from speculative_infra.benchmark.distributed.merge import merged_sketches
from speculative_infra.benchmark.distributed.profile import LoadStep
from speculative_infra.benchmark.distributed.report import load_test_charts
from speculative_infra.benchmark.distributed.sketch import LatencySketch
from speculative_infra.benchmark.schema import ConfigError
from speculative_infra.safe_files import InputFileError, output_problem, parse_json, write_bytes

MAX_WAIT_S = 8 * 86_400.0
"""--max-wait: a week's test and its merge (EndpointLoadTest's longest); also the default."""
EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_STILL_RUNNING = 0, 1, 2, 3
MAX_RESULT_BYTES = 256 * 1024 * 1024
RESULT_FILES = ("results.json", "report.md")
UNSUPPORTED = (
    ("dataset", "--dataset (a dataset's read access is not granted to the workers yet)"),
    ("reuse_prompts", "--reuse-prompts (every arrival of a load test has its own prompt)"),
    ("output_length", "--output-length (it applies with --dataset)"),
)
NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
"""Step Functions' execution names (the console's rule; no spaces, at most 80)."""


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """What the options change in the construct's test (only what was given)."""
    out: dict[str, Any] = {}
    if args.step:
        out["steps"] = args.step
    for option, key in (
        ("workers", "workers"),
        ("wave_seconds", "wave_s"),
        ("drain_seconds", "drain_s"),
        ("burstiness", "burstiness"),
        ("arrival_seed", "seed"),
    ):
        if getattr(args, option) is not None:
            out[key] = getattr(args, option)
    workload = {
        key: getattr(args, option)
        for option, key in (
            ("input_tokens", "input_tokens"),
            ("output_tokens", "output_tokens"),
            ("shared_prefix_tokens", "shared_prefix_tokens"),
            ("seed", "seed"),
            ("temperature", "temperature"),
        )
        if getattr(args, option) is not None
    }
    if args.no_force_length:
        workload["force_output_length"] = False
    benchmark: dict[str, Any] = {}
    if workload:
        benchmark["workload"] = workload
    if args.slo:
        benchmark["slo"] = args.slo
    if args.timeout is not None:
        benchmark["load"] = {"request_timeout_s": args.timeout}
    if benchmark:
        out["benchmark"] = benchmark
    return out


def problem(args: argparse.Namespace) -> str | None:
    """A combination the state machine would refuse, found before anything starts."""
    for option, text in UNSUPPORTED:
        if getattr(args, option, None):
            return f"{text} is not supported by loadtest"
    if args.step:
        try:
            steps = [LoadStep.from_dict(step) for step in args.step]
        except ConfigError as error:
            return f"--step: {error}"
        if len({s.open_loop for s in steps}) > 1:
            return "--step: give all open-loop steps (RATE:SECONDS) or all closed-loop ones (cN:SECONDS)"
    if args.dataset_format != "auto":
        return "--dataset-format applies with --dataset, which loadtest does not support"
    if args.name is not None and not NAME.fullmatch(args.name):
        return f"--name: letters, digits, - and _ only, at most 80, got {args.name!r}"
    if args.max_wait is not None and args.max_wait > MAX_WAIT_S:
        return f"--max-wait: at most {MAX_WAIT_S:g} s"
    return output_problem(args.out / "results.json")


def _client(service: str, region: str) -> Any:
    import boto3

    return boto3.client(service, region_name=region)  # type: ignore[call-overload]


def run_loadtest(
    args: argparse.Namespace,
    *,
    sfn: Any = None,
    s3: Any = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
) -> int:
    found = problem(args)
    if found is not None:
        print(f"speculative-infra loadtest: error: {found}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return _start_and_follow(args, sfn, s3, sleep, clock, log)
    except (BotoCoreError, ClientError, InputFileError) as error:  # AWS said no, or sent what we cannot read
        log(f"speculative-infra loadtest: error: {error}")
        return EXIT_INCOMPLETE


def _start_and_follow(
    args: argparse.Namespace,
    sfn: Any,
    s3: Any,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    log: Callable[[str], None],
) -> int:
    region = args.state_machine_arn.split(":")[3]
    sfn = sfn or _client("stepfunctions", region)
    # Seconds and a random suffix: two starts in the same second do not collide.
    name = (
        args.name or "loadtest-" + datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + f"-{secrets.token_hex(3)}"
    )
    started = sfn.start_execution(
        stateMachineArn=args.state_machine_arn, name=name, input=json.dumps({"overrides": overrides(args)})
    )
    execution = started["executionArn"]
    print(execution)
    if args.no_wait:
        return EXIT_OK
    follow = Follow(sfn, s3, region, execution, log)
    deadline = clock() + (args.max_wait if args.max_wait is not None else MAX_WAIT_S)
    while True:
        described = sfn.describe_execution(executionArn=execution)
        status = described["status"]
        if status != "RUNNING":
            break
        follow.progress()
        if clock() >= deadline:
            log(f"still running after --max-wait; follow it in the console: {execution}")
            return EXIT_STILL_RUNNING
        sleep(min(args.poll_seconds, max(0.0, deadline - clock())) or args.poll_seconds)
    if status != "SUCCEEDED":
        log(
            f"the load test {status.lower()}: {described.get('error', '')} {described.get('cause', '')}".strip()
        )
        return EXIT_INCOMPLETE
    output = parse_json(described.get("output") or "{}", source="the execution's output")
    written = follow.fetch(output["results_uri"], args.out)
    log(f"{output['status']}: {output['requests']} requests; wrote {', '.join(str(p) for p in written)}")
    if output.get("status") != "complete":
        log(f"{output['expected'] - output['reported']} of {output['expected']} worker runs did not report")
        return EXIT_INCOMPLETE
    return EXIT_OK


class Follow:
    """Progress and results of one execution."""

    def __init__(self, sfn: Any, s3: Any, region: str, execution: str, log: Callable[[str], None]) -> None:
        self._sfn, self._s3, self._region, self._execution, self._log = sfn, s3, region, execution, log
        self._plan: dict[str, Any] | None = None
        self._reported: set[int] = set()

    def _s3_client(self) -> Any:
        if self._s3 is None:
            self._s3 = _client("s3", self._region)
        return self._s3

    def plan(self) -> dict[str, Any] | None:
        """The Plan step's output, once it has run (from the execution's history)."""
        if self._plan is None:
            history = self._sfn.get_execution_history(executionArn=self._execution, maxResults=50)
            for event in history["events"]:
                details = event.get("taskSucceededEventDetails")
                if details and '"run_prefix"' in details.get("output", ""):
                    payload = parse_json(details["output"], source="the Plan step's output").get(
                        "Payload", {}
                    )
                    if payload.get("ok"):
                        self._plan = payload
        return self._plan

    def progress(self) -> None:
        runs = self._sfn.list_map_runs(executionArn=self._execution).get("mapRuns", [])
        if runs:
            counts = self._sfn.describe_map_run(mapRunArn=runs[0]["mapRunArn"])["itemCounts"]
            self._log(
                f"workers: {counts['succeeded']} done, {counts['running']} running or waiting for their wave, "
                f"{counts['failed']} failed, of {counts['total']}"
            )
        plan = self.plan()
        if plan is not None:
            self._wave_lines(plan)

    def _wave_lines(self, plan: dict[str, Any]) -> None:
        """One line per wave whose workers have all written their outputs."""
        s3 = self._s3_client()
        for wave in range(int(plan["waves"])):
            if wave in self._reported:
                continue
            docs = []
            for worker in range(int(plan["workers"])):
                key = f"{plan['run_prefix']}workers/wave-{wave:05d}/worker-{worker:04d}.json"
                try:
                    body = s3.get_object(Bucket=plan["bucket"], Key=key)["Body"].read(MAX_RESULT_BYTES)
                except s3.exceptions.NoSuchKey:
                    break  # not written yet (or never: a skipped or failed worker); later waves may be done
                docs.append(parse_json(body.decode("utf-8"), source=key))
            if len(docs) < int(plan["workers"]):
                continue
            self._reported.add(wave)
            ok = [d for d in docs if d.get("status") == "ok"]
            requests = sum(int(d.get("requests", 0)) for d in ok)
            ttft = LatencySketch()
            for sketches in merged_sketches(ok, "steps").values():
                ttft.merge(sketches["ttft_ms"])
            p50, p99 = ttft.percentile(50), ttft.percentile(99)
            self._log(
                f"wave {wave + 1}/{plan['waves']}: {requests} requests from {len(ok)}/{len(docs)} workers; "
                f"TTFT p50 {_ms(p50)}, p99 {_ms(p99)}"
            )

    def fetch(self, results_uri: str, out: Path) -> list[Path]:
        """results.json, report.md and the charts, from the run's folder into ``out``."""
        parsed = urlparse(results_uri)
        bucket, prefix = parsed.netloc, parsed.path.lstrip("/").rsplit("/", 1)[0] + "/"
        s3 = self._s3_client()
        out.mkdir(parents=True, exist_ok=True)
        written = []
        result: dict[str, Any] | None = None
        for name in RESULT_FILES:
            body = s3.get_object(Bucket=bucket, Key=prefix + name)["Body"].read(MAX_RESULT_BYTES + 1)
            if len(body) > MAX_RESULT_BYTES:
                raise InputFileError(f"s3://{bucket}/{prefix}{name}", f"larger than {MAX_RESULT_BYTES} bytes")
            write_bytes(out / name, body)
            written.append(out / name)
            if name == "results.json":
                result = parse_json(body.decode("utf-8"), source=results_uri)
        assert result is not None
        for name, svg in load_test_charts(result).items():  # drawn here: the same code as the merge's
            write_bytes(out / name, svg.encode())
            written.append(out / name)
        return written


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f} ms"
