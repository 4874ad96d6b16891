"""Does `--workers N` cost anything per stream? Client CPU per stream with 1, 2 and 4 workers.

Capacity grows linearly with workers when each worker's cost per stream does not depend on how many
workers there are (separate processes, separate event loops, nothing shared until the parent merges
the records after the level). With more cores than this build machine has, that is the whole
argument; here the workers share one core (the stand-in server has the other), so this measures the
cost per chunk, not the scaling itself.

For each worker count W: one closed-loop level of C streams (3 tokens per 60 ms chunk, starts spread
over a request's lifetime) against the stand-in server, the client's CPU time (the parent and every
worker process) minus a near-idle level's (the workers' start-up: interpreter, imports), per stream
and second of the level (every stream reads 50 tokens/s in 17 chunks/s). Also the level's p99 client lag and throughput error, to show the split level
measures as one process does.

    .venv/bin/python benchmarks/bench_workers.py [--concurrency 128] [--workers 1,2,4]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from speculative_infra.benchmark import (  # noqa: E402
    BenchmarkConfig,
    HttpTarget,
    LoadConfig,
    WorkloadConfig,
    run_benchmark,
)
from tests.benchmark.stand_ins.behavior import Behavior  # noqa: E402
from tests.benchmark.stand_ins.server import ServerProcess  # noqa: E402

OUTPUT_TOKENS = 560
PROFILE = Behavior(ttft_s=0.1, chunk_interval_s=0.06, tokens_per_chunk=3)
IDLE = Behavior(ttft_s=0.01, chunk_interval_s=0.001, tokens_per_chunk=3)


def _cpu_s() -> float:
    """CPU seconds of this process and every child it has reaped (the worker processes)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _level(server: ServerProcess, scenario: str, concurrency: int, workers: int, spread_s: float):
    config = BenchmarkConfig(
        target=HttpTarget(base_url=f"{server.base_url}/{scenario}", model="stand-in-model"),
        workload=WorkloadConfig(input_tokens=200, output_tokens=OUTPUT_TOKENS, seed=4),
        load=LoadConfig(
            concurrency_levels=(concurrency,),
            requests_per_level=concurrency,
            warmup_requests=concurrency,
            ramp_up_s=spread_s,
            workers=workers,
        ),
    )
    cpu, wall = _cpu_s(), time.perf_counter()
    state = asyncio.run(run_benchmark(config))
    if state.result.status != "complete":
        raise SystemExit(f"level did not complete: {state.result.status} {state.result.error}")
    return state.result.levels[0], _cpu_s() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    pinned = hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2
    if pinned:
        os.sched_setaffinity(0, {0})  # the workers inherit it: every client process on CPU 0
    e2el = PROFILE.expected_e2el_s(OUTPUT_TOKENS)
    with ServerProcess({"profile": PROFILE, "idle": IDLE}, cpu=1 if pinned else None) as server:
        print(f"client on CPU 0, server on CPU 1: {pinned}; C = {args.concurrency}, 3 tokens per 60 ms chunk")
        for workers in (int(w) for w in args.workers.split(",")):
            # Start-up alone: the same workers, a few short requests.
            _, idle_cpu, _ = _level(server, "idle", workers, workers, 0.0)
            level, cpu, wall = _level(server, "profile", args.concurrency, workers, e2el)
            per_stream_ms = (cpu - idle_cpu) / (args.concurrency * wall) * 1000  # CPU ms per stream-second
            truth = args.concurrency * OUTPUT_TOKENS / e2el
            error = ((level.output_throughput or 0) / truth - 1) * 100
            print(
                f"  workers {workers}: client CPU {per_stream_ms:5.2f} ms per stream-second (start-up {idle_cpu:4.2f} s "
                f"excluded)  p99 lag {level.p99_client_lag_ms or 0:5.2f} ms  throughput {error:+5.2f} %  "
                f"wall {wall:5.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
