"""GPU memory arithmetic: one model for the memory rule, its fix, the resolver's defaults and the docs.

Per GPU, in MiB, the way vLLM budgets memory at start-up (docs/memory.md):

    budget     = gpu_memory_utilization x the GPU's memory
    KV cache   = budget - weights / TP - draft / draft TP - activation peak - non-torch memory - CUDA graphs
    one token  = 2 (K and V) x layers x KV heads per GPU x head_dim x bytes of kv_cache_dtype

With pipeline parallelism, weights and layers are a bound on one stage's (stage_weights_mib, stage_layers).
vLLM refuses to start when the KV cache cannot hold one sequence of max_model_len tokens. Sliding-window
layers (gpt-oss) hold at most their window of each sequence. The overheads are constants with sources
in the catalog (vllm.yaml memory_overheads); the calibration against real start-up logs is in
tests/golden/kv_cache_startups.yaml.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from speculative_infra.catalog.models import Draft, MemoryOverheads, ModelFacts, version_tuple
from speculative_infra.human_int import parse_human_int
from speculative_infra.quantization_methods import SCHEME_BITS

MIB = 2**20
GIB = 2**30
DTYPE_BYTES: dict[str, float] = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
# Bits per parameter of a quantized checkpoint's quantized part: MXFP4 stores 4-bit values with one
# 8-bit scale per 32 (OCP Microscaling spec v1.0); AWQ/GPTQ int4 with a 16-bit scale and zero per 128;
# NVFP4 4-bit values with one 8-bit scale per 16.
QUANTIZED_BITS: dict[str, float] = {
    "mxfp4": 4.25,
    "fp8": 8.0,
    "awq": 4.25,
    "gptq": 4.25,
    "modelopt": 8.0,
    "modelopt_fp4": 4.5,
    "compressed-tensors": 8.0,  # where the scheme is not known; else SCHEME_BITS
}
# A draft the facts give no size for is estimated as EAGLE heads are built: decoder layers of the
# target's width (~16 h^2 parameters each, attention plus a SwiGLU MLP), the fc that fuses three
# hidden states (3 h^2), and an embedding and an LM head over the vocabulary; in 16-bit. One layer for
# EAGLE/EAGLE3, four for P-EAGLE (amazon/GPT-OSS-20B-P-EAGLE: "a 4-layer P-EAGLE").
_DRAFT_LAYERS = {False: 1, True: 4}


def dtype_bytes(name: object, default: float = 2) -> float:
    return DTYPE_BYTES.get(str(name), default)


def quantized_bits(model: ModelFacts) -> float | None:
    """Bits per parameter of the checkpoint's quantized part; None for an unquantized checkpoint."""
    if model.quantization is None:
        return None
    scheme = model.quantization_scheme if model.quantization == "compressed-tensors" else None
    return SCHEME_BITS.get(scheme or "", QUANTIZED_BITS[model.quantization])


def weights_mib(model: ModelFacts, dtype_size: float) -> float:
    """The whole checkpoint in memory: its known size, else parameters x bytes (quantized part at its bits)."""
    if model.weights_gb is not None:
        return model.weights_gb * 1e9 / MIB
    params = model.parameters_billion * 1e9
    bits = quantized_bits(model)
    if bits is None:
        return params * dtype_size / MIB
    if model.quantized_parameters_billion is not None:
        quantized = model.quantized_parameters_billion * 1e9
        return (quantized * bits / 8 + (params - quantized) * dtype_size) / MIB
    return params * bits / 8 / MIB


