"""Prompts: deterministic from the seed, fresh per level, prefix shared, of the asked length."""

from __future__ import annotations

import pytest

from speculative_infra.benchmark.config import ConfigError, WorkloadConfig
from speculative_infra.benchmark.workload import Phase, PromptFactory


def test_same_seed_same_prompts_across_factories() -> None:
    workload = WorkloadConfig(seed=7)
    a, b = PromptFactory(workload), PromptFactory(workload)
    assert a.prompt(4, Phase.MEASURED, 3) == b.prompt(4, Phase.MEASURED, 3)
    assert a.prompt(4, Phase.MEASURED, 3) != PromptFactory(WorkloadConfig(seed=8)).prompt(
        4, Phase.MEASURED, 3
    )


def test_prompts_are_unique_within_and_across_levels() -> None:
    factory = PromptFactory(WorkloadConfig(seed=1))
    prompts = {factory.prompt(c, phase, i).unique for c in (1, 2) for phase in Phase for i in range(20)}
    assert len(prompts) == 2 * len(Phase) * 20


def test_reuse_prompts_across_levels_when_asked() -> None:
    factory = PromptFactory(WorkloadConfig(seed=1, fresh_prompts_per_level=False))
    assert factory.prompt(1, Phase.MEASURED, 0) == factory.prompt(32, Phase.MEASURED, 0)


def test_lengths_and_shared_prefix() -> None:
    workload = WorkloadConfig(seed=3, input_tokens=1000, shared_prefix_tokens=478)
    factory = PromptFactory(workload)
    first, second = factory.prompt(1, Phase.MEASURED, 0), factory.prompt(1, Phase.MEASURED, 1)
    assert first.shared_prefix == second.shared_prefix
    assert len(first.shared_prefix.split()) == 478
    assert len(first.unique.split()) == 1000 - 478
    assert first.unique != second.unique
    assert first.text.startswith(first.shared_prefix)


def test_prefix_must_be_shorter_than_input() -> None:
    with pytest.raises(ConfigError, match="shared_prefix_tokens") as caught:
        WorkloadConfig(input_tokens=100, shared_prefix_tokens=100)
    assert caught.value.field == "shared_prefix_tokens" and caught.value.value == 100
    assert "smaller than input_tokens (100)" in str(caught.value)
