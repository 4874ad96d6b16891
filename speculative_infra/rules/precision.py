"""dtype rules."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI220",
    name="bf16-supported",
    severity=Severity.ERROR,
    title="bfloat16 only on GPUs that have it",
    rationale="Turing and Volta GPUs (T4, V100) have no bfloat16; vLLM refuses to start with it.",
)
def bf16_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is None or d.instance.gpu.bf16 or d.engine.get("dtype") != "bfloat16":
        return
    yield Violation(
        message=f"dtype bfloat16 on {d.instance.gpu_name} (compute capability {d.instance.gpu.compute_capability}), "
        "which has no bfloat16 support; allowed: float16, float32",
        fix="set engine.dtype: float16 (or leave it unset), or choose a family with bfloat16 ("
        + ", ".join(load_catalog().families_where(lambda g: g.bf16))
        + ")",
        field="engine.dtype",
    )
