"""A sweep can be driven one level per process (post-deploy Lambda) with serialized state."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from speculative_infra.benchmark.config import BenchmarkConfig, HttpTarget, LoadConfig, WorkloadConfig
from speculative_infra.benchmark.recorder import StreamRecorder
from speculative_infra.benchmark.sweep import BenchmarkState, new_benchmark, run_benchmark, run_next_level
from speculative_infra.benchmark.transports.base import TargetUnavailable, WireRequest

from .fakes import FakeClock, FakeTransport

CONFIG = BenchmarkConfig(
    target=HttpTarget(base_url="http://127.0.0.1:1"),
    workload=WorkloadConfig(input_tokens=50, output_tokens=10, seed=11),
    load=LoadConfig(concurrency_levels=(1, 2, 4), requests_per_level=4, warmup_requests=1),
    label="fake",
)


def test_resuming_level_by_level_equals_one_sweep() -> None:
    clock = FakeClock()
    whole = asyncio.run(
        clock.drive(run_benchmark(CONFIG, FakeTransport(clock, CONFIG.workload), clock=clock))
    )

    clock = FakeClock()
    saved = json.dumps(new_benchmark(CONFIG, clock=clock, run_id="abc").to_dict())
    request_ids: list[str] = []
    while True:
        state = BenchmarkState.from_dict(json.loads(saved))  # a fresh process each time
        if state.done:
            break
        transport = FakeTransport(clock, state.config.workload)
        report = asyncio.run(clock.drive(run_next_level(state, transport, clock=clock)))
        assert report.level is not None and report.level.concurrency == transport.started_with[0]
        request_ids += [r.request_id for r in report.records]
        saved = json.dumps(report.state.to_dict())

    assert state.result.status == "complete"
    assert state.result.levels == whole.result.levels
    assert [lv.to_dict() for lv in state.result.levels] == [lv.to_dict() for lv in whole.result.levels]
    assert all(rid.startswith("abc-c") for rid in request_ids)
    with pytest.raises(ValueError, match="no level left"):
        asyncio.run(run_next_level(state, FakeTransport(clock, CONFIG.workload), clock=clock))


def test_seed_is_chosen_once_and_kept() -> None:
    state = new_benchmark(dataclasses.replace(CONFIG, workload=WorkloadConfig()))
    assert state.config.workload.seed is not None
    assert state.result.workload.seed == state.config.workload.seed
    assert state.next_concurrency == 1


class _Unavailable(FakeTransport):
    async def start(self, concurrency: int) -> None:
        raise TargetUnavailable("no region configured")

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        raise AssertionError("nothing may be sent")


def test_target_unavailable_ends_the_sweep_with_an_error() -> None:
    clock = FakeClock()
    state = asyncio.run(clock.drive(run_benchmark(CONFIG, _Unavailable(clock, CONFIG.workload), clock=clock)))
    assert state.result.status == "error"
    assert state.result.error == "no region configured"
    assert state.result.levels == []
