"""`check` reports a KV cache larger than the model's context as room for full-context sequences, never
as a usable length beyond the context; the JSON keeps `longest_sequence_that_fits` and adds clear keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check

# A model the spec describes (not in the catalog), so its context can be set around what fits.
MODEL = {
    k: v
    for k, v in load_catalog().models["Qwen/Qwen3-32B"].model_dump().items()
    # The context derivation's extra inputs (other length keys, RoPE) come from `facts fetch` only.
    if v is not None and k not in ("source", "confidence", "other_length_keys", "rope")
}


def _spec(context: int) -> dict[str, Any]:
    return {
        "region": "us-west-2",
        "instance_type": "ml.g7e.2xlarge",
        "container": {"framework": "vllm", "version": "0.15.1"},
        "model": {**MODEL, "id": "example/qwen3-32b-copy", "max_position_embeddings": context},
        "engine": {"max_model_len": 4096, "max_num_seqs": 64},
    }


def _run(run_cli, tmp_path, spec: dict[str, Any], *extra: str) -> tuple[int, str]:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    code, out, _ = run_cli("check", str(path), *extra)
    return code, out


def _longest(spec: dict[str, Any]) -> int:
    plan = check(spec).deployment.memory_plan()
    assert plan is not None
    return plan.max_tokens()


def test_a_cache_larger_than_the_context_is_room_for_sequences(run_cli, tmp_path, reference_spec):
    # The reference deployment: Qwen3-32B (40960 tokens of context) on one 96 GB GPU.
    code, out = _run(run_cli, tmp_path, reference_spec(), "--format", "json")
    memory = json.loads(out)["resolved"]["memory"]
    assert code == 0
    assert memory["longest_sequence_that_fits"] > 40960  # kept as it was: what the KV cache holds
    assert memory["model_context_tokens"] == 40960 and memory["full_context_fits"] is True
    sequences = memory["full_context_sequences_at_once"]
    assert sequences == memory["longest_sequence_that_fits"] // 40960 >= 2
    code, out = _run(run_cli, tmp_path, reference_spec())
    row = next(line for line in out.splitlines() if line.startswith("memory.longest_sequence_that_fits"))
    assert row.split(None, 1)[1] == (
        f"the model's full context fits (40960 tokens), with room for {sequences} such sequences"
    )
    assert str(memory["longest_sequence_that_fits"]) not in out
    assert "memory.model_context_tokens" not in out and "memory.full_context_fits" not in out


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        (-1, "the model's full context fits ({context} tokens), with room for 1 such sequence"),  # just fits
        (0, "the model's full context fits ({context} tokens), with room for 1 such sequence"),  # exactly
        (1, "{longest}"),  # one token too long: the longest sequence, a usable length
        (10_000, "{longest}"),
    ],
)
def test_the_boundary_is_the_models_context(run_cli, tmp_path, extra, shown):
    longest = _longest(_spec(40960))
    context = longest + extra
    code, out = _run(run_cli, tmp_path, _spec(context))
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("memory.longest_sequence_that_fits"))
    assert row.split(None, 1)[1] == shown.format(context=context, longest=longest)
    _, out = _run(run_cli, tmp_path, _spec(context), "--format", "json")
    memory = json.loads(out)["resolved"]["memory"]
    assert memory["longest_sequence_that_fits"] == longest and memory["model_context_tokens"] == context
    assert memory["full_context_fits"] is (extra <= 0)
    assert memory["full_context_sequences_at_once"] == (1 if extra <= 0 else 0)


def test_room_for_two_starts_at_twice_the_context():
    spec = _spec(40960)
    plan = check(spec).deployment.memory_plan()
    assert plan is not None
    half = plan.max_tokens() // 2
    assert plan.sequences_at_once(half) == 2
    assert plan.sequences_at_once(half + 1) == 1
    assert plan.sequences_at_once(plan.max_tokens() + 1) == 0
