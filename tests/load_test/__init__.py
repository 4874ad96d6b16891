"""The distributed load test: schedule, sketches, merge, scaling validation, fan-out and handlers."""
