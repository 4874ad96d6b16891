"""Before deploy: predict what a checked deployment delivers (tokens/s, latency, $ per million tokens)
and recommend the cheapest one that meets the SLOs. Pure functions over `resolve`'s result; the
equations, what they ignore and their measured accuracy are in docs/planner.md."""
