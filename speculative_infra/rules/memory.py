"""Does the model fit in GPU memory?"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.registry import rule
from speculative_infra.sizing import DTYPE_BYTES, MemoryBudget, max_tokens_that_fit, memory_budget


def _budget(d: ResolvedDeployment) -> MemoryBudget | None:
    if d.instance is None or d.model is None or "max_model_len" not in d.engine:
        return None
    dtype_bytes = DTYPE_BYTES.get(str(d.engine.get("dtype")), 2)
    kv_dtype = str(d.engine.get("kv_cache_dtype", "auto"))
    tp = min(d.tensor_parallel_size, d.instance.gpu_count)
    return memory_budget(
        model=d.model,
        draft=d.draft,
        has_draft_model=bool(d.speculative and d.speculative.get("model")),
        gpu_memory_mib=d.instance.gpu.memory_mib,
        tensor_parallel_size=tp,
        gpu_memory_utilization=float(d.engine.get("gpu_memory_utilization", 0.9)),
        dtype_bytes=dtype_bytes,
        kv_dtype_bytes=DTYPE_BYTES.get(kv_dtype, dtype_bytes),
        tokens=int(d.engine["max_model_len"]),
    )


def _gib(mib: float) -> str:
    return f"{mib / 1024:.1f} GiB"


@rule(
    code="SI300",
    name="model-fits-gpu-memory",
    severity=Severity.ERROR,
    title="Weights, draft and one max_model_len sequence of KV cache fit in GPU memory",
    rationale="vLLM fails at start-up when the weights plus one full-length sequence of KV cache do not fit.",
)
def model_fits_gpu_memory(d: ResolvedDeployment) -> Iterator[Violation]:
    b = _budget(d)
    if b is None or b.fits or d.instance is None or d.model is None:
        return
    tp = min(d.tensor_parallel_size, d.instance.gpu_count)
    util = float(d.engine.get("gpu_memory_utilization", 0.9))
    draft = (
        f" + draft {_gib(b.draft_mib)}{' (estimated)' if b.draft_estimated else ''}" if b.draft_mib else ""
    )
    fits = max_tokens_that_fit(
        model=d.model,
        draft=d.draft,
        gpu_memory_mib=d.instance.gpu.memory_mib,
        tensor_parallel_size=tp,
        gpu_memory_utilization=util,
        dtype_bytes=DTYPE_BYTES.get(str(d.engine.get("dtype")), 2),
    )
    fix = (
        f"lower engine.max_model_len to at most {fits}, or use more or larger GPUs"
        if fits > 0
        else "use an instance with more GPU memory or more GPUs (raise tensor_parallel_size), or a quantized model"
    )
    yield Violation(
        message=f"{d.model_id} needs {_gib(b.needed_mib)} (weights {_gib(b.weights_mib)}{draft} + KV cache "
        f"{_gib(b.kv_mib)} for {b.tokens} tokens) but {d.instance.name} offers {_gib(b.budget_mib)} "
        f"({util} x {tp} x {_gib(d.instance.gpu.memory_mib)} {d.instance.gpu_name})",
        fix=fix,
        field="engine.max_model_len",
    )


@rule(
    code="SI301",
    name="draft-size-known",
    severity=Severity.INFO,
    title="Draft model size is known",
    rationale="The memory check estimates the size of drafts the catalog has no size for.",
)
def draft_size_known(d: ResolvedDeployment) -> Iterator[Violation]:
    b = _budget(d)
    if b is not None and b.draft_estimated and d.speculative:
        yield Violation(
            message=f"draft {d.speculative.get('model')!r} has no size in the catalog; the memory check assumed "
            f"{_gib(b.draft_mib)}",
            fix="add the draft's size to the catalog (catalog/data/drafts.yaml)",
            field="speculative.model",
        )
