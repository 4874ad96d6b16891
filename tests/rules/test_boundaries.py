"""Every numeric rule at its edge: the last value that passes and the first that fails."""

from __future__ import annotations

import re
from typing import Any

import pytest

from speculative_infra.check import check
from speculative_infra.render import render_environment
from tests.conftest import REFERENCE_SPEC, deep_merge

G6E_12XL = {"instance_type": "ml.g6e.12xlarge", "engine": {"tensor_parallel_size": 4}}
NGRAM = {"method": "ngram", "model": None, "num_speculative_tokens": 3}
LLAMA_A10G = {
    "instance_type": "ml.g5.xlarge",
    "container": {"version": "0.11.0"},
    "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
    "hf_token_secret": "hf-token",
    "speculative": None,
}


def _codes(changes: dict[str, Any]) -> set[str]:
    return {f.code for f in check(deep_merge(REFERENCE_SPEC, changes)).findings}


def _reference_env_size() -> tuple[int, int]:
    env = render_environment(check(REFERENCE_SPEC).deployment) or {}
    return len(env), sum(len(k) + len(v) for k, v in env.items())


ENTRIES, TOTAL = _reference_env_size()


def _fill(count: int, total: int) -> dict[str, str]:
    """`count` extra variables whose names and values add `total` bytes (each item <= 1024 bytes)."""
    names = [f"X{i:03d}" for i in range(count)]
    budget = total - sum(map(len, names))
    values = []
    for _ in names:
        size = min(1024, budget)
        values.append("v" * size)
        budget -= size
    assert budget == 0, "not enough variables to carry that many bytes"
    return dict(zip(names, values, strict=True))


# (rule, changes that just pass, changes that just fail)
EDGES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("SI310", G6E_12XL, {**G6E_12XL, "engine": {"tensor_parallel_size": 5}}),
    ("SI320", {"engine": {"max_model_len": 40960}}, {"engine": {"max_model_len": 40961}}),
    ("SI404", {"speculative": {"num_speculative_tokens": 1}}, {"speculative": {"num_speculative_tokens": 0}}),
    (
        "SI405",
        {**G6E_12XL, "speculative": {"draft_tensor_parallel_size": 4}},
        {**G6E_12XL, "speculative": {"draft_tensor_parallel_size": 3}},
    ),
    # MXFP4 from compute capability 8.0 (vLLM's Mxfp4Config): the A100 (8.0) of p4d passes, the T4 (7.5) fails.
    (
        "SI203",
        {
            "instance_type": "ml.p4d.24xlarge",
            "container": {"version": "0.11.0"},
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096},
        },
        {
            "instance_type": "ml.g4dn.12xlarge",
            "container": {"version": "0.11.0"},
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 4, "max_model_len": 4096},
        },
    ),
    (
        "SI413",
        {"speculative": {**NGRAM, "prompt_lookup_min": 4, "prompt_lookup_max": 4}},
        {"speculative": {**NGRAM, "prompt_lookup_min": 5, "prompt_lookup_max": 4}},
    ),
    (
        "SI413",
        {"speculative": {**NGRAM, "prompt_lookup_max": 1}},
        {"speculative": {**NGRAM, "prompt_lookup_max": 0}},
    ),
    (
        "SI510",
        {"environment": _fill(100 - ENTRIES, 100 - ENTRIES)},
        {"environment": _fill(101 - ENTRIES, 101 - ENTRIES)},
    ),
    ("SI510", {"environment": {"V": "x" * 1024}}, {"environment": {"V": "x" * 1025}}),
    ("SI510", {"environment": {"K" * 1024: "x"}}, {"environment": {"K" * 1025: "x"}}),
    (
        "SI510",
        {"environment": _fill(40, 32 * 1024 - TOTAL)},
        {"environment": _fill(40, 32 * 1024 - TOTAL + 1)},
    ),
    (
        "SI600",
        {"scaling": {"min_capacity": 2, "max_capacity": 2}},
        {"scaling": {"min_capacity": 3, "max_capacity": 2}},
    ),
    (
        "SI600",
        {"scaling": {"min_capacity": 1, "max_capacity": 1}},
        {"scaling": {"min_capacity": 1, "max_capacity": 0}},
    ),
    (
        "SI601",
        {"scaling": {"max_capacity": 2, "target_value": 0.001}},
        {"scaling": {"max_capacity": 2, "target_value": 0}},
    ),
]


@pytest.mark.parametrize(("code", "passes", "fails"), EDGES, ids=[f"{e[0]}-{i}" for i, e in enumerate(EDGES)])
def test_edge(code, passes, fails):
    assert code not in _codes(passes)
    assert code in _codes(fails)


def test_memory_edge_is_the_suggested_length():
    """SI300 at its edge: the longest max_model_len it suggests passes, one token more fails."""
    full_context = {**LLAMA_A10G, "engine": {"max_model_len": 131072}}
    finding = next(f for f in check(deep_merge(REFERENCE_SPEC, full_context)).findings if f.code == "SI300")
    edge = int(re.search(r"at most (\d+)", finding.fix).group(1))
    assert (
        8192 < edge < 131072
    )  # an 8B model on a 24 GB A10G holds tens of thousands of tokens, not its context
    assert "SI300" not in _codes({**LLAMA_A10G, "engine": {"max_model_len": edge}})
    assert "SI300" in _codes({**LLAMA_A10G, "engine": {"max_model_len": edge + 1}})
