"""Open-loop load (arrivals at a request rate) and goodput, on the virtual clock."""

from __future__ import annotations

import asyncio
import itertools
import statistics

import pytest

from speculative_infra.benchmark.config import (
    ConfigError,
    CostConfig,
    Level,
    LoadConfig,
    SloConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.load import StopReason, arrival_offsets, run_level
from speculative_infra.benchmark.metrics import meets_slo, summarize_level
from speculative_infra.benchmark.results import RequestRecord
from speculative_infra.benchmark.workload import Phase, PromptFactory

from .fakes import FakeClock, FakeTransport

WORKLOAD = WorkloadConfig(input_tokens=50, output_tokens=10, seed=1)


def run(level: Level, transport: FakeTransport, clock: FakeClock, load: LoadConfig):  # type: ignore[no-untyped-def]
    return asyncio.run(clock.drive(run_level(level, transport, PromptFactory(WORKLOAD), load, clock)))


@pytest.mark.parametrize("burstiness", [0.5, 1.0, 4.0])
def test_arrival_gaps_have_the_rate_and_the_burstiness_asked_for(burstiness: float) -> None:
    offsets = arrival_offsets(rate=20.0, burstiness=burstiness, count=40_001, seed="s")
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert offsets[0] == 0.0
    assert statistics.fmean(gaps) == pytest.approx(1 / 20.0, rel=0.03)
    # A gamma distribution with shape k has a squared coefficient of variation of 1 / k.
    cv2 = statistics.pvariance(gaps) / statistics.fmean(gaps) ** 2
    assert cv2 == pytest.approx(1 / burstiness, rel=0.08)
    assert arrival_offsets(20.0, burstiness, 50, "s") == offsets[:50]  # same seed, same schedule


def test_requests_leave_on_schedule_whatever_the_server_does() -> None:
    clock = FakeClock()
    # Each request takes 1.1 s; at 10 requests/s about 11 are open at once: a closed loop could not do it.
    transport = FakeTransport(clock, WORKLOAD, ttft=0.2, interval=0.1)
    load = LoadConfig(request_rates=(10.0,), requests_per_level=40, warmup_requests=0)
    level = load.levels[0]
    run_ = run(level, transport, clock, load)
    assert run_.stop_reason is StopReason.COMPLETE
    sends = sorted(o.rec.sent_at - run_.started_at for o in run_.outcomes)
    expected = arrival_offsets(10.0, 1.0, 40, f"arrivals:{level.key()}")
    assert sends == pytest.approx(expected, abs=1e-9)
    assert transport.max_in_flight >= 9
    result, records = summarize_level(run_, WORKLOAD, CostConfig(), "usage")
    assert result.request_rate == 10.0 and result.concurrency == 0
    assert result.achieved_request_rate == pytest.approx(39 / expected[-1])
    assert result.p99_client_lag_ms == pytest.approx(0.0)
    assert {r.request_rate for r in records} == {10.0}
    assert all(r.request_id.startswith("r10-") for r in records)


def test_a_concurrency_cap_holds_and_the_wait_is_recorded_as_lateness() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.2, interval=0.1)  # 1.1 s per request
    load = LoadConfig(request_rates=(10.0,), max_concurrency=2, requests_per_level=12, warmup_requests=0)
    run_ = run(load.levels[0], transport, clock, load)
    assert transport.max_in_flight == 2
    result, _ = summarize_level(run_, WORKLOAD, CostConfig(), "usage")
    assert result.completed == 12 and result.concurrency == 2
    assert result.max_client_lag_ms is not None and result.max_client_lag_ms > 1000  # waited for a place
    assert result.achieved_request_rate is not None and result.achieved_request_rate < 10.0 / 2


def test_a_time_budget_stops_the_arrivals() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.2, interval=0.1)
    load = LoadConfig(request_rates=(2.0,), requests_per_level=100, warmup_requests=0)

    async def main():  # type: ignore[no-untyped-def]
        return await run_level(
            load.levels[0], transport, PromptFactory(WORKLOAD), load, clock, deadline=clock.now() + 5.0
        )

    run_ = asyncio.run(clock.drive(main()))
    assert run_.stop_reason is StopReason.TIME_BUDGET
    measured = [o for o in run_.outcomes if o.phase is Phase.MEASURED]
    assert 5 <= len(measured) <= 20  # about 2/s for 5 s, not 100
    assert transport.in_flight == 0


def test_open_loop_defaults_and_validation() -> None:
    load = LoadConfig(request_rates=(0.5, 8.0))
    assert [lv.describe() for lv in load.levels] == ["0.5 requests/s", "8 requests/s"]
    assert [load.requests_for(lv) for lv in load.levels] == [32, 80]
    assert [load.warmup_for(lv) for lv in load.levels] == [1, 8]
    assert (
        LoadConfig(request_rates=(4.0,), max_concurrency=3).levels[0].describe()
        == "4 requests/s, at most 3 open"
    )
    with pytest.raises(ConfigError, match="request_rates"):
        LoadConfig(request_rates=())
    with pytest.raises(ConfigError, match="request_rates"):
        LoadConfig(request_rates=(1.0, 0.0))
    with pytest.raises(ConfigError, match="burstiness"):
        LoadConfig(request_rates=(1.0,), burstiness=0)


def _record(**values: object) -> RequestRecord:
    base: dict[str, object] = {
        "concurrency": 1,
        "phase": "measured",
        "index": 0,
        "request_id": "x",
        "slot": 0,
        "status": "ok",
        "slot_freed_at_s": 0.0,
        "sent_at_s": 0.0,
        "client_lag_ms": 0.0,
        "chunks": 3,
        "ttft_ms": 100.0,
        "tpot_ms": 20.0,
        "e2el_ms": 300.0,
    }
    return RequestRecord(**{**base, **values})  # type: ignore[arg-type]


def test_slo_boundaries_are_inclusive_and_every_objective_counts() -> None:
    slo = SloConfig(ttft_ms=100.0, tpot_ms=20.0)
    assert meets_slo(_record(), slo)  # exactly at both limits
    assert not meets_slo(_record(ttft_ms=100.001), slo)
    assert not meets_slo(_record(tpot_ms=20.001), slo)
    assert not meets_slo(_record(tpot_ms=None), slo)  # a one-token answer has no TPOT to judge
    assert meets_slo(_record(e2el_ms=10_000.0), slo)  # not an objective here
    assert not meets_slo(_record(status="failed"), SloConfig(e2el_ms=1e9))


def test_goodput_counts_only_requests_within_the_objectives() -> None:
    clock = FakeClock()
    transport = FakeTransport(clock, WORKLOAD, ttft=0.1, interval=0.01)  # TTFT 100 ms, E2E 190 ms
    load = LoadConfig(concurrency_levels=(2,), requests_per_level=6, warmup_requests=0)
    run_ = run(load.levels[0], transport, clock, load)
    good, _ = summarize_level(run_, WORKLOAD, CostConfig(), "usage", SloConfig(ttft_ms=100.0))
    bad, _ = summarize_level(run_, WORKLOAD, CostConfig(), "usage", SloConfig(ttft_ms=99.0))
    none, _ = summarize_level(run_, WORKLOAD, CostConfig(), "usage")
    assert good.good_requests == 6 and good.request_goodput == pytest.approx(good.request_throughput)
    assert good.output_goodput == pytest.approx(good.output_throughput)
    assert bad.good_requests == 0 and bad.request_goodput == 0.0 and bad.output_goodput == 0.0
    assert none.good_requests is None and none.request_goodput is None
