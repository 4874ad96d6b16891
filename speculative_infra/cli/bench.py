"""`speculative-infra bench` and `speculative-infra report`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import re
import signal
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal
from urllib.parse import urlparse

from speculative_infra.benchmark.batch_projection import project_batch
from speculative_infra.benchmark.config import (
    DEFAULT_CONCURRENCY_LEVELS,
    BenchmarkConfig,
    ConfigError,
    CostConfig,
    DatasetConfig,
    HttpTarget,
    LoadConfig,
    RateSweepConfig,
    SageMakerTarget,
    SloConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.datasets import DatasetPrompt, dataset_prompts
from speculative_infra.benchmark.files import OutputPaths, load_results
from speculative_infra.benchmark.rate_sweep import run_rate_sweep
from speculative_infra.benchmark.report_markdown import result_problem, results_problem
from speculative_infra.benchmark.results import BenchmarkResult
from speculative_infra.benchmark.sweep import BenchmarkState, LevelReport, new_benchmark, run_benchmark
from speculative_infra.cli.bench_files import ResultFiles
from speculative_infra.cli.bench_progress import PLAIN_INTERVAL_S, ProgressBar, level_name
from speculative_infra.safe_files import MAX_RESULTS_BYTES, MIB, InputFileError, output_problem, write_text

EXIT_OK = 0
EXIT_REQUEST_FAILURES = 1
EXIT_USAGE = 2
EXIT_NOT_RUN = 3
EXIT_INTERRUPTED = 130
_NOTHING_WRITTEN = "the run never started, so no results were written"

_EPILOG = f"""\
outputs: --output results.json also writes results.csv (one row per level) and
results.requests.jsonl (one line per request), rewritten after every level; a run that never
started (no region, no AWS credentials or refused ones) writes none.
progress: a bar on a terminal; otherwise a line every {PLAIN_INTERVAL_S:g} s with the level, the requests
done and an estimate of the time left (--quiet: none).
exit status: 0 all requests succeeded; 1 some requests failed; 2 bad arguments;
3 the benchmark could not run (no region, unreachable target, every request of a level failing);
130 interrupted (what was measured is kept). docs/benchmarking.md explains the metrics and options."""

# Which option a config field comes from, to name it in error messages.
_OPTION_FOR_FIELD = {
    "endpoint_name": "--endpoint",
    "inference_component_name": "--inference-component",
    "region": "--region",
    "container": "--container",
    "endpoint_url": "--endpoint-url",
    "base_url": "--url",
    "api": "--api",
    "model": "--model",
    "input_tokens": "--input-tokens",
    "output_tokens": "--output-tokens",
    "shared_prefix_tokens": "--shared-prefix-tokens",
    "seed": "--seed",
    "path": "--dataset",
    "format": "--dataset-format",
    "output_length": "--output-length",
    "temperature": "--temperature",
    "concurrency_levels": "--concurrency",
    "request_rates": "--request-rate",
    "burstiness": "--burstiness",
    "max_concurrency": "--max-concurrency",
    "ttft_ms": "--slo",
    "tpot_ms": "--slo",
    "e2el_ms": "--slo",
    "client": "--sagemaker-client",
    "workers": "--workers",
    "start_rate": "--rate-sweep",
    "max_rate": "--rate-sweep-max",
    "bisection_steps": "--rate-sweep-steps",
    "min_attainment": "--slo-attainment",
    "rate_sweep": "--rate-sweep",
    "requests_per_level": "--requests-per-level",
    "warmup_requests": "--warmup",
    "request_timeout_s": "--timeout",
    "time_budget_s": "--time-budget",
    "ramp_up_s": "--ramp-up",
    "max_retries": "--max-retries",
    "price_per_hour": "--price-per-hour",
    "instance_count": "--instance-count",
    "label": "--label",
    "mode": "--mode",
}


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def _finite_float(text: str) -> float:
    """A number; Python's float() also reads 'nan' and 'inf', which no option means."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    value = _finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _non_negative_float(text: str) -> float:
    value = _finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _levels(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        levels = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 1,2,4, got {text!r}"
        ) from None
    if not levels or any(c < 1 for c in levels):
        raise argparse.ArgumentTypeError(f"levels must be integers >= 1, got {text!r}")
    return levels


