"""GPU memory arithmetic: weights, draft, KV cache, budget. Pure functions, MiB throughout."""

from __future__ import annotations

from dataclasses import dataclass

from speculative_infra.catalog.models import Draft, ModelFacts

MIB = 2**20
DTYPE_BYTES: dict[str, int] = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
# An EAGLE head is about one decoder layer plus its projections; when the catalog has no size for a
# draft we assume this share of the target's weights (the Qwen3-32B EAGLE3 head is 1.56 GB ~ 2.4%).
UNKNOWN_DRAFT_SHARE = 0.05


def weights_mib(model: ModelFacts, dtype_bytes: int) -> float:
    if model.weights_gb is not None:
        return model.weights_gb * 1e9 / MIB
    return model.parameters_billion * 1e9 * dtype_bytes / MIB


def draft_mib(
    draft: Draft | None, model: ModelFacts, dtype_bytes: int, has_draft_model: bool
) -> tuple[float, bool]:
    """(MiB, estimated?) for the draft's weights; (0, False) without a draft model."""
    if not has_draft_model:
        return 0.0, False
    if draft is not None and draft.size_gb is not None:
        return draft.size_gb * 1e9 / MIB, False
    return weights_mib(model, dtype_bytes) * UNKNOWN_DRAFT_SHARE, True


def kv_bytes_per_token(model: ModelFacts, kv_dtype_bytes: int, has_draft_model: bool) -> float:
    layers = model.num_hidden_layers + (1 if has_draft_model else 0)  # an EAGLE head keeps one layer of KV
    return 2.0 * layers * model.num_key_value_heads * model.head_dim * kv_dtype_bytes


@dataclass(frozen=True)
class MemoryBudget:
    budget_mib: float  # gpu_memory_utilization x memory of the GPUs tensor parallelism uses
    weights_mib: float
    draft_mib: float
    draft_estimated: bool
    kv_mib: float  # one max_model_len sequence
    tokens: int

    @property
    def needed_mib(self) -> float:
        return self.weights_mib + self.draft_mib + self.kv_mib

    @property
    def fits(self) -> bool:
        return self.needed_mib <= self.budget_mib


def memory_budget(
    *,
    model: ModelFacts,
    draft: Draft | None,
    has_draft_model: bool,
    gpu_memory_mib: int,
    tensor_parallel_size: int,
    gpu_memory_utilization: float,
    dtype_bytes: int,
    kv_dtype_bytes: int,
    tokens: int,
) -> MemoryBudget:
    d_mib, estimated = draft_mib(draft, model, dtype_bytes, has_draft_model)
    return MemoryBudget(
        budget_mib=gpu_memory_utilization * gpu_memory_mib * tensor_parallel_size,
        weights_mib=weights_mib(model, dtype_bytes),
        draft_mib=d_mib,
        draft_estimated=estimated,
        kv_mib=kv_bytes_per_token(model, kv_dtype_bytes, has_draft_model) * tokens / MIB,
        tokens=tokens,
    )


def max_tokens_that_fit(
    *,
    model: ModelFacts,
    draft: Draft | None,
    gpu_memory_mib: int,
    tensor_parallel_size: int,
    gpu_memory_utilization: float,
    dtype_bytes: int,
) -> int:
    """How many tokens of KV cache fit next to the weights (0 when the weights alone do not fit)."""
    has_draft = draft is not None
    base = memory_budget(
        model=model,
        draft=draft,
        has_draft_model=has_draft,
        gpu_memory_mib=gpu_memory_mib,
        tensor_parallel_size=tensor_parallel_size,
        gpu_memory_utilization=gpu_memory_utilization,
        dtype_bytes=dtype_bytes,
        kv_dtype_bytes=dtype_bytes,
        tokens=0,
    )
    free_bytes = (base.budget_mib - base.weights_mib - base.draft_mib) * MIB
    if free_bytes <= 0:
        return 0
    return int(free_bytes // kv_bytes_per_token(model, dtype_bytes, has_draft))
