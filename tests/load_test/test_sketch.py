"""DDSketch percentiles: within the stated 1% of the exact order statistic, merged as if fed in one place."""

from __future__ import annotations

import json
import random

import pytest

from speculative_infra.benchmark.distributed.sketch import RELATIVE_ACCURACY, LatencySketch
from speculative_infra.benchmark.schema import ConfigError

QUANTILES = (0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0)


def _exact(values, q):
    """The order statistic DDSketch answers for: rank q (n - 1), rounded down."""
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


@pytest.mark.parametrize("seed", range(5))
def test_every_quantile_is_within_the_stated_relative_error(seed):
    rng = random.Random(seed)
    values = [rng.lognormvariate(4, 1.2) for _ in range(5000)]
    sketch = LatencySketch()
    sketch.extend(values)
    for q in QUANTILES:
        exact = _exact(values, q)
        assert abs(sketch.quantile(q) - exact) <= RELATIVE_ACCURACY * exact * (1 + 1e-9)


def test_merged_sketches_answer_as_one_sketch_fed_everything():
    rng = random.Random(7)
    parts = [[rng.expovariate(1 / (20 + 30 * k)) for _ in range(1000 + 300 * k)] for k in range(6)]
    one = LatencySketch()
    merged = LatencySketch()
    for part in parts:
        one.extend(part)
        piece = LatencySketch()
        piece.extend(part)
        merged.merge(LatencySketch.from_dict(json.loads(json.dumps(piece.to_dict()))))
    everything = [v for part in parts for v in part]
    assert merged.count == one.count == len(everything)
    for q in QUANTILES:
        assert merged.quantile(q) == one.quantile(q)
        assert abs(merged.quantile(q) - _exact(everything, q)) <= RELATIVE_ACCURACY * _exact(
            everything, q
        ) * (1 + 1e-9)


def test_averaging_per_worker_p99s_is_wrong_and_the_merge_is_not():
    """Why percentiles are never averaged: a slow worker's tail disappears in a mean of p99s."""
    fast = [10.0] * 990 + [11.0] * 10
    slow = [10.0] * 900 + [500.0] * 100
    a, b, both = LatencySketch(), LatencySketch(), LatencySketch()
    a.extend(fast)
    b.extend(slow)
    both.merge(a)
    both.merge(b)
    exact = _exact(fast + slow, 0.99)
    assert abs(both.percentile(99) - exact) <= RELATIVE_ACCURACY * exact
    averaged = (a.percentile(99) + b.percentile(99)) / 2
    assert abs(averaged - exact) > 0.4 * exact


def test_zeros_and_empty_sketches():
    sketch = LatencySketch()
    assert sketch.quantile(0.5) is None
    sketch.extend([0.0, 0.0, 5.0])
    assert sketch.quantile(0.0) == 0
    restored = LatencySketch.from_dict(sketch.to_dict())
    assert restored.count == 3 and restored.quantile(0.0) == 0
    assert abs(restored.quantile(1.0) - 5.0) <= 0.05


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"relative_accuracy": 0.01, "zeros": 0}, "sketch"),
        ({"relative_accuracy": 2.0, "zeros": 0, "buckets": []}, "sketch.relative_accuracy"),
        ({"relative_accuracy": 0.01, "zeros": -1, "buckets": []}, "sketch.zeros"),
        ({"relative_accuracy": 0.01, "zeros": 0, "buckets": [[1, 0]]}, "sketch.buckets[0]"),
        ({"relative_accuracy": 0.01, "zeros": 0, "buckets": [[1.5, 2]]}, "sketch.buckets[0]"),
        ({"relative_accuracy": 0.01, "zeros": 0, "buckets": [[10**9, 1]]}, "sketch.buckets[0]"),
        ({"relative_accuracy": 0.01, "zeros": 0, "buckets": "x"}, "sketch.buckets"),
    ],
)
def test_a_malformed_sketch_is_refused_with_its_field(data, field):
    with pytest.raises(ConfigError) as error:
        LatencySketch.from_dict(data)
    assert error.value.field == field


def test_sketches_of_different_accuracy_do_not_merge():
    with pytest.raises(ValueError, match="relative accuracy"):
        LatencySketch(0.01).merge(LatencySketch(0.02))
