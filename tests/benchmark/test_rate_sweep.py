"""The rate sweep on the virtual clock, against a fake server whose TTFT grows with its load."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from speculative_infra.benchmark.config import (
    BenchmarkConfig,
    ConfigError,
    HttpTarget,
    LoadConfig,
    RateSweepConfig,
    SloConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.rate_sweep import run_rate_sweep, sweep_position
from speculative_infra.benchmark.recorder import StreamRecorder
from speculative_infra.benchmark.results import LevelResult
from speculative_infra.benchmark.transports.base import WireRequest
from speculative_infra.cli.main import main

from .fakes import FakeClock, FakeTransport

WORKLOAD = WorkloadConfig(input_tokens=20, output_tokens=10, seed=2)


class LoadedServer(FakeTransport):
    """TTFT = 100 ms + 50 ms per other open request: past a few requests/s it misses a 300 ms SLO."""

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        self.ttft = 0.1 + 0.05 * self.in_flight
        await super().send(request, rec)


def sweep(rate_sweep: RateSweepConfig) -> tuple[list[float], float | None, str, list[float]]:
    clock = FakeClock()
    transport = LoadedServer(clock, WORKLOAD, interval=0.01)
    config = BenchmarkConfig(
        target=HttpTarget(base_url="http://127.0.0.1:1"),
        workload=WORKLOAD,
        load=LoadConfig(requests_per_level=40, warmup_requests=2),
        slo=SloConfig(ttft_ms=300),
        rate_sweep=rate_sweep,
    )
    state = asyncio.run(clock.drive(run_rate_sweep(config, transport, clock=clock)))
    levels = state.result.levels
    rates = [level.request_rate for level in levels]
    assert all(r is not None for r in rates)
    shares = [(lv.good_requests or 0) / max(1, lv.completed + lv.failed) for lv in levels]
    return rates, state.result.max_sustained_rate, state.result.status, shares  # type: ignore[return-value]


def test_doubles_until_a_rate_misses_then_bisects() -> None:
    rates, best, status, shares = sweep(RateSweepConfig(start_rate=1.0, bisection_steps=2))
    assert status == "complete"
    # 1, 2, 4 ... until the first miss; then two bisections between the last good and the first bad rate.
    doublings = [r for r in rates if r in (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)]
    first_bad = doublings[-1]
    assert rates[: len(doublings)] == [2.0**i for i in range(len(doublings))]
    assert len(rates) == len(doublings) + 2
    assert best is not None and first_bad / 2 <= best < first_bad
    # The answer is a probe that met the SLOs (>= 90 % good), and the probe that stopped the doubling did not.
    assert shares[rates.index(best)] >= 0.9 and shares[rates.index(first_bad)] < 0.9


def test_a_start_rate_that_already_misses_finds_nothing() -> None:
    rates, best, _, _ = sweep(RateSweepConfig(start_rate=200.0, bisection_steps=3))
    assert rates == [200.0] and best is None


def test_max_rate_caps_the_search() -> None:
    rates, best, _, _ = sweep(RateSweepConfig(start_rate=0.5, max_rate=1.5))
    assert rates == [0.5, 1.0, 1.5] and best == 1.5


def test_a_sweep_needs_objectives() -> None:
    with pytest.raises(ConfigError, match="rate_sweep"):
        BenchmarkConfig(target=HttpTarget(base_url="http://h:1"), rate_sweep=RateSweepConfig(start_rate=1))
    with pytest.raises(ConfigError, match="min_attainment"):
        RateSweepConfig(start_rate=1, min_attainment=1.5)


def test_cli_option_combinations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "r.json")
    assert main(["bench", "--url", "http://127.0.0.1:9", "--rate-sweep", "1", "-o", out]) == 2
    assert "--rate-sweep: requires --slo" in capsys.readouterr().err
    code = main(
        [
            "bench",
            "--url",
            "http://h:9",
            "--rate-sweep",
            "1",
            "--slo",
            "ttft_ms=5",
            "--request-rate",
            "2",
            "-o",
            out,
        ]
    )
    assert code == 2 and "not with --request-rate" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "--url", "http://h:9", "--slo", "ttft=5", "-o", out])
    assert "KEY one of ttft_ms, tpot_ms, e2el_ms" in capsys.readouterr().err


def test_sustained_boundaries() -> None:
    from speculative_infra.benchmark.rate_sweep import sustained
    from speculative_infra.benchmark.results import LevelResult

    base = LevelResult(
        concurrency=0,
        request_rate=4.0,
        complete=True,
        stop_reason="complete",
        warmup_requests=0,
        planned_requests=10,
        completed=9,
        failed=1,
        cancelled=0,
        good_requests=9,
        p99_client_lag_ms=100.0,
    )
    rule = RateSweepConfig(start_rate=1.0, min_attainment=0.9, max_p99_lateness_ms=100.0)
    assert sustained(base, rule)  # 9 of 10 good, exactly 100 ms late at p99: both limits inclusive
    assert not sustained(dataclasses.replace(base, good_requests=8), rule)
    assert not sustained(dataclasses.replace(base, p99_client_lag_ms=100.01), rule)
    assert not sustained(dataclasses.replace(base, good_requests=None), rule)  # no SLO judged
    assert not sustained(dataclasses.replace(base, completed=0, failed=0, good_requests=0), rule)


def _probe_level(rate: float, good: int, measured: int = 10, lag_ms: float = 1.0) -> LevelResult:
    return LevelResult(
        concurrency=0,
        request_rate=rate,
        complete=True,
        stop_reason="completed",
        warmup_requests=0,
        planned_requests=measured,
        completed=measured,
        failed=0,
        cancelled=0,
        good_requests=good,
        p99_client_lag_ms=lag_ms,
    )


def test_sweep_position_replays_a_sweep_from_its_levels_alone() -> None:
    # What a Lambda sees between invocations: only the probes so far. 1 and 2 sustained, 4 missed; then
    # bisections 3 (sustained) and 3.5 (missed); with two steps the answer is 3.
    config = RateSweepConfig(start_rate=1.0, bisection_steps=2)
    seen = [
        _probe_level(1, 10),
        _probe_level(2, 9),
        _probe_level(4, 8),
        _probe_level(3, 10),
        _probe_level(3.5, 5),
    ]
    expected_next = [2.0, 4.0, 3.0, 3.5, None]
    for count, rate in enumerate(expected_next, start=1):
        assert sweep_position(seen[:count], config)[0] == rate
    assert sweep_position(seen, config) == (None, 3.0)
    assert sweep_position([], config) == (1.0, None)


def test_a_late_client_does_not_count_as_sustained() -> None:
    # 10 of 10 good, but sent 150 ms late at p99 (> 100 ms): the client, not the server, fell behind.
    config = RateSweepConfig(start_rate=1.0, bisection_steps=1)
    assert sweep_position([_probe_level(1, 10, lag_ms=150.0)], config) == (None, None)
    assert sweep_position([_probe_level(1, 10, lag_ms=100.0)], config) == (2.0, 1.0)
