"""Context length rules."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.model_consistency import model_facts_problems
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI320",
    name="max-model-len-within-context",
    severity=Severity.ERROR,
    title="max_model_len is at most the model's max_position_embeddings",
    rationale="vLLM refuses a max_model_len longer than the model's context (unless RoPE scaling is configured).",
)
def max_model_len_within_context(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None or "max_model_len" not in d.engine:
        return
    if "rope_scaling" in d.engine or "hf_overrides" in d.engine:
        return  # the user extends the context on purpose
    limit = d.model.max_position_embeddings
    value = int(d.engine["max_model_len"])
    if value > limit:
        yield Violation(
            message=f"max_model_len {value} exceeds {d.model_id}'s max_position_embeddings {limit}; "
            f"allowed: 1 to {limit}",
            fix=f"set engine.max_model_len to at most {limit} (or configure rope_scaling)",
            field="engine.max_model_len",
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