def _rates(text: str) -> tuple[float, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        rates = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers such as 0.5,1,2, got {text!r}"
        ) from None
    if not rates or any(not (math.isfinite(r) and r > 0) for r in rates):
        raise argparse.ArgumentTypeError(f"request rates must be numbers > 0 (requests/s), got {text!r}")
    return rates


_SLO_KEYS = ("ttft_ms", "tpot_ms", "e2el_ms")


def _slo(text: str) -> dict[str, float]:
    """``ttft_ms=500,tpot_ms=50``: the objectives a request must all meet to count as good."""
    objectives: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or key not in _SLO_KEYS:
            raise argparse.ArgumentTypeError(
                f"expected KEY=MS pairs with KEY one of {', '.join(_SLO_KEYS)}, got {part!r}"
            )
        objectives[key] = _positive_float(value)
    if not objectives:
        raise argparse.ArgumentTypeError("give at least one objective, e.g. ttft_ms=500")
    return objectives


def _http_url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(
            f"expected an http(s) URL such as http://localhost:8000, got {text!r}"
        )
    try:
        _ = parsed.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port in {text!r}") from None
    return text


def add_bench_commands(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``bench`` and ``report``; each handler takes the parsed args and returns an exit code."""
    bench = subparsers.add_parser(
        "bench",
        help="measure an endpoint: latency, tokens/s and $ per million tokens at each concurrency",
        description="Closed-loop streaming benchmark of a SageMaker endpoint or an OpenAI-compatible server. "
        "Metric names follow `vllm bench serve`.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    target = bench.add_argument_group("target (one of --endpoint or --url)")
    choice = target.add_mutually_exclusive_group(required=True)
    choice.add_argument("--endpoint", metavar="NAME", help="SageMaker endpoint name")
    choice.add_argument(
        "--url", metavar="BASE_URL", type=_http_url, help="OpenAI-compatible server, e.g. http://host:8000"
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
    target.add_argument(
        "--endpoint-url", metavar="URL", type=_http_url, help="SageMaker runtime URL override"
    )
    target.add_argument("--api", choices=["chat", "completions"], help="API for --url (default: chat)")
    target.add_argument("--model", help="model name in the payload (--url default: asked from /v1/models)")

    work = bench.add_argument_group("workload")
    work.add_argument(
        "--input-tokens", type=_int_at_least(1), default=1000, metavar="N", help="default: 1000"
    )
    work.add_argument("--output-tokens", type=_int_at_least(1), default=560, metavar="N", help="default: 560")
    work.add_argument(
        "--shared-prefix-tokens",
        type=_int_at_least(0),
        default=0,
        metavar="N",
        help="prefix shared by all requests (exercises prefix caching; default: 0)",
    )
    work.add_argument(
        "--dataset",
        metavar="PATH",
        help="real prompts instead of generated words: a ShareGPT JSON file, JSON lines of prompts or "
        "messages, or SageMaker data capture (a file or an s3://bucket/prefix)",
    )
    work.add_argument(
        "--dataset-format",
        choices=["auto", "sharegpt", "jsonl", "datacapture"],
        default="auto",
        help="how to read --dataset (default: auto, from its first bytes)",
    )
    work.add_argument(
        "--output-length",
        choices=["forced", "record"],
        help="with --dataset: forced (every request generates --output-tokens; the default) or record "
        "(the length each record asked for, else --output-tokens; the default of --mode batch)",
    )
    work.add_argument("--seed", type=int, help="prompt seed (default: random, recorded in the results)")
    work.add_argument(
        "--reuse-prompts", action="store_true", help="same prompts at every level (prefix-cache hits)"
    )
    work.add_argument("--no-force-length", action="store_true", help="do not send ignore_eos/min_tokens")
    work.add_argument(
        "--temperature", type=_finite_float, help="sampling temperature (default: the server's)"
    )

    load = bench.add_argument_group("load")
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
        type=_levels,
        metavar="LIST",
        help="levels, comma-separated (default: 1,2,4,8,16,32)",
    )
    load.add_argument(
        "--request-rate",
        type=_rates,
        metavar="LIST",
        help="open loop instead: requests/s of each level, comma-separated (arrivals on an absolute clock)",
    )
    load.add_argument(
        "--burstiness",
        type=_positive_float,
        default=1.0,
        metavar="X",
        help="open loop: gamma shape of the gaps between arrivals (1 = Poisson, default; < 1 burstier)",
    )
    load.add_argument(
        "--max-concurrency",
        type=_int_at_least(1),
        metavar="N",
        help="open loop: at most N requests open at once (a waiting arrival counts as late)",
    )
    load.add_argument(
        "--requests-per-level",
        type=_int_at_least(1),
        metavar="N",
        help="measured requests (default: max(32, 8 x C); open loop: max(32, 10 s of arrivals))",
    )
    load.add_argument(
        "--warmup",
        type=_int_at_least(0),
        metavar="N",
        help="uncounted requests per level (default: C; open loop: 1 s of arrivals)",
    )
    load.add_argument(
        "--workers",
        type=_int_at_least(1),
        default=1,
        metavar="N",
        help="share each level over N processes, one event loop each (default: 1; about 256 streams per core)",
    )
    load.add_argument(
        "--rate-sweep",
        type=_positive_float,
        metavar="R",
        help="find the highest request rate within --slo: open-loop levels from R requests/s, doubling until "
        "one misses, then bisecting (--rate-sweep-steps); instead of --concurrency/--request-rate",
    )
    load.add_argument(
        "--rate-sweep-max", type=_positive_float, metavar="R", help="do not probe above R requests/s"
    )
    load.add_argument(
        "--rate-sweep-steps",
        type=_int_at_least(0),
        default=3,
        metavar="N",
        help="bisection steps (default: 3)",
    )
    load.add_argument(
        "--slo-attainment",
        type=_positive_float,
        default=0.9,
        metavar="F",
        help="rate sweep: share of requests that must meet the SLOs for a rate to count as sustained (default: 0.9)",
    )
    load.add_argument(
        "--slo",
        type=_slo,
        metavar="KEY=MS,...",
        help="objectives for goodput: any of ttft_ms, tpot_ms, e2el_ms (e.g. ttft_ms=500,tpot_ms=50)",
    )
    load.add_argument(
        "--timeout", type=_positive_float, default=300.0, metavar="S", help="per request (default: 300)"
    )
    load.add_argument(
        "--time-budget", type=_positive_float, metavar="S", help="stop the sweep after S seconds"
    )
    load.add_argument(
        "--ramp-up", type=_non_negative_float, default=0.0, metavar="S", help="spread slot starts"
    )
    load.add_argument(
        "--no-sustain", action="store_true", help="no filler requests while the last ones finish"
    )
    load.add_argument(
        "--max-retries", type=_int_at_least(0), default=3, metavar="N", help="throttling retries"
    )

    price = bench.add_argument_group("cost")
    price.add_argument("--price-per-hour", type=_positive_float, metavar="X", help="$ per instance-hour")
    price.add_argument(
        "--instance-type",
        metavar="TYPE",
        help="instance type of the endpoint: its on-demand price comes from the catalog unless --price-per-hour",
    )
    price.add_argument(
        "--instance-count", type=_int_at_least(1), metavar="N", help="instances serving (default: 1)"
    )

    out = bench.add_argument_group("output")
    out.add_argument("--output", "-o", type=Path, required=True, metavar="results.json")
    out.add_argument("--label", help="name of this configuration in reports")
    out.add_argument("--quiet", action="store_true", help="no progress on stderr")
    bench.set_defaults(handler=lambda args: run_bench(args, bench))

    report = subparsers.add_parser(
        "report",
        help="plots and a Markdown summary from results files",
        description="Render PNG plots and report.md from one or more `bench` results files (several = compared).",
        epilog="exit status: 0 written; 2 a results file is missing, unreadable, not a results document or past "
        "the limits (docs/security.md, Hostile input), or --out cannot be written there; 3 a disk error while "
        "writing.",
    )
    report.add_argument("results", nargs="+", type=Path, metavar="results.json")
    report.add_argument("--out", type=Path, required=True, metavar="DIR")
    report.set_defaults(handler=lambda args: run_report(args, report))


def _usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _check_batch_mode(args: argparse.Namespace) -> str | None:
    if args.dataset is None:
        return "argument --mode batch: requires --dataset (the records the transform job will read)"
    if args.concurrency is None or len(args.concurrency) != 1:
        return (
            "argument --mode batch: requires one --concurrency N, the job's MaxConcurrentTransforms x its "
            "instance count (BatchInference.max_concurrent_transforms)"
        )
    not_in_batch = {
        "--request-rate": args.request_rate is not None,
        "--rate-sweep": args.rate_sweep is not None,
        "--requests-per-level": args.requests_per_level is not None,
        "--reuse-prompts": args.reuse_prompts,
        "--no-sustain": args.no_sustain,
    }
    for option, given in not_in_batch.items():
        if given:
            return (
                f"argument {option}: not with --mode batch (the run sends every record once, as the job does)"
            )
    return None


def _check_combinations(args: argparse.Namespace) -> str | None:
    if args.mode == "batch":
        problem = _check_batch_mode(args)
        if problem is not None:
            return problem
    sagemaker_only = {
        "--inference-component": args.inference_component,
        "--region": args.region,
        "--container": args.container,
        "--endpoint-url": args.endpoint_url,
    }
    if args.url is not None:
        for option, value in sagemaker_only.items():
            if value is not None:
                return f"argument {option}: only valid with --endpoint"
    if args.endpoint is not None and args.api is not None:
        return "argument --api: only valid with --url"
    if args.request_rate is None:
        if args.max_concurrency is not None:
            return (
                "argument --max-concurrency: only valid with --request-rate (in a closed loop, --concurrency)"
            )
        if args.burstiness != 1.0:
            return "argument --burstiness: only valid with --request-rate"
    elif args.ramp_up:
        return "argument --ramp-up: only valid in a closed loop (without --request-rate)"
    if args.rate_sweep is not None:
        if args.slo is None:
            return "argument --rate-sweep: requires --slo (a rate is sustained when its requests meet it)"
        if args.request_rate is not None:
            return "argument --rate-sweep: not with --request-rate (the sweep chooses the rates)"
    elif args.rate_sweep_max is not None:
        return "argument --rate-sweep-max: only valid with --rate-sweep"
    if args.sagemaker_client is not None and args.endpoint is None:
        return "argument --sagemaker-client: only valid with --endpoint"
    if args.instance_count is not None and args.price_per_hour is None and args.instance_type is None:
        return "argument --instance-count: requires --price-per-hour or --instance-type"
    if args.instance_type is not None and args.price_per_hour is None and _catalog_price(args) is None:
        return (
            f"argument --instance-type: the catalog has no price for {args.instance_type!r}; "
            "give --price-per-hour (`speculative-infra catalog instances` lists the known prices)"
        )
    if args.dataset is None and (args.dataset_format != "auto" or args.output_length is not None):
        return "arguments --dataset-format and --output-length: only valid with --dataset"
    if args.dataset is not None and args.shared_prefix_tokens:
        return "argument --shared-prefix-tokens: not with --dataset (the records are the prompts)"
    if args.shared_prefix_tokens >= args.input_tokens:
        return (
            f"argument --shared-prefix-tokens: must be smaller than --input-tokens ({args.input_tokens}), "
            f"got {args.shared_prefix_tokens}"
        )
    return None


def _catalog_price(args: argparse.Namespace) -> float | None:
    """On-demand $/hour of --instance-type from the catalog (the region's price list when there is one)."""
    if args.instance_type is None:
        return None
    from speculative_infra.catalog import load_catalog  # only when asked: keeps `bench` start-up light

    price = load_catalog().price(args.instance_type, args.region)
    return price.usd_per_hour if price is not None else None


def _output_length(args: argparse.Namespace) -> Literal["forced", "record"]:
    if args.output_length is not None:
        return args.output_length  # type: ignore[no-any-return]
    return "record" if args.mode == "batch" else "forced"


def build_config(args: argparse.Namespace, *, batch_records: int | None = None) -> BenchmarkConfig:
    """The engine configuration from parsed ``bench`` arguments (raises ConfigError naming the field).
    ``batch_records``: --mode batch, the dataset's size (each record is sent once)."""
    target: SageMakerTarget | HttpTarget
    if args.endpoint is not None:
        target = SageMakerTarget(
            endpoint_name=args.endpoint,
            inference_component_name=args.inference_component,
            region=args.region,
            container=args.container or "vllm",
            endpoint_url=args.endpoint_url,
            model=args.model,
            client=args.sagemaker_client or "auto",
        )
    else:
        target = HttpTarget(base_url=args.url, api=args.api or "chat", model=args.model)
    return BenchmarkConfig(
        target=target,
        workload=WorkloadConfig(
            input_tokens=args.input_tokens,
            output_tokens=args.output_tokens,
            shared_prefix_tokens=args.shared_prefix_tokens,
            seed=args.seed,
            fresh_prompts_per_level=not args.reuse_prompts,
            force_output_length=not args.no_force_length,
            temperature=args.temperature,
            dataset=DatasetConfig(
                path=args.dataset, format=args.dataset_format, output_length=_output_length(args)
            )
            if args.dataset is not None
            else None,
        ),
        load=LoadConfig(
            concurrency_levels=args.concurrency or DEFAULT_CONCURRENCY_LEVELS,
            request_rates=args.request_rate,
            burstiness=args.burstiness,
            max_concurrency=args.max_concurrency,
            workers=args.workers,
            requests_per_level=batch_records if batch_records is not None else args.requests_per_level,
            warmup_requests=args.warmup,
            request_timeout_s=args.timeout,
            time_budget_s=args.time_budget,
            ramp_up_s=args.ramp_up,
            sustain_load=not args.no_sustain and batch_records is None,
            max_retries=args.max_retries,
        ),
        cost=CostConfig(
            price_per_hour=args.price_per_hour if args.price_per_hour is not None else _catalog_price(args),
            instance_count=args.instance_count or 1,
        ),
        slo=SloConfig(**args.slo) if args.slo else None,
        rate_sweep=RateSweepConfig(
            start_rate=args.rate_sweep,
            max_rate=args.rate_sweep_max,
            bisection_steps=args.rate_sweep_steps,
            min_attainment=args.slo_attainment,
        )
        if args.rate_sweep is not None
        else None,
        label=args.label,
    )


def _validation_message(error: ConfigError) -> str:
    # "load.concurrency_levels[1]" -> "concurrency_levels" -> "--concurrency"
    field = error.field.rsplit(".", 1)[-1].split("[", 1)[0]
    option = _OPTION_FOR_FIELD.get(field, field or "arguments")
    return f"argument {option}: {error.reason}"


async def _run_sweep(config: BenchmarkConfig, files: ResultFiles, bar: ProgressBar) -> BenchmarkState:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_sigint() -> None:
        # First Ctrl-C: finish gracefully, keeping what was measured. Second: default behaviour.
        stop.set()
        loop.remove_signal_handler(signal.SIGINT)
        print("\nstopping: writing what was measured (Ctrl-C again to abort)", file=sys.stderr)

    # No signal handlers on Windows or off the main thread: Ctrl-C then aborts as usual.
    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    state = new_benchmark(config)

    def on_level(report: LevelReport) -> None:
        files.after_level(report)
        if report.level is not None:
            bar.level_done(report.level)

    if config.rate_sweep is not None:
        return await run_rate_sweep(config, stop=stop, progress=bar.update, on_level=on_level)
    return await run_benchmark(config, stop=stop, progress=bar.update, on_level=on_level, state=state)


def _outcome(result: BenchmarkResult, written: Path | None) -> tuple[int, str]:
    """Exit status and the last line; `written`: the results file, None when the run never started."""
    failed = sum(level.failed for level in result.levels)
    classes: dict[str, int] = {}
    for level in result.levels:
        for name, count in level.failure_classes.items():
            classes[name] = classes.get(name, 0) + count
    where = f"results in {written}" if written is not None else _NOTHING_WRITTEN
    if result.status in ("error", "aborted"):
        return EXIT_NOT_RUN, f"error: {(result.error or 'failed').rstrip('.')}; {where}"
    if result.status == "interrupted":
        return EXIT_INTERRUPTED, f"interrupted: partial {where}" if written else f"interrupted; {where}"
    summary = ", ".join(f"{n} {name}" for name, n in sorted(classes.items()))
    budget = " (time budget reached)" if result.status == "partial" else ""
    dead = [level_name(level).strip() for level in result.levels if level.failed and not level.completed]
    if dead:
        # Nothing was measured at these levels: the target is unreachable or refuses every request.
        levels = ", ".join(dead)
        return EXIT_NOT_RUN, f"error: every request failed at {levels} ({summary}); {where}"
    if failed:
        return EXIT_REQUEST_FAILURES, f"warning: {failed} requests failed ({summary}){budget}; {where}"
    sweep = ""
    if result.rate_sweep is not None:
        found = result.max_sustained_rate
        sweep = (
            f", highest rate within the SLOs: {found:g} requests/s"
            if found is not None
            else f", no rate within the SLOs (not even {result.rate_sweep.start_rate:g} requests/s)"
        )
    return EXIT_OK, f"done{budget}: {len(result.levels)} levels{sweep}; {where}"


def run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    problem = _check_combinations(args)
    if problem is not None:
        return _usage_error(parser, problem)
    try:
        config = build_config(args)
        prompts = dataset_prompts(config.workload.dataset)  # read now: a bad file fails before any request
        if args.mode == "batch" and prompts is not None:
            config = build_config(args, batch_records=len(prompts))
    except ConfigError as exc:
        return _usage_error(parser, _validation_message(exc))
    if prompts is not None and not args.quiet:
        print(f"dataset: {len(prompts)} requests from {args.dataset}", file=sys.stderr)
    files = ResultFiles(OutputPaths.for_results(args.output))
    if (problem := files.output_problem()) is not None:
        return _usage_error(parser, f"argument --output: {problem}")
    bar = ProgressBar(sys.stderr, not args.quiet, config.load, levels_known=config.rate_sweep is None)
    try:
        files.check_writable()
        state = asyncio.run(_run_sweep(config, files, bar))
        written = files.at_end(state.result)
    except KeyboardInterrupt:
        where = (
            f"results of completed levels are in {files.paths.results}" if files.started else _NOTHING_WRITTEN
        )
        print(f"interrupted: {where}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (OSError, InputFileError) as exc:  # InputFileError: the path became a link, FIFO, ... meanwhile
        print(f"error: cannot write results: {exc}", file=sys.stderr)
        return EXIT_NOT_RUN
    code, message = _outcome(state.result, written)
    if args.mode == "batch" and prompts is not None:
        _print_batch_projection(args, config, state.result, prompts)
    print(" ".join(message.split()), file=sys.stderr)  # one line, whatever the server said
    return code


def _print_batch_projection(
    args: argparse.Namespace,
    config: BenchmarkConfig,
    result: BenchmarkResult,
    prompts: tuple[DatasetPrompt, ...],
) -> None:
    forced = _output_length(args) == "forced"
    longest = max(
        (args.output_tokens if forced or p.output_tokens is None else p.output_tokens) for p in prompts
    )
    projection = (
        project_batch(
            result.levels[0],
            max_output_tokens=longest,
            price_per_hour=config.cost.price_per_hour,
            instance_count=config.cost.instance_count,
        )
        if result.levels
        else None
    )
    if projection is None:
        print("batch: nothing completed, no projection", file=sys.stderr)
        return
    for line in projection.lines():
        print(line)


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _report_input_problem(path: Path) -> str | None:
    """A results path that is no file to read (a directory, FIFO, device) or over the size limit: a bad
    argument (exit 2). A missing file or one that is not a results document exits 3, as before."""
    try:
        info = path.stat()
    except OSError:
        return None  # load_results says why
    if not stat.S_ISREG(info.st_mode):
        return f"is {_file_kind(info.st_mode)}; expected a results.json file (bench --output)"
    if info.st_size > MAX_RESULTS_BYTES:
        return (
            f"the results file has {info.st_size} bytes; allowed: at most {MAX_RESULTS_BYTES // MIB} MiB "
            "(a results file of thousands of levels is a few MiB)"
        )
    return None


def _report_output_problem(out_dir: Path) -> str | None:
    try:
        mode = out_dir.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot use it: {exc.strerror or exc}"
    if stat.S_ISLNK(mode) and not out_dir.is_dir():
        return "is a symbolic link to something that is not a folder; --out names a folder"
    if not out_dir.is_dir():
        return "is not a folder; --out names a folder (made when missing) to write report.md and plots into"
    markdown = out_dir / "report.md"
    if (problem := output_problem(markdown)) is not None:
        return f"{markdown} {problem}"
    return None


def _json_problem(problem: str) -> str:
    """safe_files' "not valid JSON (line 1, column 2: Expecting ...)" in the json module's own words."""
    match = re.fullmatch(r"not valid JSON \(line (\d+), column (\d+): (.*)\)", problem, re.DOTALL)
    return f"{match[3]}: line {match[1]} column {match[2]} (not valid JSON)" if match else problem


def run_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    for path in args.results:
        if (problem := _report_input_problem(path)) is not None:
            return _usage_error(parser, f"argument results.json: {path}: {problem}")
    if (problem := _report_output_problem(args.out)) is not None:
        return _usage_error(parser, f"argument --out: {args.out}: {problem}")
    results: list[BenchmarkResult] = []
    for path in args.results:
        try:
            results.append(load_results(path))
        except InputFileError as exc:  # bad input, as every command reports it: exit 2
            if exc.problem.startswith("cannot read"):  # missing, no permission
                return _usage_error(parser, f"argument results.json: {exc}")
            return _usage_error(
                parser,
                f"argument results.json: {path} is not a bench results file: {_json_problem(exc.problem)}",
            )
        except ValueError as exc:  # ConfigError: valid JSON of the wrong shape
            return _usage_error(parser, f"argument results.json: {path} is not a bench results file: {exc}")
        if (problem := result_problem(results[-1])) is not None:
            return _usage_error(parser, f"argument results.json: {path}: {problem}")
    if (problem := results_problem(results)) is not None:
        return _usage_error(parser, f"argument results.json: {problem}")
    try:
        try:
            from speculative_infra.benchmark.report import render_report  # matplotlib only when reporting
        except ModuleNotFoundError as exc:
            if exc.name is None or not exc.name.startswith("matplotlib"):
                raise
            return _report_without_matplotlib(results, args.out)
        files = render_report(results, args.out)
    except InputFileError as exc:  # an output file that is no regular file (a link, a FIFO, a folder)
        return _usage_error(parser, f"argument --out: {exc}")
    except OSError as exc:
        print(f"error: cannot write the report in {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_NOT_RUN
    print(f"wrote {files.markdown} and {len(files.images)} plots", file=sys.stderr)
    return EXIT_OK


def _report_without_matplotlib(results: list[BenchmarkResult], out_dir: Path) -> int:
    """A plain install has no matplotlib: the same tables with the post-deploy Lambda's SVG charts."""
    from speculative_infra.benchmark.report_markdown import render_markdown
    from speculative_infra.benchmark.report_svg import sweep_charts

    out_dir.mkdir(parents=True, exist_ok=True)
    charts = sweep_charts(results)
    for name, svg in charts.items():
        write_text(out_dir / name, svg, what="chart")
    markdown = out_dir / "report.md"
    write_text(markdown, render_markdown(results), what="report")
    print(
        f"wrote {markdown} and {len(charts)} SVG charts (PNG plots need matplotlib: "
        "pip install 'speculative-infra[bench]')",
        file=sys.stderr,
    )
    return EXIT_OK
