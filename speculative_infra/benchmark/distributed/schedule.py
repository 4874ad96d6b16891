"""One arrival schedule for the whole test, cut into waves and dealt out to workers.

Open loop: arrivals follow the profile's rate (held or ramped per step) as a renewal process in
operational time: gaps of the cumulative rate Λ(t) are gamma-distributed with mean 1 and shape
``burstiness``, and each arrival's time is Λ⁻¹ of its operational time. At a held rate the gaps are
those ``bench --request-rate`` draws (``load.arrival_offsets``); at burstiness 1 the process is Poisson
at the profile's rate. Each wave draws from its own seed (``<seed>:<wave>``) starting at Λ of its start, so a
worker computes only its own wave; arrival ``k`` of a wave goes to worker ``k mod workers``, so the
workers' slices together are the schedule, arrival for arrival, whatever the number of workers.

Closed loop: a wave is cut at step boundaries into segments; each worker holds its share of each
segment's concurrency (shares differ by at most one).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .profile import LoadStep, LoadTestConfig

WAVE_INDEX_STRIDE = 1_000_000_000
"""Prompt index of arrival ``k`` of wave ``w``: ``w * stride + k`` (unique over the test)."""


@dataclass(frozen=True, slots=True)
class Arrival:
    index: int
    """Unique over the test (seeds the prompt and names the request)."""
    at_s: float
    """Seconds from the test's start."""
    step: int


@dataclass(frozen=True, slots=True)
class Segment:
    """Part of a wave inside one closed-loop step."""

    step: int
    start_s: float
    end_s: float
    concurrency: int


def _cumulative(step: LoadStep, u: float) -> float:
    """Λ over ``u`` seconds into the step: the integral of its (linear) rate."""
    assert step.request_rate is not None
    slope = ((step.ramp_to_rate or step.request_rate) - step.request_rate) / step.duration_s
    return step.request_rate * u + slope * u * u / 2


def _inverse(step: LoadStep, amount: float) -> float:
    """Seconds into the step at which Λ has grown by ``amount`` (solves the quadratic stably)."""
    assert step.request_rate is not None
    slope = ((step.ramp_to_rate or step.request_rate) - step.request_rate) / step.duration_s
    r0 = step.request_rate
    return 2 * amount / (r0 + math.sqrt(max(r0 * r0 + 2 * slope * amount, 0.0)))


def step_index_at(config: LoadTestConfig, t: float) -> int:
    """The step running ``t`` seconds into the test (the last one at or after the end)."""
    for i, start in enumerate(config.step_starts()):
        if t < start + config.steps[i].duration_s:
            return i
    return len(config.steps) - 1


def wave_window(config: LoadTestConfig, wave: int) -> tuple[float, float]:
    """Seconds from the test's start at which the wave's sending begins and ends."""
    start = wave * config.wave_s
    return start, min(start + config.wave_s, config.duration_s)


def wave_arrivals(config: LoadTestConfig, wave: int) -> list[Arrival]:
    """Every arrival of one wave, in time order (open loop)."""
    if not config.open_loop:
        return []
    start, end = wave_window(config, wave)
    rng = random.Random(f"{config.seed}:{wave}")
    shape = config.burstiness
    steps, starts = config.steps, config.step_starts()
    out: list[Arrival] = []
    j = step_index_at(config, start)
    # Operational time left in the current step from the wave's start.
    offset = start - starts[j]
    consumed = _cumulative(steps[j], offset)
    while True:
        gap = rng.gammavariate(shape, 1.0 / shape)
        consumed += gap
        # Carry the operational time over step boundaries until it falls inside a step.
        while consumed > _cumulative(steps[j], steps[j].duration_s):
            if j + 1 >= len(steps):
                return out
            consumed -= _cumulative(steps[j], steps[j].duration_s)
            j += 1
        at = starts[j] + _inverse(steps[j], consumed)
        if at >= end:
            return out
        out.append(Arrival(wave * WAVE_INDEX_STRIDE + len(out), at, j))


def worker_arrivals(config: LoadTestConfig, wave: int, worker: int) -> list[Arrival]:
    """Worker ``worker``'s slice of a wave: every ``workers``-th arrival from its own position."""
    return wave_arrivals(config, wave)[worker :: config.workers]


def wave_segments(config: LoadTestConfig, wave: int) -> list[Segment]:
    """The closed-loop steps a wave runs through, cut at its window."""
    if config.open_loop:
        return []
    start, end = wave_window(config, wave)
    out = []
    for i, (step, step_start) in enumerate(zip(config.steps, config.step_starts(), strict=True)):
        lo, hi = max(start, step_start), min(end, step_start + step.duration_s)
        if hi > lo:
            assert step.concurrency is not None
            out.append(Segment(i, lo, hi, step.concurrency))
    return out


def worker_slots(concurrency: int, workers: int, worker: int) -> int:
    """Worker ``worker``'s share of a closed-loop concurrency (the first ones get one more)."""
    return concurrency // workers + (1 if worker < concurrency % workers else 0)
