"""Model facts that are out of range or contradict each other, wherever they come from (the catalog, a
spec, `facts fetch`, cdk.context.json): one table of bounds and one set of relations for all of them.

The relations are ones every real checkpoint satisfies. vLLM assumes them without checking (a KV head
count that does not divide the attention heads fails inside the attention kernels, a mixture with more
experts per token than experts fails loading), so facts that break one are a typo or a hostile file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# Bounds far above every published model, so that arithmetic on them stays finite and meaningful.
MAX_LAYERS = 10_000  # the deepest published models have ~130
MAX_HEADS = 10_000  # the widest have 128 attention heads
MAX_HEAD_DIM = 16_384
MAX_HIDDEN_SIZE = 2**20
MAX_ATTENTION_WIDTH = 2**20  # head_dim x num_attention_heads (Llama-3.1-405B: 16,384)
ATTENTION_WIDTH_RATIO = 8  # head_dim x heads within 1/8 to 8 times hidden_size (real ones: 0.76 to 2)
MAX_CONTEXT_TOKENS = 2**31 - 1  # vLLM's max_model_len is an int32
MAX_VOCAB_SIZE = 2**24  # the largest real vocabularies hold ~262,000 tokens
MAX_EXPERTS = 1_000_000
# Below a thousand parameters (a kilobyte of weights) there is no model, only a typo of units; above
# 10^14 parameters (a petabyte) there is none yet.
MIN_PARAMETERS_BILLION, MAX_PARAMETERS_BILLION = 1e-6, 1e5
MIN_WEIGHTS_GB, MAX_WEIGHTS_GB = 1e-6, 1e6
# A checkpoint's bytes per parameter: 1-bit (BitNet's 1.58-bit, 4-bit groups with scales) to fp32 with
# every tensor duplicated; outside it, the weights and the parameter count describe different models.
GB_PER_BILLION_PARAMETERS = (0.1, 8.0)

# field -> (lowest, highest) allowed
BOUNDS: dict[str, tuple[float, float]] = {
    "parameters_billion": (MIN_PARAMETERS_BILLION, MAX_PARAMETERS_BILLION),
    "active_parameters_billion": (MIN_PARAMETERS_BILLION, MAX_PARAMETERS_BILLION),
    "quantized_parameters_billion": (MIN_PARAMETERS_BILLION, MAX_PARAMETERS_BILLION),
    "weights_gb": (MIN_WEIGHTS_GB, MAX_WEIGHTS_GB),
    "num_hidden_layers": (1, MAX_LAYERS),
    "num_attention_heads": (1, MAX_HEADS),
    "num_key_value_heads": (1, MAX_HEADS),
    "head_dim": (1, MAX_HEAD_DIM),
    "hidden_size": (1, MAX_HIDDEN_SIZE),
    "max_position_embeddings": (1, MAX_CONTEXT_TOKENS),
    "sliding_window": (1, MAX_CONTEXT_TOKENS),
    "sliding_window_layers": (0, MAX_LAYERS),
    "mtp_layers": (0, MAX_LAYERS),
    "vocab_size": (1, MAX_VOCAB_SIZE),
    "num_experts": (1, MAX_EXPERTS),
    "experts_per_token": (1, MAX_EXPERTS),
}


def _number(facts: Mapping[str, Any], name: str) -> float | None:
    value = facts.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _bound_problems(facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for name, (low, high) in BOUNDS.items():
        value = _number(facts, name)
        if value is None:
            continue
        if not math.isfinite(value) or not low <= value <= high:
            problems.append((name, f"is {value!r}; allowed: {low:g} to {high:g}"))
    return problems


def _ratio_problem(part: float, whole: float, ratio: float) -> bool:
    return not (part <= whole * ratio and whole <= part * ratio)


def model_facts_problems(facts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, reason) for each bound or relation the facts break; facts not given are not judged.

    A reason reads after the field's name: "num_key_value_heads" + " 7 does not divide ...".
    """
    problems = _bound_problems(facts)
    if problems:
        return problems  # relations between out-of-range numbers say nothing more
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
    for part in ("sliding_window_layers", "mtp_layers"):
        value = _number(facts, part)
        if layers is not None and value is not None and value > layers:
            problems.append(
                (part, f"{value:g} is more than num_hidden_layers {layers:g}; allowed: 0 to {layers:g}")
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
    head_dim = _number(facts, "head_dim")
    hidden = _number(facts, "hidden_size")
    if head_dim is not None and heads is not None:
        width = head_dim * heads
        if width > MAX_ATTENTION_WIDTH:
            problems.append(
                ("head_dim", f"x num_attention_heads is {head_dim:g} x {heads:g} = {width:g}; allowed: at most "
                 f"{MAX_ATTENTION_WIDTH}")
            )  # fmt: skip
        elif hidden is not None and _ratio_problem(width, hidden, ATTENTION_WIDTH_RATIO):
            problems.append(
                ("head_dim", f"x num_attention_heads is {width:g} for hidden_size {hidden:g}; allowed: "
                 f"1/{ATTENTION_WIDTH_RATIO} to {ATTENTION_WIDTH_RATIO} times hidden_size")
            )  # fmt: skip
    # Judged only where the method is given: a spec may add a scheme or sparsity to facts that carry the
    # method themselves (catalog, `facts fetch`); resolved facts always pass theirs (SI331).
    method = facts.get("quantization")
    for part in ("quantization_scheme", "sparsity"):
        if facts.get(part) is not None and "quantization" in facts and method != "compressed-tensors":
            problems.append(
                (part, f"{facts[part]!r} is given for quantization {method!r}; allowed: only with quantization "
                 "'compressed-tensors', the one method whose config carries it")
            )  # fmt: skip
    weights = _number(facts, "weights_gb")
    if weights is not None and total is not None:
        low, high = GB_PER_BILLION_PARAMETERS
        if not low * total <= weights <= high * total:
            problems.append(
                ("weights_gb", f"{weights:g} for {total:g} billion parameters; allowed: {low:g} to {high:g} GB "
                 "per billion parameters (1-bit to fp32 checkpoints)")
            )  # fmt: skip
    return problems
