"""Does the model fit in GPU memory? One memory model (sizing.memory_plan) for the rule and its fix."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.fitting_instances import (
    PRICE_FALLBACK_REGION,
    SUGGESTED_INSTANCES,
    fits_in_memory,
    instances_that_fit,
)
from speculative_infra.sizing import MIB


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


@rule(
    code="SI300",
    name="model-fits-gpu-memory",
    severity=Severity.ERROR,
    title="Weights, draft, vLLM's overheads and one max_model_len sequence of KV cache fit in GPU memory",
    rationale="vLLM fails at start-up when the KV cache left after weights, draft, activations and CUDA "
    "graphs cannot hold one sequence of max_model_len tokens. The fix names up to "
    f"{SUGGESTED_INSTANCES} catalog instance types and tensor-parallel sizes it fits on, each checked by the "
    "same memory model and the other error rules, cheapest first by the catalog's hourly price in the spec's "
    "region "
    f"({PRICE_FALLBACK_REGION}'s where the region has none or is not known).",
)
def model_fits_gpu_memory(d: ResolvedDeployment) -> Iterator[Violation]:
    plan = d.memory_plan()
    if plan is None or d.instance is None or "max_model_len" not in d.engine:
        return
    tokens = int(d.engine["max_model_len"])
    if fits_in_memory(d, tokens):
        return
    tp = min(d.tensor_parallel_size, d.instance.gpu_count)
    util = plan.budget_mib / d.instance.gpu.memory_mib
    draft = ""
    if plan.draft_mib:
        draft = f" + draft {_gib(plan.draft_mib)}{' (estimated)' if plan.draft_estimated else ''}"
    fits = d.longest_fitting_max_model_len(tokens - 1)
    # FP8 KV cache halves the cache; offered where vLLM computes in FP8 (Ada, Hopper, Blackwell).
    fp8_floor = load_catalog().vllm.fp8_min_compute_capability.value
    fp8 = (
        "use an fp8 KV cache (engine.kv_cache_dtype: fp8)"
        if not str(d.engine.get("kv_cache_dtype", "auto")).startswith("fp8")
        and version_tuple(d.instance.gpu.compute_capability) >= version_tuple(fp8_floor)
        else None
    )
    fitting = _fitting_instances_text(d, tokens)
    if fits > 0:
        options = [f"lower engine.max_model_len to at most {fits}", *([fp8] if fp8 else [])]
        if fitting:
            options.append(f"move to {fitting}")
        fix = ", ".join(options[:-1]) + f", or {options[-1]}" if len(options) > 1 else options[0]
        if not fitting:
            fix += f" (no instance type in the catalog fits {tokens} tokens)"
    elif fitting:
        fix = f"use more GPU memory: {fitting}; or use a quantized model"
    else:
        fix = "use more GPU memory than any instance type in the catalog offers, or a quantized model"
    yield Violation(
        message=f"{d.model_id} needs {_gib(plan.weights_mib + plan.draft_mib + plan.overhead_mib + plan.kv_mib(tokens))}"
        f" per GPU (weights {_gib(plan.weights_mib)}{draft} + vLLM overheads {_gib(plan.overhead_mib)} + KV cache "
        f"{_gib(plan.kv_mib(tokens))} for {tokens} tokens) but {d.instance.name} offers {_gib(plan.budget_mib)} "
        f"per GPU ({util:g} x {_gib(d.instance.gpu.memory_mib)} {d.instance.gpu_name}, tensor parallel {tp})",
        fix=fix,
        field="engine.max_model_len",
    )


def _fitting_instances_text(d: ResolvedDeployment, tokens: int) -> str | None:
    """The instance types and tensor-parallel sizes this deployment fits on (computed from the catalog), as
    the fix names them; None when none does."""
    fitting = instances_that_fit(d, tokens, SUGGESTED_INSTANCES)
    if not fitting:
        return None
    note = ""
    if any(f.region_fallback for f in fitting):
        note = (
            f" ({PRICE_FALLBACK_REGION} prices: the region is not known)"
            if d.region is None
            else f" ({PRICE_FALLBACK_REGION} prices where the catalog has none for {d.region})"
        )
    return f"an instance type it fits on, cheapest first{note}: " + "; ".join(f.describe() for f in fitting)


@rule(
    code="SI301",
    name="draft-size-known",
    severity=Severity.INFO,
    title="Draft model size is known",
    rationale="The memory check estimates the size of drafts with no known size, from the target's shape.",
)
def draft_size_known(d: ResolvedDeployment) -> Iterator[Violation]:
    plan = d.memory_plan()
    if plan is not None and plan.draft_estimated and d.speculative:
        name = d.speculative.get("model")
        yield Violation(
            message=f"draft {name!r} has no known size; the memory check estimated {plan.draft_mib * MIB / 1e9:.2f} GB "
            "per GPU from the target's shape",
            fix=f"run `speculative-infra facts fetch {name}` in the app's folder to read its real size",
            field="speculative.model",
        )
