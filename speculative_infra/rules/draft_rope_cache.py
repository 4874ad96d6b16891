"""A draft that shares the target's positions (EAGLE, DFlash, DSpark) whose rotary cache is shorter than the
target's max_model_len (catalog: vllm.yaml `draft_rope_cache`, read from each wheel by
scripts/probe_vllm_draft_rope_cache.py)."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def _target_max_model_len(d: ResolvedDeployment) -> int | None:
    """The target's max_model_len (resolution fills in the derived context where the spec leaves it out)."""
    given = d.engine.get("max_model_len")
    return given if isinstance(given, int) and not isinstance(given, bool) else None


def _first_release_with_the_fix(d: ResolvedDeployment, since: str) -> str | None:
    framework = d.container.framework if d.container is not None else "vllm"
    releases = load_catalog().container_vllm_versions(framework)
    return next((r for r in releases if version_tuple(r) >= version_tuple(since)), None)


@rule(
    code="SI418",
    name="draft-rope-cache-covers-target",
    severity=Severity.ERROR,
    title="A draft's rotary cache covers the target's max_model_len",
    rationale="An EAGLE, DFlash or DSpark draft's rotary cache holds as many positions as its own "
    "config.json's max_position_embeddings (plain or llama3 RoPE), while vLLM feeds it the target's "
    "positions. Where SpeculativeConfig does not raise that length to the target's max_model_len (EAGLE "
    "before vLLM 0.27.0, DFlash and DSpark before 0.33.0), a draft config shorter than the target's "
    "(yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: 2048) reads past the cache on the first sequence that long: a "
    "device-side assert that stops the engine (vLLM issue #48894). Judged where the draft's config is "
    "known (catalog or `facts fetch`).",
)
def draft_rope_cache_covers_target(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None or d.draft is None or d.draft.config_lengths is None:
        return
    lengths = d.draft.config_lengths
    if lengths.max_position_embeddings is None:
        return  # the decoder layer's own default applies; not judged
    facts = load_catalog().vllm.draft_rope_cache
    release = d.vllm_release.vllm_version
    method = d.speculative.get("method")
    target = _target_max_model_len(d)
    if target is None or not facts.reads_past_cache(
        release,
        method if isinstance(method, str) else None,
        lengths.max_position_embeddings,
        {rp.rope_type for rp in lengths.rope},
        target,
    ):
        return
    positions = lengths.max_position_embeddings
    since = facts.raised_since[str(method)]
    fixed_in = _first_release_with_the_fix(d, since)
    newer = (
        f"use a container with vLLM {fixed_in} or newer (it raises the draft's max_position_embeddings), or "
        if fixed_in
        else ""
    )
    yield Violation(
        message=f"the draft {d.speculative.get('model')}'s config.json gives it a rotary cache of {positions} "
        f"positions, and vLLM {release} feeds it the target's positions up to max_model_len {target}: the first "
        f"sequence past {positions} tokens ends in {facts.failure} (vLLM issue #48894; vLLM raises the "
        f"draft's max_position_embeddings from {since})",
        fix=f"{newer}set engine.max_model_len to at most {positions}",
        field="speculative.model",
    )
