"""One arrival schedule: the workers' slices are the schedule, waves keep its rate and gap distribution."""

from __future__ import annotations

import itertools
import math
import statistics

import pytest

from speculative_infra.benchmark.distributed.schedule import (
    wave_arrivals,
    wave_segments,
    worker_arrivals,
    worker_slots,
)
from speculative_infra.benchmark.load import arrival_offsets

from .helpers import load_test


def _all(config):
    return [a for w in range(config.waves) for a in wave_arrivals(config, w)]


@pytest.mark.parametrize("workers", [1, 3, 7])
def test_slices_together_are_the_schedule_arrival_for_arrival(workers):
    config = load_test([{"duration_s": 300, "request_rate": 20}], workers=workers, wave_s=120)
    for wave in range(config.waves):
        whole = wave_arrivals(config, wave)
        slices = [worker_arrivals(config, wave, k) for k in range(workers)]
        merged = sorted((a for s in slices for a in s), key=lambda a: a.at_s)
        assert merged == whole
        assert sum(len(s) for s in slices) == len(whole)
        assert max(len(s) for s in slices) - min(len(s) for s in slices) <= 1


def test_the_schedule_depends_on_the_seed_only():
    a = load_test([{"duration_s": 60, "request_rate": 5}], workers=2)
    b = load_test([{"duration_s": 60, "request_rate": 5}], workers=5)
    c = load_test([{"duration_s": 60, "request_rate": 5}], workers=2, seed="other")
    assert wave_arrivals(a, 0) == wave_arrivals(b, 0)
    assert wave_arrivals(a, 0) != wave_arrivals(c, 0)


def _gaps(times):
    return [b - a for a, b in itertools.pairwise(times)]


def _ks(xs, ys):
    """Two-sample Kolmogorov-Smirnov distance."""
    xs, ys = sorted(xs), sorted(ys)
    i = j = 0
    d = 0.0
    while i < len(xs) and j < len(ys):
        if xs[i] <= ys[j]:
            i += 1
        else:
            j += 1
        d = max(d, abs(i / len(xs) - j / len(ys)))
    return d


@pytest.mark.parametrize("burstiness", [1.0, 0.5, 4.0])
def test_waves_keep_the_rate_and_gap_distribution_of_one_client(burstiness):
    steps = [{"duration_s": 2000, "request_rate": 10}]
    waved = load_test(steps, workers=4, wave_s=100, burstiness=burstiness)
    times = sorted(a.at_s for a in _all(waved))
    # One client: the engine's own draw for `bench --request-rate 10 --burstiness b`.
    one = arrival_offsets(10, burstiness, len(times), "one-client")
    expected = 10 * 2000
    assert abs(len(times) - expected) < 5 * math.sqrt(expected / burstiness)
    g_waved, g_one = _gaps(times), _gaps(one)
    assert statistics.mean(g_waved) == pytest.approx(statistics.mean(g_one), rel=0.03)
    cv = statistics.stdev(g_waved) / statistics.mean(g_waved)
    assert cv == pytest.approx(1 / math.sqrt(burstiness), rel=0.06)
    assert _ks(g_waved, g_one) < 0.03


def test_a_ramp_follows_the_integral_of_its_rate():
    config = load_test([{"duration_s": 1000, "request_rate": 5, "ramp_to_rate": 45}], wave_s=700, drain_s=60)
    times = [a.at_s for a in _all(config)]
    # Rate 5 + 0.04 t: arrivals in [0, 500) expected 5*500 + 0.02*500^2 = 7500; in [500, 1000) 17500.
    first, second = sum(t < 500 for t in times), sum(t >= 500 for t in times)
    assert abs(first - 7500) < 5 * math.sqrt(7500)
    assert abs(second - 17500) < 5 * math.sqrt(17500)


def test_steps_change_the_rate_at_their_boundary_and_nothing_arrives_after_the_end():
    config = load_test(
        [{"duration_s": 200, "request_rate": 5}, {"duration_s": 200, "request_rate": 15}], wave_s=150
    )
    arrivals = _all(config)
    assert all(0 <= a.at_s < 400 for a in arrivals)
    assert all(a.step == (0 if a.at_s < 200 else 1) for a in arrivals)
    first = sum(a.step == 0 for a in arrivals)
    second = sum(a.step == 1 for a in arrivals)
    assert abs(first - 1000) < 5 * math.sqrt(1000)
    assert abs(second - 3000) < 5 * math.sqrt(3000)
    assert len({a.index for a in arrivals}) == len(arrivals)  # prompt indices unique over the test


def test_closed_loop_segments_cut_at_steps_and_waves_and_shares_sum_to_the_concurrency():
    config = load_test(
        [{"duration_s": 100, "concurrency": 5}, {"duration_s": 100, "concurrency": 11}], workers=3, wave_s=150
    )
    assert [(s.step, s.start_s, s.end_s, s.concurrency) for s in wave_segments(config, 0)] == [
        (0, 0, 100, 5),
        (1, 100, 150, 11),
    ]
    assert [(s.step, s.start_s, s.end_s) for s in wave_segments(config, 1)] == [(1, 150, 200)]
    for c in (1, 5, 11, 12):
        shares = [worker_slots(c, 3, k) for k in range(3)]
        assert sum(shares) == c and max(shares) - min(shares) <= 1
