"""Context length rules."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog.loader import load_catalog
from speculative_infra.context_limit import deployment_context_limit, yarn_scaled_length
from speculative_infra.model_consistency import model_facts_problems
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI320",
    name="max-model-len-within-context",
    severity=Severity.ERROR,
    title="max_model_len is at most the context vLLM derives from the model's config",
    rationale="vLLM refuses a max_model_len longer than the length it derives from the model's config: "
    "the smallest of its length keys (its model_max_length, where set), times the RoPE factor (not for "
    "llama3 or longrope, nor for YaRN from 0.30.0), after engine.hf_overrides; unless "
    "VLLM_ALLOW_LONG_MAX_MODEL_LEN is set in the environment (SI321).",
)
def max_model_len_within_context(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None or "max_model_len" not in d.engine:
        return
    value = int(d.engine["max_model_len"])
    release = d.container.vllm_version if d.container is not None else None
    derived = deployment_context_limit(d.model, d.engine, release)
    if derived is None or release is None:
        if not _allows_long(d):
            yield from _without_release(d, value)
        return
    if derived.failure is not None:
        yield Violation(
            message=f"vLLM {release} stops at start-up deriving {d.model_id}'s context: {derived.failure}",
            fix="set the factor in engine.hf_overrides (for example 1.0), or use a container with vLLM "
            f"{load_catalog().vllm.max_model_len_derivation.null_factor_as_one_since} or newer, which reads "
            "a null factor as 1.0",
            field="engine.hf_overrides",
        )
        return
    if not derived.refuses(value) or _allows_long(d):
        return
    limit = int(derived.limit)
    words = load_catalog().vllm.max_model_len_derivation.refusal.format(
        value=value, key=derived.key, limit=derived.limit, model_max_length=derived.config_model_max_length
    )
    yield Violation(
        message=f"max_model_len {value} is longer than vLLM {release} allows for {d.model_id}: it derives "
        f"{limit} from the model's config{_derivation_note(d, release)} and refuses at start-up ('{words}'); "
        f"allowed: 1 to {max(limit, derived.config_model_max_length or 0)}",
        fix=f"set engine.max_model_len to at most {limit}{_yarn_fix(d, release, value)}",
        field="engine.max_model_len",
    )


def _allows_long(d: ResolvedDeployment) -> bool:
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN in the container's environment, read as vLLM reads it."""
    return load_catalog().vllm.max_model_len_derivation.allows_long(d.spec.environment)


@rule(
    code="SI321",
    name="max-model-len-beyond-context-allowed",
    severity=Severity.WARNING,
    title="max_model_len beyond the derived context runs only on VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    rationale="With VLLM_ALLOW_LONG_MAX_MODEL_LEN set to 1 or true in the environment, vLLM starts with a "
    "max_model_len longer than the context it derives from the model's config, and only warns: positions "
    "past that context give NaN (RoPE) or out-of-bounds reads (absolute positions).",
)
def max_model_len_beyond_context_allowed(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None or "max_model_len" not in d.engine or not _allows_long(d):
        return
    value = int(d.engine["max_model_len"])
    release = d.container.vllm_version if d.container is not None else None
    derived = deployment_context_limit(d.model, d.engine, release)
    if derived is None or release is None:
        limit, past = d.model.max_position_embeddings, value > d.model.max_position_embeddings
        if "rope_scaling" in d.engine or "hf_overrides" in d.engine:
            return
    else:
        limit, past = int(derived.limit), derived.failure is None and derived.refuses(value)
    if not past:
        return
    facts = load_catalog().vllm.max_model_len_derivation
    yield Violation(
        message=f"max_model_len {value} is longer than the {limit} tokens vLLM derives from {d.model_id}'s config; "
        f"{facts.allow_long_env} in the environment lets it start anyway, and vLLM warns: "
        f"'{facts.allow_long_warning}'",
        fix=f"set engine.max_model_len to at most {limit} and drop {facts.allow_long_env}, or extend the "
        "context the model supports (RoPE scaling in engine.hf_overrides) if it was trained for it",
        field="engine.max_model_len",
    )


def _without_release(d: ResolvedDeployment, value: int) -> Iterator[Violation]:
    """No vLLM release to derive with (or overrides it cannot read): the config's own context."""
    assert d.model is not None
    if "rope_scaling" in d.engine or "hf_overrides" in d.engine:
        return  # the user changes the config; without the release's arithmetic there is nothing to hold
    limit = d.model.max_position_embeddings
    if value > limit:
        yield Violation(
            message=f"max_model_len {value} exceeds {d.model_id}'s max_position_embeddings {limit}; "
            f"allowed: 1 to {limit}",
            fix=f"set engine.max_model_len to at most {limit}",
            field="engine.max_model_len",
        )


def _derivation_note(d: ResolvedDeployment, release: str) -> str:
    assert d.model is not None
    facts = load_catalog().vllm.max_model_len_derivation
    if facts.yarn_from_original(release) or yarn_scaled_length(d.model, d.engine, facts) is None:
        return ""
    return (
        f" (from vLLM {facts.rope_types_without_factor[-1].since} a YaRN factor is not applied: the length is "
        "max_position_embeddings as the config, or engine.hf_overrides, gives it)"
    )


def _yarn_fix(d: ResolvedDeployment, release: str, value: int) -> str:
    """Where YaRN covers the length: the max_position_embeddings override this release needs as well."""
    assert d.model is not None
    facts = load_catalog().vllm.max_model_len_derivation
    scaled = yarn_scaled_length(d.model, d.engine, facts)
    if facts.yarn_from_original(release) or scaled is None or value > scaled:
        return ""
    return (
        f", or also set max_position_embeddings {scaled} in engine.hf_overrides (YaRN's factor x "
        "original_max_position_embeddings)"
    )


@rule(
    code="SI330",
    name="model-facts-known",
    severity=Severity.ERROR,
    title="Model architecture facts are known",
    rationale="Sizing and parallelism checks need the model's shape; unknown models must describe it.",
)
def model_facts_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is not None:
        return
    required = (
        "architecture, model_type, parameters_billion, num_hidden_layers, num_attention_heads, "
        "num_key_value_heads, head_dim, max_position_embeddings"
    )
    yield Violation(
        message=f"model {d.model_id!r} is not in the catalog, no facts were fetched for it and the spec does not "
        "describe it "
        f"(given: {', '.join(d.spec.model.described_fields()) or 'nothing'})",
        fix=f"run `speculative-infra facts fetch {d.model_id}` in the app's folder (reads its config.json into "
        f"cdk.context.json), or add under model: {required}",
        field="model",
    )


@rule(
    code="SI331",
    name="model-facts-consistent",
    severity=Severity.ERROR,
    title="The model's facts agree with each other",
    rationale="Every real checkpoint has KV heads that divide its attention heads, no more sliding-window "
    "layers than layers, no more active or quantized parameters than parameters and no more experts per "
    "token than experts. vLLM assumes these without checking, so facts that break one (a typo in the spec, "
    "a catalog override, a hand-edited cdk.context.json) would size memory and parallelism for a model that "
    "cannot exist.",
)
def model_facts_consistent(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None:
        return
    # The method is known even where None (no quantization): a scheme or sparsity beside it is judged.
    facts = {**d.model.model_dump(exclude_none=True), "quantization": d.model.quantization}
    for field, reason in model_facts_problems(facts):
        yield Violation(
            message=f"model {d.model_id!r}: {field} {reason} (facts from {d.model.source})",
            fix=f"correct model.{field} in the spec, or fetch the model's own facts with "
            f"`speculative-infra facts fetch {d.model_id}`",
            field=f"model.{field}",
        )
