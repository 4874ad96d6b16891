"""Running `bench`: the sweep with Ctrl-C and progress, the result files, and the exit status and last line.

Imported only when `bench` runs (bench_command): this is where the benchmark engine loads.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from pathlib import Path

from speculative_infra.benchmark.batch_projection import project_batch
from speculative_infra.benchmark.config import BenchmarkConfig, ConfigError
from speculative_infra.benchmark.datasets import DatasetPrompt, dataset_prompts
from speculative_infra.benchmark.files import OutputPaths
from speculative_infra.benchmark.rate_sweep import run_rate_sweep
from speculative_infra.benchmark.results import BenchmarkResult
from speculative_infra.benchmark.sweep import BenchmarkState, LevelReport, new_benchmark, run_benchmark
from speculative_infra.cli.bench_config import (
    build_config,
    combination_problem,
    output_length,
    validation_message,
)
from speculative_infra.cli.bench_files import ResultFiles
from speculative_infra.cli.bench_progress import ProgressBar, level_name
from speculative_infra.cli.usage import usage_error
from speculative_infra.safe_files import InputFileError

EXIT_OK = 0
EXIT_REQUEST_FAILURES = 1
EXIT_NOT_RUN = 3
EXIT_INTERRUPTED = 130
_NOTHING_WRITTEN = "the run never started, so no results were written"


def run_bench(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    problem = combination_problem(args)
    if problem is not None:
        return usage_error(parser, problem)
    try:
        config = build_config(args)
        prompts = dataset_prompts(config.workload.dataset)  # read now: a bad file fails before any request
        if args.mode == "batch" and prompts is not None:
            config = build_config(args, batch_records=len(prompts))
    except ConfigError as exc:
        return usage_error(parser, validation_message(exc))
    if prompts is not None and not args.quiet:
        print(f"dataset: {len(prompts)} requests from {args.dataset}", file=sys.stderr)
    files = ResultFiles(OutputPaths.for_results(args.output))
    if (problem := files.output_problem()) is not None:
        return usage_error(parser, f"argument --output: {problem}")
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


def _print_batch_projection(
    args: argparse.Namespace,
    config: BenchmarkConfig,
    result: BenchmarkResult,
    prompts: tuple[DatasetPrompt, ...],
) -> None:
    forced = output_length(args, batch=True) == "forced"  # called for --mode batch only
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
