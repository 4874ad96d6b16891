"""Regenerate examples/report/: a `speculative-infra bench` run against the tests' stand-in server and
the report `speculative-infra report` renders from it.

    .venv/bin/python scripts/make_example_report.py

The figures come from a local stand-in server (tests/benchmark/stand_ins/server.py) streaming with fixed
timings, not from a GPU. tests/test_examples.py checks that the committed report is what `report`
renders from the committed results.json.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from speculative_infra.cli.main import main  # noqa: E402
from tests.benchmark.stand_ins.behavior import Behavior  # noqa: E402
from tests.benchmark.stand_ins.server import ServerProcess  # noqa: E402

OUT = Path("examples/report")  # from ROOT: the commands printed are the ones to type there
# The stand-in's schedule: first token 50 ms after the request arrives, then a chunk every 10 ms,
# 2 tokens per chunk (as a speculative decoder that accepts one draft token per step streams).
STAND_IN = Behavior(ttft_s=0.05, chunk_interval_s=0.01, tokens_per_chunk=2)
LOAD = [
    "--concurrency",
    "1,4",
    "--input-tokens",
    "200",
    "--output-tokens",
    "64",
    "--requests-per-level",
    "8",
    "--warmup",
    "1",
    "--seed",
    "7",
    "--label",
    "stand-in (not a GPU)",
]


def bench_argv(base_url: str, results: Path) -> list[str]:
    return ["bench", "--url", base_url, *LOAD, "--output", str(results)]


def report_argv(results: Path, out_dir: Path) -> list[str]:
    return ["report", str(results), "--out", str(out_dir)]


def _remove_previous_report() -> None:
    # A plot the report no longer draws must not stay behind.
    for path in [*OUT.glob("*.png"), OUT / "report.md"]:
        path.unlink(missing_ok=True)


def run() -> int:
    os.chdir(ROOT)
    OUT.mkdir(parents=True, exist_ok=True)
    results = OUT / "results.json"
    # The URL has no scenario prefix, so the stand-in serves its "default" scenario.
    with ServerProcess({"default": STAND_IN}) as server:
        argv = bench_argv(server.base_url, results)
        print("$ speculative-infra " + shlex.join(argv), file=sys.stderr)
        code = main(argv)
    if code != 0:
        return code
    _remove_previous_report()
    argv = report_argv(results, OUT)
    print("$ speculative-infra " + shlex.join(argv), file=sys.stderr)
    return main(argv)


if __name__ == "__main__":
    sys.exit(run())
