"""Closed-loop load generation on a virtual clock: exact timings, no real waiting."""

from __future__ import annotations

import asyncio

import pytest

from speculative_infra.benchmark.config import (
    BenchmarkConfig,
    CostConfig,
    HttpTarget,
    LoadConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.load import LevelProgress, StopReason, run_level
from speculative_infra.benchmark.metrics import summarize_level
from speculative_infra.benchmark.sweep import run_benchmark
from speculative_infra.benchmark.transports.base import WireRequest
from speculative_infra.benchmark.workload import Phase, PromptFactory

from .fakes import FakeClock, FakeTransport

WORKLOAD = WorkloadConfig(input_tokens=50, output_tokens=10, seed=1)
TARGET = HttpTarget(base_url="http://127.0.0.1:1")


def run(coro_factory, clock: FakeClock):  # type: ignore[no-untyped-def]
    return asyncio.run(clock.drive(coro_factory()))


def level(concurrency: int, transport: FakeTransport, clock: FakeClock, load: LoadConfig, **kwargs):  # type: ignore[no-untyped-def]
    return run(
        lambda: run_level(concurrency, transport, PromptFactory(WORKLOAD), load, clock, **kwargs), clock
    )


def test_default_request_counts() -> None:
    load = LoadConfig()
    assert [load.requests_for(c) for c in (1, 4, 8, 32)] == [32, 32, 64, 256]
    assert [load.warmup_for(c) for c in (1, 32)] == [1, 32]
    assert load.concurrency_levels == (1, 2, 4, 8, 16, 32)


def test_closed_loop_keeps_exactly_c_in_flight_and_excludes_warmup() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.1, interval=0.01)
    run_ = level(3, transport, clock, LoadConfig(requests_per_level=9, warmup_requests=3))
    assert transport.max_in_flight == 3
    phases = [o.phase for o in run_.outcomes]
    assert phases.count(Phase.WARMUP) == 3
    assert phases.count(Phase.MEASURED) == 9
    assert run_.stop_reason is StopReason.COMPLETE
    # Fillers only run while measured requests are in flight, then are cancelled.
    assert all(o.cancelled for o in run_.outcomes if o.phase is Phase.FILLER)
    result, records = summarize_level(run_, WORKLOAD, CostConfig(), "usage")
    assert result.completed == 9 and result.failed == 0 and result.warmup_requests == 3
    e2e = 0.1 + 9 * 0.01
    assert result.median_ttft_ms == pytest.approx(100.0)
    assert result.median_tpot_ms == pytest.approx(10.0)
    assert result.median_itl_ms == pytest.approx(10.0)
    assert result.median_e2el_ms == pytest.approx(e2e * 1000)
    assert result.output_throughput == pytest.approx(3 * 10 / e2e)
    assert result.request_throughput == pytest.approx(3 / e2e)
    assert result.p99_client_lag_ms == pytest.approx(0.0)
    assert len({r.request_id for r in records}) == len(records)


@pytest.mark.parametrize("sustain", [True, False])
def test_staggered_starts_measure_the_true_aggregate_rate(sustain: bool) -> None:
    # With ramp-up, requests start at different times; counting only whole measured requests
    # over first-send..last-end would under-read throughput. Tokens in the window do not.
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.1, interval=0.1)  # E2E = 1.0 s, 10 tokens
    load = LoadConfig(requests_per_level=32, warmup_requests=8, ramp_up_s=1.0, sustain_load=sustain)
    result, _ = summarize_level(level(8, transport, clock, load), WORKLOAD, CostConfig(), "usage")
    true_rate = 8 * 10 / 1.0
    if sustain:
        assert result.output_throughput == pytest.approx(true_rate, rel=0.01)
    else:
        # Without fillers the last requests run at falling concurrency: the number says so.
        assert result.output_throughput is not None and result.output_throughput < true_rate * 0.95


def test_client_lag_is_what_the_client_adds_before_sending() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, send_delay=0.002)
    result, _ = summarize_level(
        level(2, transport, clock, LoadConfig(requests_per_level=6, warmup_requests=2)),
        WORKLOAD,
        CostConfig(),
        "usage",
    )
    assert result.median_client_lag_ms == pytest.approx(2.0)
    assert result.median_ttft_ms == pytest.approx(100.0)  # measured from the actual send


