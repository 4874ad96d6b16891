"""`speculative-infra bench`: measure an endpoint at each concurrency or request rate (bench_run runs it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from speculative_infra.cli.bench_options import (
    add_cost_arguments,
    add_slo_and_timeout_arguments,
    add_workload_arguments,
    concurrency_levels,
    http_url,
    int_at_least,
    non_negative_float,
    positive_float,
    request_rates,
)
from speculative_infra.cli.bench_progress import PLAIN_INTERVAL_S

_EPILOG = f"""\
outputs: --output results.json also writes results.csv (one row per level) and
results.requests.jsonl (one line per request), rewritten after every level; a run that never
started (no region, no AWS credentials or refused ones) writes none.
progress: a bar on a terminal; otherwise a line every {PLAIN_INTERVAL_S:g} s with the level, the requests
done and an estimate of the time left (--quiet: none).
exit status: 0 all requests succeeded; 1 some requests failed; 2 bad arguments;
3 the benchmark could not run (no region, unreachable target, every request of a level failing);
130 interrupted (what was measured is kept). docs/benchmarking.md explains the metrics and options."""


def add_bench_command(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench",
        help="measure an endpoint: latency, tokens/s and $ per million tokens at each concurrency",
        description="Closed-loop streaming benchmark of a SageMaker endpoint or an OpenAI-compatible server. "
        "Metric names follow `vllm bench serve`.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_target_arguments(bench.add_argument_group("target (one of --endpoint or --url)"))
    add_workload_arguments(bench.add_argument_group("workload"))
    _add_load_arguments(bench.add_argument_group("load"))
    add_cost_arguments(bench.add_argument_group("cost"))
    out = bench.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, required=True, metavar="results.json")
    out.add_argument("--label", help="name of this configuration in reports")
    out.add_argument("--quiet", action="store_true", help="no progress on stderr")
    bench.set_defaults(handler=lambda args: _run_bench(args, bench))


def _run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from speculative_infra.cli.bench_run import run_bench  # the engine loads to run, not to build the parser

    return run_bench(args, parser)


def _add_target_arguments(target: argparse._ArgumentGroup) -> None:
    choice = target.add_mutually_exclusive_group(required=True)
    choice.add_argument("--endpoint", metavar="NAME", help="SageMaker endpoint name")
    choice.add_argument(
        "--url", metavar="BASE_URL", type=http_url, help="OpenAI-compatible server, e.g. http://host:8000"
    )
    target.add_argument(
        "--inference-component", metavar="NAME", help="inference component to invoke (--endpoint)"
    )
    target.add_argument("--region", help="AWS region (--endpoint; default: the AWS configuration's)")
    target.add_argument(
        "--sagemaker-client",
        choices=["asyncio", "boto3"],
        help="for --endpoint: asyncio (every stream on one event loop, default) or boto3 (a thread per stream)",
    )
    target.add_argument(
        "--container",
        choices=["vllm", "lmi"],
        help="payload format for --endpoint: vllm (OpenAI chat, default) or lmi",
    )
    target.add_argument("--endpoint-url", metavar="URL", type=http_url, help="SageMaker runtime URL override")
    target.add_argument("--api", choices=["chat", "completions"], help="API for --url (default: chat)")
    target.add_argument("--model", help="model name in the payload (--url default: asked from /v1/models)")


def _add_load_arguments(load: argparse._ArgumentGroup) -> None:
    load.add_argument(
        "--mode",
        choices=["stream", "batch"],
        default="stream",
        help="stream (levels of concurrency or rate, the default) or batch: a batch transform job's run over "
        "--dataset (every record once at one --concurrency, the job's MaxConcurrentTransforms x instances, "
        "no filler), then the job's duration, cost and settings",
    )
    load.add_argument(
        "--concurrency",
        type=concurrency_levels,
        metavar="LIST",
        help="levels, comma-separated (default: 1,2,4,8,16,32)",
    )
    load.add_argument(
        "--request-rate",
        type=request_rates,
        metavar="LIST",
        help="open loop instead: requests/s of each level, comma-separated (arrivals on an absolute clock)",
    )
    load.add_argument(
        "--burstiness",
        type=positive_float,
        default=1.0,
        metavar="X",
        help="open loop: gamma shape of the gaps between arrivals (1 = Poisson, default; < 1 burstier)",
    )
    load.add_argument(
        "--max-concurrency",
        type=int_at_least(1),
        metavar="N",
        help="open loop: at most N requests open at once (a waiting arrival counts as late)",
    )
    load.add_argument(
        "--requests-per-level",
        type=int_at_least(1),
        metavar="N",
        help="measured requests (default: max(32, 8 x C); open loop: max(32, 10 s of arrivals))",
    )
    load.add_argument(
        "--warmup",
        type=int_at_least(0),
        metavar="N",
        help="uncounted requests per level (default: C; open loop: 1 s of arrivals)",
    )
    load.add_argument(
        "--workers",
        type=int_at_least(1),
        default=1,
        metavar="N",
        help="share each level over N processes, one event loop each (default: 1; about 256 streams per core)",
    )
    load.add_argument(
        "--rate-sweep",
        type=positive_float,
        metavar="R",
        help="find the highest request rate within --slo: open-loop levels from R requests/s, doubling until "
        "one misses, then bisecting (--rate-sweep-steps); instead of --concurrency/--request-rate",
    )
    load.add_argument(
        "--rate-sweep-max", type=positive_float, metavar="R", help="do not probe above R requests/s"
    )
    load.add_argument(
        "--rate-sweep-steps",
        type=int_at_least(0),
        default=3,
        metavar="N",
        help="bisection steps (default: 3)",
    )
    load.add_argument(
        "--slo-attainment",
        type=positive_float,
        default=0.9,
        metavar="F",
        help="rate sweep: share of requests that must meet the SLOs for a rate to count as sustained (default: 0.9)",
    )
    add_slo_and_timeout_arguments(load)
    load.add_argument(
        "--time-budget", type=positive_float, metavar="S", help="stop the sweep after S seconds"
    )
    load.add_argument(
        "--ramp-up", type=non_negative_float, default=0.0, metavar="S", help="spread slot starts"
    )
    load.add_argument(
        "--no-sustain", action="store_true", help="no filler requests while the last ones finish"
    )
    load.add_argument(
        "--max-retries", type=int_at_least(0), default=3, metavar="N", help="throttling retries"
    )
