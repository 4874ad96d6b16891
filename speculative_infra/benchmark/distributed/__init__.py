"""A load test spread over many workers (Lambda functions, or local processes) and merged in one place.

One global arrival schedule is drawn from a shared seed and cut into waves (each shorter than a Lambda
lives) and slices (one per worker); each worker runs its slice with the benchmark engine and returns
per-request records and mergeable latency sketches; the merge computes every percentile from the merged
sketches and every count from the records, and lines the client's timeline up with the endpoint's
scaling. Standard library plus ``ddsketch`` (pure Python), so it runs inside a Lambda asset.
"""
