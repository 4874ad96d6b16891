"""LoRA with speculative decoding."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI520",
    name="lora-with-speculative",
    severity=Severity.WARNING,
    title="LoRA adapters with speculative decoding",
    rationale="The draft never runs the adapters, so acceptance drops; vLLM's docs list the pair as unsupported.",
)
def lora_with_speculative(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or not d.engine.get("enable_lora"):
        return
    fact = load_catalog().vllm.lora_with_speculative
    if not fact.supported:
        yield Violation(
            message="enable_lora with speculative decoding: the draft does not apply the adapters "
            f"({fact.source})",
            fix="serve adapters without speculative decoding, or train a draft on the fine-tuned model",
            field="engine.enable_lora",
        )
