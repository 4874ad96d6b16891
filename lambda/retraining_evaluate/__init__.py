"""Measure a candidate EAGLE head against the served one on replayed traffic (the benchmark engine)."""
