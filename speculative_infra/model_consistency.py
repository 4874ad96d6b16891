"""Model facts that contradict each other, wherever they come from (catalog, spec, `facts fetch`).

Each fact passes its own range check where it is read; these are the relations between facts that a
real checkpoint always satisfies. vLLM assumes them without checking (a KV head count that does not
divide the attention heads fails inside the attention kernels, a mixture with more experts per token
than experts fails loading), so a model that breaks one is a typo or a hostile file, not a model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _number(facts: Mapping[str, Any], name: str) -> float | None:
    value = facts.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def model_facts_problems(facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, reason) for each relation the facts break; facts not given are not judged."""
    problems: list[tuple[str, str]] = []
    heads = _number(facts, "num_attention_heads")
    kv_heads = _number(facts, "num_key_value_heads")
    if heads is not None and kv_heads is not None and (kv_heads > heads or heads % kv_heads):
        problems.append(
            (
                "num_key_value_heads",
                f"{kv_heads:g} does not divide num_attention_heads {heads:g}; allowed: a divisor of the "
                "attention heads (grouped-query attention shares each KV head among a whole group)",
            )
        )
    layers = _number(facts, "num_hidden_layers")
    window_layers = _number(facts, "sliding_window_layers")
    if layers is not None and window_layers is not None and window_layers > layers:
        problems.append(
            (
                "sliding_window_layers",
                f"{window_layers:g} is more than num_hidden_layers {layers:g}; allowed: 0 to {layers:g}",
            )
        )
    total = _number(facts, "parameters_billion")
    for part in ("active_parameters_billion", "quantized_parameters_billion"):
        share = _number(facts, part)
        if total is not None and share is not None and share > total:
            problems.append((part, f"{share:g} is more than parameters_billion {total:g}; allowed: up to it"))
    experts = _number(facts, "num_experts")
    per_token = _number(facts, "experts_per_token")
    if experts is not None and per_token is not None and per_token > experts:
        problems.append(
            (
                "experts_per_token",
                f"{per_token:g} is more than num_experts {experts:g}; allowed: 1 to {experts:g}",
            )
        )
    return problems