def test_throttled_requests_are_retried_with_backoff_and_counted() -> None:
    clock = FakeClock()

    def plan(attempt: int, request: WireRequest) -> str:
        return "throttled" if attempt in (1, 2) else "ok"

    transport = FakeTransport(clock, WORKLOAD, plan=plan)
    load = LoadConfig(requests_per_level=3, warmup_requests=0, max_retries=3, retry_backoff_s=0.5)
    run_ = level(1, transport, clock, load)
    result, records = summarize_level(run_, WORKLOAD, CostConfig(), "usage")
    assert result.completed == 3 and result.failed == 0
    assert result.retries == 2 and result.retried_classes == {"throttled": 2}
    retried = next(r for r in records if r.retries)
    assert retried.retried_classes == ["throttled", "throttled"]
    # Backoff 0.5 s then 1 s shows as client lag of that request, not as TTFT.
    assert retried.client_lag_ms == pytest.approx(0.0)
    assert retried.ttft_ms == pytest.approx(100.0)


def test_retries_are_bounded() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, plan=lambda n, r: "throttled" if n == 0 else "ok")
    load = LoadConfig(requests_per_level=2, warmup_requests=0, max_retries=0)
    result, _ = summarize_level(level(1, transport, clock, load), WORKLOAD, CostConfig(), "usage")
    assert result.failure_classes == {"throttled": 1} and result.completed == 1


def test_level_aborts_when_nothing_succeeds() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, plan=lambda n, r: "connection_error")
    run_ = level(2, transport, clock, LoadConfig(requests_per_level=50, warmup_requests=2))
    assert run_.stop_reason is StopReason.ABORTED
    assert "connection_error" in (run_.stop_message or "")
    assert transport.attempts <= 4  # max(3, C) failures, not 52


def test_credentials_error_stops_at_once() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, plan=lambda n, r: "credentials_error")
    run_ = level(1, transport, clock, LoadConfig(requests_per_level=10, warmup_requests=0))
    assert run_.stop_reason is StopReason.ABORTED and transport.attempts == 1


def test_occasional_failures_do_not_abort() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, plan=lambda n, r: "timeout" if n % 4 == 3 else "ok")
    result, _ = summarize_level(
        level(1, transport, clock, LoadConfig(requests_per_level=12, warmup_requests=0)),
        WORKLOAD,
        CostConfig(),
        "usage",
    )
    assert result.complete and result.failed == 3 and result.completed == 9


def test_progress_reports_every_measured_request() -> None:
    clock = FakeClock()
    seen: list[LevelProgress] = []
    transport = FakeTransport(clock, WORKLOAD)
    level(2, transport, clock, LoadConfig(requests_per_level=4, warmup_requests=2), progress=seen.append)
    assert seen[-1].measured_done == 4 and seen[-1].measured_total == 4
    assert max(p.warmup_done for p in seen) == 2


def config(**load: object) -> BenchmarkConfig:
    return BenchmarkConfig(target=TARGET, workload=WORKLOAD, load=LoadConfig(**load))  # type: ignore[arg-type]


def test_time_budget_keeps_a_partial_level_and_stops_the_sweep() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.1, interval=0.1)  # 1 s per request
    cfg = config(concurrency_levels=(1, 2), requests_per_level=10, warmup_requests=0, time_budget_s=3.5)
    state = run(lambda: run_benchmark(cfg, transport, clock=clock), clock)
    assert state.result.status == "partial"
    [only] = state.result.levels
    assert not only.complete and only.stop_reason == "time_budget"
    assert only.completed == 3 and only.cancelled == 1
    assert transport.started_with == [1]


def test_stop_event_interrupts_and_keeps_measurements() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.1, interval=0.1)
    cfg = config(concurrency_levels=(1, 2), requests_per_level=10, warmup_requests=0)

    async def scenario():  # type: ignore[no-untyped-def]
        stop = asyncio.Event()

        async def press_ctrl_c() -> None:
            await clock.sleep(2.5)
            stop.set()

        presser = asyncio.ensure_future(press_ctrl_c())
        state = await run_benchmark(cfg, transport, clock=clock, stop=stop)
        await presser
        return state

    state = run(scenario, clock)
    assert state.result.status == "interrupted"
    [only] = state.result.levels
    assert only.stop_reason == "interrupted" and only.completed == 2


def test_transport_started_for_each_level() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD)
    cfg = config(concurrency_levels=(1, 4, 2), requests_per_level=4, warmup_requests=1)
    state = run(lambda: run_benchmark(cfg, transport, clock=clock), clock)
    assert state.result.status == "complete"
    assert transport.started_with == [1, 4, 2]
    assert [lv.concurrency for lv in state.result.levels] == [1, 4, 2]
    assert not transport.closed  # the caller owns a transport it passed in


def test_stop_between_levels_starts_no_empty_level() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD)
    cfg = config(concurrency_levels=(1, 2), requests_per_level=2, warmup_requests=0)

    async def scenario():  # type: ignore[no-untyped-def]
        stop = asyncio.Event()
        stop.set()
        return await run_benchmark(cfg, transport, clock=clock, stop=stop)

    state = run(scenario, clock)
    assert state.result.status == "interrupted" and state.result.levels == []
    assert transport.attempts == 0
