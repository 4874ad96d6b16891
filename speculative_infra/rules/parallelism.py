"""Tensor parallelism rules."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI310",
    name="tensor-parallel-within-gpus",
    severity=Severity.ERROR,
    title="tensor_parallel_size is at most the instance's GPU count",
    rationale="vLLM needs one GPU per tensor-parallel rank on the instance.",
)
def tensor_parallel_within_gpus(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is None or d.tensor_parallel_size <= d.instance.gpu_count:
        return
    yield Violation(
        message=f"tensor_parallel_size {d.tensor_parallel_size} exceeds the {d.instance.gpu_count} GPU(s) of "
        f"{d.instance.name}; allowed: 1 to {d.instance.gpu_count}",
        fix=f"set engine.tensor_parallel_size to at most {d.instance.gpu_count}, or pick a larger instance",
        field="engine.tensor_parallel_size",
    )


@rule(
    code="SI311",
    name="tensor-parallel-divides-heads",
    severity=Severity.ERROR,
    title="tensor_parallel_size divides the model's attention heads",
    rationale="vLLM shards attention heads evenly across ranks and refuses an uneven split.",
)
def tensor_parallel_divides_heads(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None:
        return
    heads = d.model.num_attention_heads
    tp = d.tensor_parallel_size
    if heads % tp:
        # Degrees an instance can hold: this one's GPUs, or the largest instance's in the catalog.
        most = d.instance.gpu_count if d.instance is not None else load_catalog().max_gpus_per_instance()
        allowed = [n for n in range(1, heads + 1) if heads % n == 0 and n <= most]
        yield Violation(
            message=f"tensor_parallel_size {tp} does not divide the {heads} attention heads of {d.model_id}; "
            f"allowed: {', '.join(map(str, allowed))}",
            fix="set engine.tensor_parallel_size to one of the allowed values",
            field="engine.tensor_parallel_size",
        )


@rule(
    code="SI312",
    name="tensor-parallel-uses-all-gpus",
    severity=Severity.WARNING,
    title="A single-model real-time endpoint uses all of its GPUs",
    rationale="One vLLM server per instance: GPUs beyond tensor_parallel_size are paid for and idle.",
)
def tensor_parallel_uses_all_gpus(d: ResolvedDeployment) -> Iterator[Violation]:
    # Inference components place several copies on one instance: fewer GPUs per copy is the point.
    if d.instance is None or d.tensor_parallel_size >= d.instance.gpu_count:
        return
    if d.endpoint_kind == "inference_component":
        return
    yield Violation(
        message=f"tensor_parallel_size {d.tensor_parallel_size} uses {d.tensor_parallel_size} of the "
        f"{d.instance.gpu_count} GPUs of {d.instance.name}; the others stay idle",
        fix=f"raise engine.tensor_parallel_size to {d.instance.gpu_count} if the heads allow, or pick a smaller instance",
        field="engine.tensor_parallel_size",
    )
