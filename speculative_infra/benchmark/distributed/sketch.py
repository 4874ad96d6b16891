"""Mergeable latency sketches: DDSketch (Datadog's ``ddsketch`` package) with 1% relative accuracy.

DDSketch maps each value to a logarithmic bucket; the value it returns for a quantile ``q`` of ``n``
values lies within ``relative_accuracy`` (relative) of the exact order statistic at rank ``q (n - 1)``
(rounded down), and merging two sketches adds bucket counts, so a merged sketch answers exactly as one
sketch fed every value would. Percentiles of a distributed test come from merged sketches, never from
averages of per-worker percentiles (which are not percentiles of anything).

The JSON form holds the accuracy and the non-empty buckets (``[key, count]``), so a worker's sketches
travel through S3 and merge anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ddsketch import LogarithmicMapping
from ddsketch.ddsketch import BaseDDSketch
from ddsketch.store import DenseStore

from ..schema import ConfigError

RELATIVE_ACCURACY = 0.01
"""Every percentile from a sketch is within 1% of the exact value at its rank."""
MAX_BUCKETS = 100_000
"""Buckets of one serialized sketch (1% buckets span 1e-300..1e300 in ~70,000)."""


class LatencySketch:
    """Positive values (milliseconds); zeros are counted apart, as DDSketch does."""

    def __init__(self, relative_accuracy: float = RELATIVE_ACCURACY) -> None:
        self.relative_accuracy = relative_accuracy
        self._mapping = LogarithmicMapping(relative_accuracy)
        self._store = DenseStore()
        self._zeros = 0
        self._sketch = BaseDDSketch(self._mapping, self._store, DenseStore(), 0.0)

    @property
    def count(self) -> int:
        return int(self._sketch.count)

    def add(self, value: float) -> None:
        if value <= self._mapping.min_possible:
            self._zeros += 1
        self._sketch.add(max(value, 0.0))

    def extend(self, values: Iterable[float]) -> None:
        for value in values:
            self.add(value)

    def merge(self, other: LatencySketch) -> None:
        if other.relative_accuracy != self.relative_accuracy:
            raise ValueError(
                f"cannot merge sketches of relative accuracy {other.relative_accuracy} and "
                f"{self.relative_accuracy}"
            )
        self._zeros += other._zeros
        self._sketch.merge(other._sketch)

    def quantile(self, q: float) -> float | None:
        """The value at quantile ``q`` (0-1), or None when empty."""
        value = self._sketch.get_quantile_value(q)
        return None if value is None else float(value)

    def percentile(self, p: float) -> float | None:
        return self.quantile(p / 100.0)

    def to_dict(self) -> dict[str, Any]:
        store = self._store
        buckets = [
            [store.offset + i, int(n)] for i, n in enumerate(store.bins) if n
        ]  # counts are whole: every value is added with weight 1
        return {"relative_accuracy": self.relative_accuracy, "zeros": self._zeros, "buckets": buckets}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], field: str = "sketch") -> LatencySketch:
        if not isinstance(data, Mapping) or set(data) != {"relative_accuracy", "zeros", "buckets"}:
            raise ConfigError(field, data, "an object with relative_accuracy, zeros and buckets")
        accuracy, zeros, buckets = data["relative_accuracy"], data["zeros"], data["buckets"]
        if not isinstance(accuracy, float) or not 0 < accuracy < 1:
            raise ConfigError(f"{field}.relative_accuracy", accuracy, "a number between 0 and 1")
        if not isinstance(zeros, int) or isinstance(zeros, bool) or zeros < 0:
            raise ConfigError(f"{field}.zeros", zeros, "a count (integer >= 0)")
        if not isinstance(buckets, list) or len(buckets) > MAX_BUCKETS:
            raise ConfigError(
                f"{field}.buckets", buckets, f"a list of at most {MAX_BUCKETS} [key, count] pairs"
            )
        sketch = cls(accuracy)
        for i, pair in enumerate(buckets):
            if (
                not isinstance(pair, list)
                or len(pair) != 2
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair)
                or pair[1] < 1
                or abs(pair[0]) > MAX_BUCKETS
            ):
                raise ConfigError(f"{field}.buckets[{i}]", pair, "[key, count] with integers, count >= 1")
            sketch._store.add(pair[0], pair[1])
        sketch._zeros = zeros
        # A fresh sketch over the filled stores recounts them (the constructor sums the stores).
        sketch._sketch = BaseDDSketch(sketch._mapping, sketch._store, DenseStore(), float(zeros))
        return sketch
