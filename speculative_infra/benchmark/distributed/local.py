"""The state machine's fan-out on one machine: every (wave, worker) in its own process, then the merge.

Used by the tests and benchmarks/ against the stand-in servers; a process per worker, as a Lambda
function per worker, so the workers share nothing but the schedule and the wall clock.
"""

from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from typing import Any

from .merge import merge_outputs
from .profile import LoadTestConfig
from .worker import failed_output, run_worker_blocking


def _run(
    config: dict[str, Any], wave: int, worker: int, start: float
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return run_worker_blocking(LoadTestConfig.from_dict(config), wave, worker, start)
    except Exception as error:  # reported, as a failed Lambda worker is
        return failed_output(wave, worker, f"{type(error).__name__}: {error}"), []


def run_local(
    config: LoadTestConfig, *, start_in_s: float = 1.0, fail: set[tuple[int, int]] | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the whole test locally; ``fail`` names (wave, worker) pairs that never report (tests)."""
    start = time.time() + start_in_s
    pairs = [
        (w, k) for w in range(config.waves) for k in range(config.workers) if (w, k) not in (fail or set())
    ]
    with ProcessPoolExecutor(max_workers=max(1, len(pairs))) as pool:
        futures = {pair: pool.submit(_run, config.to_dict(), *pair, start) for pair in pairs}
        results = {pair: future.result() for pair, future in futures.items()}
    outputs: dict[tuple[int, int], dict[str, Any] | None] = {
        (w, k): None for w in range(config.waves) for k in range(config.workers)
    }
    records: list[dict[str, Any]] = []
    for pair, (document, worker_records) in results.items():
        outputs[pair] = document
        records.extend(worker_records)
    started = datetime.fromtimestamp(start, UTC).isoformat()
    return merge_outputs(config, outputs, records, started_at=started), records
