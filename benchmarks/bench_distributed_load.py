"""The distributed load test on one machine: workers as processes against the stand-in on loopback.

Part 1: a stepped open-loop test (two steps, two waves, three workers per wave) against a stand-in with a
known timing (TTFT 200 ms, one token per 20 ms chunk). Prints the merged TTFT p50/p99 against the
server's own TTFT for the same requests (its receive-to-first-write times, GET /_truth), the merged
per-step output throughput against the throughput the schedule implies (each scheduled request delivers
its tokens when it completes), and every scheduled arrival sent once. "exact" is the same requests'
TTFT computed in one place from the records: the sketch's own error (at most 1%) is merged vs exact.

Part 2: the merge's cost for a one-hour test's worth of sketches: 5 waves x 50 workers, each worker with
sketches for 3 steps and 12 minutes over 3 metrics (2,000 requests each), parsed from JSON and merged.

    .venv/bin/python benchmarks/bench_distributed_load.py
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from speculative_infra.benchmark.config import BenchmarkConfig  # noqa: E402
from speculative_infra.benchmark.distributed.local import run_local  # noqa: E402
from speculative_infra.benchmark.distributed.merge import merged_sketches  # noqa: E402
from speculative_infra.benchmark.distributed.profile import LoadTestConfig  # noqa: E402
from speculative_infra.benchmark.distributed.schedule import wave_arrivals  # noqa: E402
from speculative_infra.benchmark.distributed.sketch import LatencySketch  # noqa: E402
from speculative_infra.benchmark.distributed.worker import SKETCHED  # noqa: E402
from tests.benchmark.stand_ins.behavior import Behavior  # noqa: E402
from tests.benchmark.stand_ins.server import ServerProcess  # noqa: E402

TTFT_S, CHUNK_S, TOKENS = 0.2, 0.02, 20


def _order_statistic(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def part_one() -> None:
    with ServerProcess({"known": Behavior(ttft_s=TTFT_S, chunk_interval_s=CHUNK_S)}, cpu=1) as server:
        bench = BenchmarkConfig.from_dict(
            {
                "target": {"kind": "openai_http", "base_url": f"http://127.0.0.1:{server.port}/known"},
                "workload": {"input_tokens": 50, "output_tokens": TOKENS},
            }
        )
        steps = ({"duration_s": 6.0, "request_rate": 10}, {"duration_s": 6.0, "request_rate": 30})
        config = LoadTestConfig(benchmark=bench, steps=steps, workers=3, wave_s=6.0, drain_s=2.0)
        server.truth(clear=True)
        result, records = run_local(config, start_in_s=2.0)
        truth = {t["request_id"]: t for t in server.truth(clear=True) if t["first_content_at"]}
    scheduled = sorted(a.at_s for w in range(config.waves) for a in wave_arrivals(config, w))
    print(
        f"arrivals scheduled {len(scheduled)}, sent {len(records)}, unique {len({r['id'] for r in records})}"
    )
    e2el_s = TTFT_S + (TOKENS - 1) * CHUNK_S
    for step, (lo, hi) in zip(result["steps"], ((0.0, 6.0), (6.0, 12.0)), strict=True):
        server_ttft = [
            (truth[r["id"]]["first_content_at"] - truth[r["id"]]["received_at"]) * 1000
            for r in records
            if r["step"] == step["step"] and r["id"] in truth
        ]
        client = [r["ttft_ms"] for r in records if r["step"] == step["step"] and r["ttft_ms"] is not None]
        expected_tokens = sum(TOKENS for t in scheduled if lo <= t + e2el_s < hi) / (hi - lo)
        print(
            f"step {step['step']} ({step['description']}): {step['requests']} requests, "
            f"TTFT p50 {step['ttft_ms']['p50']:.1f} ms (exact {_order_statistic(client, 0.5):.1f}, "
            f"server {_order_statistic(server_ttft, 0.5):.1f}), p99 {step['ttft_ms']['p99']:.1f} ms "
            f"(exact {_order_statistic(client, 0.99):.1f}, server {_order_statistic(server_ttft, 0.99):.1f}); "
            f"output {step['output_throughput']:.1f} tok/s vs {expected_tokens:.1f} from the schedule "
            f"({(step['output_throughput'] / expected_tokens - 1) * 100:+.2f}%)"
        )
    print(
        f"client-limited minutes: {result['client_bottleneck_minutes']}; max worker CPU {result['workers']['max_cpu_percent']}%"
    )


def part_two() -> None:
    rng = random.Random(1)
    documents = []
    for _ in range(5 * 50):
        steps = {k: {m: LatencySketch() for m in SKETCHED} for k in range(3)}
        minutes = {k: {m: LatencySketch() for m in SKETCHED} for k in range(12)}
        for i in range(2000):
            for metric, scale in (("ttft_ms", 300.0), ("tpot_ms", 15.0), ("e2el_ms", 9000.0)):
                value = rng.lognormvariate(0, 0.5) * scale
                steps[i % 3][metric].add(value)
                minutes[i % 12][metric].add(value)
        documents.append(
            json.dumps(
                {
                    "sketches": {
                        "steps": {str(k): {m: s.to_dict() for m, s in v.items()} for k, v in steps.items()},
                        "minutes": {
                            str(k): {m: s.to_dict() for m, s in v.items()} for k, v in minutes.items()
                        },
                    }
                }
            )
        )
    size = sum(len(d) for d in documents)
    began = time.perf_counter()
    parsed = [json.loads(d) for d in documents]
    merged_sketches(parsed, "steps")
    merged_sketches(parsed, "minutes")
    elapsed = time.perf_counter() - began
    print(f"merge of 250 workers' sketches ({size / 1e6:.1f} MB of JSON, 500,000 requests): {elapsed:.2f} s")


if __name__ == "__main__":
    part_one()
    part_two()