def stage_layers(layers: int, pipeline_parallel_size: int) -> int:
    """Layers of one pipeline stage, at most: vLLM's get_pp_indices gives each stage layers // pp and one
    more to some stages, never to the last."""
    return -(-layers // max(1, pipeline_parallel_size))


def stage_weights_mib(model: ModelFacts, dtype_size: float, pipeline_parallel_size: int) -> float:
    """The weights one pipeline stage holds, at most: the largest stage's share of the decoder layers plus one
    vocabulary x hidden table (the first stage's embedding or the last's LM head, which the last keeps even
    where the two are tied). Without pipeline parallelism: the whole checkpoint (weights_mib)."""
    total = weights_mib(model, dtype_size)
    pp = max(1, pipeline_parallel_size)
    if pp == 1:
        return total
    table = (model.vocab_size or 0) * (model.hidden_size or 0) * dtype_size / MIB
    layers_part = total - table * (1 if model.tie_word_embeddings else 2)
    if layers_part <= 0:
        return total  # facts that do not add up: no split is claimed
    return layers_part * stage_layers(model.num_hidden_layers, pp) / model.num_hidden_layers + table


def estimated_draft_mib(model: ModelFacts, parallel_drafting: bool) -> float:
    hidden = model.hidden_size or model.num_attention_heads * model.head_dim
    vocab = model.vocab_size or 128_000
    params = _DRAFT_LAYERS[parallel_drafting] * 16 * hidden**2 + 3 * hidden**2 + 2 * hidden * vocab
    return params * 2 / MIB


# Draft methods whose head reads the tokens through an input embedding of the target's shape: vLLM hands it
# the target's embedding only with one pipeline stage.
EMBEDDING_HEAD_METHODS = ("eagle", "eagle3")


def draft_embedding_mib(draft: Draft | None, model: ModelFacts, dtype_size: float) -> float:
    """One vocabulary x hidden table of the head's input embedding (the target's shape it was built for)."""
    vocab = (draft.target_vocab_size if draft else None) or model.vocab_size or 0
    hidden = (draft.target_hidden_size if draft else None) or model.hidden_size or 0
    return vocab * hidden * dtype_size / MIB


def draft_weights_mib(
    draft: Draft | None,
    model: ModelFacts,
    has_checkpoint: bool,
    parallel_drafting: bool,
    own_embedding_mib: float = 0.0,
) -> tuple[float, bool]:
    """(MiB, estimated?) of the draft checkpoint; (0, False) for methods without one (ngram, mtp).
    A known size is what the head keeps with one pipeline stage; `own_embedding_mib` adds the embedding the
    last stage holds for it with more (memory_plan). An estimate already counts an embedding."""
    if not has_checkpoint:
        return 0.0, False
    if draft is not None and draft.size_gb is not None:
        return draft.size_gb * 1e9 / MIB + own_embedding_mib, False
    return estimated_draft_mib(model, parallel_drafting or bool(draft and draft.parallel_drafting)), True


def kv_heads_per_gpu(model: ModelFacts, tensor_parallel_size: int) -> int:
    # vLLM splits KV heads across tensor-parallel ranks and replicates them when there are fewer than ranks.
    return max(1, model.num_key_value_heads // tensor_parallel_size)


def serve_defaults(overheads: MemoryOverheads, gpu_name: str, gpu_memory_mib: float) -> tuple[int, int]:
    """`vllm serve`'s (max_num_batched_tokens, max_num_seqs) on this GPU."""
    large = (
        gpu_memory_mib >= overheads.large_gpu_min_gib * 1024
        and gpu_name not in overheads.large_gpu_exceptions
    )
    return overheads.large_gpu_defaults if large else overheads.small_gpu_defaults


def _positive_int(value: object, default: int) -> int:
    # An engine value of the wrong type is SI502's to report; the arithmetic falls back to vLLM's default.
    if isinstance(value, str):
        value = parse_human_int(value)  # digits, or a size such as "16k" where the release reads one
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return default


def overhead_mib(
    overheads: MemoryOverheads,
    *,
    model: ModelFacts,
    engine: Mapping[str, Any],
    gpu_name: str,
    gpu_memory_mib: float,
    vllm_version: str | None,
) -> float:
    """Activation peak of the profile run + non-torch memory + CUDA graphs (where counted), per GPU."""
    default_tokens, default_seqs = serve_defaults(overheads, gpu_name, gpu_memory_mib)
    tokens = _positive_int(engine.get("max_num_batched_tokens"), default_tokens)
    rows = min(_positive_int(engine.get("max_num_seqs"), default_seqs), tokens)
    hidden = model.hidden_size or model.num_attention_heads * model.head_dim
    vocab = model.vocab_size or 128_000
    activation = (
        overheads.activation_fixed_gib * GIB
        + overheads.activation_bytes_per_token_hidden * tokens * hidden
        + overheads.sampler_bytes_per_row_vocab * rows * vocab
    )
    graphs = 0.0
    counted = vllm_version is None or version_tuple(vllm_version) >= version_tuple(
        overheads.cuda_graph_counted_from
    )
    if counted and not engine.get("enforce_eager"):
        graphs = overheads.cuda_graph_gib * GIB
    return (activation + overheads.non_torch_gib * GIB + graphs) / MIB


@dataclass(frozen=True)
class MemoryPlan:
    """One GPU's memory under vLLM: what is taken before the KV cache, and what the KV cache holds."""

    budget_mib: float
    weights_mib: float  # this GPU's share
    draft_mib: float  # this GPU's share
    draft_estimated: bool
    overhead_mib: float  # activation peak + non-torch memory + CUDA graphs
    token_bytes_per_layer: float  # K and V of one token in one layer, on this GPU
    full_layers: int  # layers that keep every token (the target's full-attention layers + draft layers)
    window_layers: int  # sliding-window layers, which keep at most `window` tokens of a sequence
    window: int

    @property
    def kv_available_mib(self) -> float:
        return self.budget_mib - self.weights_mib - self.draft_mib - self.overhead_mib

    def kv_mib(self, tokens: int) -> float:
        """KV cache one sequence of `tokens` tokens needs."""
        per_layer_tokens = self.full_layers * tokens + self.window_layers * min(tokens, self.window)
        return self.token_bytes_per_layer * per_layer_tokens / MIB

    def fits(self, tokens: int) -> bool:
        return self.kv_available_mib >= 0 and self.kv_mib(tokens) <= self.kv_available_mib

    def max_tokens(self) -> int:
        """The longest sequence whose KV cache fits (0 when not even the weights fit)."""
        free_bytes = self.kv_available_mib * MIB
        if free_bytes <= 0:
            return 0
        window_bytes = self.token_bytes_per_layer * (self.full_layers + self.window_layers) * self.window
        if self.window_layers and free_bytes < window_bytes:
            return int(free_bytes // (self.token_bytes_per_layer * (self.full_layers + self.window_layers)))
        if self.full_layers == 0:
            return 2**31 - 1  # only sliding layers: any length fits once the window does
        beyond = self.token_bytes_per_layer * self.window_layers * self.window
        return int((free_bytes - beyond) // (self.token_bytes_per_layer * self.full_layers))

    def sequences_at_once(self, tokens: int) -> int:
        """How many sequences of `tokens` tokens the KV cache holds at once (vLLM's "maximum concurrency"
        for that length, rounded down); 0 when not one fits."""
        if not self.fits(tokens):
            return 0
        need = self.kv_mib(tokens)
        return 2**31 - 1 if need <= 0 else int(self.kv_available_mib // need)

    def cache_tokens(self, cache_mib: float | None = None) -> int:
        """Tokens a KV cache of `cache_mib` (default: all that is available) holds, counting every layer
        in full, as vLLM logs "GPU KV cache size"."""
        free_bytes = max(0.0, (self.kv_available_mib if cache_mib is None else cache_mib) * MIB)
        return int(free_bytes // (self.token_bytes_per_layer * (self.full_layers + self.window_layers)))


def memory_plan(
    *,
    model: ModelFacts,
    draft: Draft | None,
    speculative: Mapping[str, Any] | None,
    engine: Mapping[str, Any],
    gpu_name: str,
    gpu_memory_mib: float,
    tensor_parallel_size: int,
    vllm_version: str | None,
    overheads: MemoryOverheads,
    pipeline_parallel_size: int = 1,
    draft_shares_target_embedding: bool = True,
) -> MemoryPlan:
    """The plan for a deployment's engine args (dtype, kv_cache_dtype, gpu_memory_utilization) and draft.
    With pipeline parallelism it is the plan of a bound on every stage (stage_weights_mib, stage_layers).
    `pipeline_parallel_size` is the split the layers are counted by (1 for a target counted whole);
    `draft_shares_target_embedding` is False whenever the engine runs more than one pipeline stage. vLLM
    gives an EAGLE head the target's input embedding only with one stage (V1's proposer tests the pipeline
    group's world size == 1 in every release; so does the V2 runner 0.22.0-0.29.0). With more, the last
    stage holds one table more for drafting: the head's own, or (V2, 0.30.0 on) the embedding the target
    builds on its last stage for the head. tests/golden/vllm_parallel_world.json records each test."""
    tp = max(1, tensor_parallel_size)
    pp = max(1, pipeline_parallel_size)
    weight_bytes = dtype_bytes(engine.get("dtype"))
    kv_bytes = dtype_bytes(engine.get("kv_cache_dtype"), weight_bytes)
    has_checkpoint = bool(speculative and speculative.get("model"))
    own_embedding = 0.0
    method = (speculative or {}).get("method")
    if has_checkpoint and not draft_shares_target_embedding and method in EMBEDDING_HEAD_METHODS:
        own_embedding = draft_embedding_mib(draft, model, weight_bytes)
    draft_total, estimated = draft_weights_mib(
        draft,
        model,
        has_checkpoint,
        bool(speculative and speculative.get("parallel_drafting")),
        own_embedding,
    )
    draft_tp = _positive_int((speculative or {}).get("draft_tensor_parallel_size"), tp)
    draft_layers = 0
    if has_checkpoint:
        draft_layers = _DRAFT_LAYERS[bool(speculative and speculative.get("parallel_drafting"))]
    window_layers = model.sliding_window_layers if model.sliding_window else 0
    full_layers = model.num_hidden_layers - window_layers
    return MemoryPlan(
        budget_mib=float(engine.get("gpu_memory_utilization") or overheads.default_gpu_memory_utilization)
        * gpu_memory_mib,
        weights_mib=stage_weights_mib(model, weight_bytes, pp) / tp,
        draft_mib=draft_total / max(1, draft_tp),
        draft_estimated=estimated,
        overhead_mib=overhead_mib(
            overheads,
            model=model,
            engine=engine,
            gpu_name=gpu_name,
            gpu_memory_mib=gpu_memory_mib,
            vllm_version=vllm_version,
        ),
        token_bytes_per_layer=2 * kv_heads_per_gpu(model, tp) * model.head_dim * kv_bytes,
        full_layers=stage_layers(full_layers, pp) + draft_layers,
        window_layers=stage_layers(window_layers, pp),
        window=model.sliding_window or 0,
    )
