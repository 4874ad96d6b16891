"""A draft whose max_model_len is shorter than the target's, where vLLM lowers the whole engine's
max_model_len to it instead of skipping speculation past it (catalog: vllm.yaml
`max_model_len_lowered_to_draft`, read from each wheel by scripts/probe_vllm_draft_limits_target.py and held
to tests/golden/vllm_draft_limits_target.json)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_startup_checks import MaxModelLenLoweredToDraft
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.speculative_max_len import draft_config_of, positive_int


def _ubatching(engine: dict[str, Any]) -> bool:
    """ParallelConfig.use_ubatching: dual batch overlap, or more than one micro-batch."""
    size = positive_int(engine.get("ubatch_size"))
    return engine.get("enable_dbo") is True or (size is not None and size > 1)


def serves_on_v2_runner(d: ResolvedDeployment, facts: MaxModelLenLoweredToDraft) -> bool | None:
    """Whether VllmConfig picks the V2 model runner for this deployment (the environment's runner_env
    first); None where that variable is not an integer."""
    assert d.speculative is not None
    method = d.speculative.get("method")
    return facts.v2_runner(
        d.spec.environment.get(facts.runner_env),
        method if isinstance(method, str) else None,
        parallel_drafting=d.speculative.get("parallel_drafting") is True,
        heterogeneous_vocab=d.speculative.get("use_heterogeneous_vocab") is True,
        ubatching=_ubatching(d.engine),
    )


@rule(
    code="SI419",
    name="max-model-len-lowered-to-draft",
    severity=Severity.WARNING,
    title="The draft's max_model_len does not cut the endpoint's context",
    rationale="From vLLM 0.33.0, where the V2 model runner serves the engine (the default unless "
    "VLLM_USE_V2_MODEL_RUNNER=0, P-EAGLE's parallel drafting, a heterogeneous vocabulary or micro-batching "
    "picks V1) and the draft does not share the target's positions (a draft_model, or a draft whose RoPE "
    "is YaRN, longrope, dynamic NTK or another type vLLM does not count as cache-only), VllmConfig lowers "
    "the engine's max_model_len to the draft's (speculative.max_model_len, else the draft's own context) "
    "and only logs a warning: requests longer than that are refused. The V1 runner skips speculation for "
    "them instead. Judged where the draft's config is known (catalog or `facts fetch`).",
)
def max_model_len_lowered_to_draft(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.container is None or d.container.vllm_version is None:
        return
    facts = load_catalog().vllm.max_model_len_lowered_to_draft
    release = d.container.vllm_version
    target = positive_int(d.engine.get("max_model_len"))
    method = d.speculative.get("method")
    checks = load_catalog().vllm.speculative_max_model_len_checks
    if not facts.applies_to(release) or target is None or method in checks.methods_without_draft:
        return
    found = draft_config_of(d, target, release)
    if found is None or found.limit.failure is not None:
        return
    given = d.speculative.get("max_model_len")
    draft_len = positive_int(given) if given is not None else min(found.limit.default, target)
    if draft_len is None or draft_len > target or found.limit.refuses(draft_len):
        return  # SI416 judges a speculative.max_model_len the draft or the target refuses
    v2 = serves_on_v2_runner(d, facts)  # None (a runner variable vLLM cannot read) is not judged here
    rope_types = {rp.rope_type for rp in found.lengths.rope}
    shown = method if isinstance(method, str) else None
    lowered = facts.lowered_to(release, shown, rope_types, draft_len, target, bool(v2))
    if lowered is None:
        return
    why = (
        f"speculative.max_model_len is {draft_len}"
        if given is not None
        else f"the draft's max_model_len is {draft_len}, from {found.source}"
    )
    positions = (
        "a draft_model keeps its own positions"
        if shown == facts.independent_method
        else f"its RoPE ({', '.join(sorted(rope_types - facts.rope_types_sharing_positions))}) is not one "
        "vLLM raises to the target's positions"
    )
    leave_out = (
        "leave out speculative.max_model_len, " if given is not None and found.limit.default >= target else ""
    )
    # V1 runs neither DSpark nor every DFlash head, nor pipeline parallelism with async scheduling.
    v1 = (
        f"set {facts.runner_env}=0 in the environment (the V1 runner keeps max_model_len {target} and skips "
        f"speculation past {lowered}), "
        if shown not in facts.parallel_drafting_v2_methods
        and (positive_int(d.engine.get("pipeline_parallel_size")) or 1) == 1
        else ""
    )
    yield Violation(
        message=f"vLLM {release} serves this endpoint with max_model_len {lowered}, not {target}: {why}, "
        f"{positions}, and the V2 model runner cannot skip speculation for longer sequences, so VllmConfig "
        f"warns '{facts.warning.format(draft=lowered, target=target)}' and refuses longer requests",
        fix=f"{leave_out}{v1}{'or ' if leave_out or v1 else ''}set engine.max_model_len to {lowered} so the "
        "endpoint's stated context is the one it serves",
        field="speculative.max_model_len" if given is not None else "speculative.model",
    )
