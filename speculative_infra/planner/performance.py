"""The performance model: time of one engine step and of one prefill, then steady-state load levels.

Per GPU of a tensor-parallel group (docs/planner.md has the equations and what they leave out):

    decode step(b sequences, q tokens each) = max(bytes moved / bandwidth, flops / compute)
                                              + all-reduce (tp > 1) + a fixed step overhead
    bytes moved = weights read (MoE: the experts the step's tokens touch) / tp + KV cache of b sequences
    speculative step = verification (q = k + 1) + k draft passes (one with parallel drafting),
                       yielding `acceptance length` tokens per sequence
    prefill(n new tokens) = n x (2 x active parameters + attention) / tp / compute + all-reduce

A closed-loop level of C users keeps b = min(C, max_num_seqs, sequences the KV cache holds) running;
each request costs the GPU one prefill plus its share of decode steps, which gives the request rate
and, by Little's law, the latency. The memory facts come from sizing.memory_plan (one memory model).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from speculative_infra.catalog.models import InstanceType, ModelFacts
from speculative_infra.planner.workload import Workload
from speculative_infra.sizing import MIB, MemoryPlan, dtype_bytes, weights_mib

Bound = Literal["memory bandwidth", "compute", "interconnect", "KV capacity", "max_num_seqs", "overloaded"]
FP8 = {"fp8", "fp8_e4m3", "fp8_e5m2"}


@dataclass(frozen=True)
class Efficiency:
    """Fitted factors (planner_calibration.yaml): the share of each peak a real engine reaches."""

    bandwidth: float  # of the GPU's memory bandwidth, in decode
    compute: float  # of dense tensor throughput, in decode and verification
    prefill: float  # of dense tensor throughput, in prefill
    step_overhead_s: float  # per engine step: scheduling, sampling, kernel launches
    draft_pass_overhead_s: float  # per draft forward pass
    allreduce_latency_s: float  # per all-reduce on the link (two per layer)
    request_overhead_s: float  # per request outside the engine: HTTP, SageMaker's front end, detokenizing


@dataclass(frozen=True)
class Engine:
    """What the model needs of a resolved deployment, in SI units."""

    gpu_name: str
    bandwidth_bytes_s: float
    flops: float  # dense tensor flop/s in the weights' precision
    tp: int
    link_bytes_s: float | None  # per GPU per direction; None for tp = 1
    layers: int
    hidden: int
    attention_width: int  # heads x head_dim
    weight_bytes: float  # whole checkpoint in GPU memory
    parameters: float
    active_parameters: float
    experts: int | None
    experts_per_token: int | None
    plan: MemoryPlan
    max_num_seqs: int
    max_model_len: int
    prefix_caching: bool
    draft_bytes: float  # per GPU, read by one draft pass
    draft_parameters: float
    k: int  # drafted tokens per step (0: no speculation)
    draft_passes: int  # sequential draft forward passes per step
    acceptance_length: float  # tokens per step per sequence (1 without speculation)


def engine_for(
    *,
    instance: InstanceType,
    model: ModelFacts,
    engine_args: dict[str, Any],
    speculative: dict[str, Any] | None,
    plan: MemoryPlan,
    acceptance_length: float,
) -> Engine:
    gpu = instance.gpu
    tp = max(1, min(int(engine_args.get("tensor_parallel_size", 1)), instance.gpu_count))
    dense = gpu.dense_tflops
    bf16 = (dense.bf16 if dense is not None else 100.0) * 1e12
    fp8_weights = (
        model.quantization in ("fp8", "modelopt")
        or (
            model.quantization == "compressed-tensors"
            and model.quantization_scheme in ("w8a8_fp8", "w8a16_fp8")
        )
        or str(engine_args.get("quantization")) in FP8
    )
    flops = (dense.fp8 if dense is not None and dense.fp8 and fp8_weights else bf16 / 1e12) * 1e12
    link = instance.tensor_parallel_link
    weight_bytes = weights_mib(model, dtype_bytes(engine_args.get("dtype"))) * MIB
    k = int((speculative or {}).get("num_speculative_tokens") or 0) if speculative else 0
    method = str((speculative or {}).get("method", ""))
    has_draft = bool(speculative and speculative.get("model"))
    parallel = bool(speculative and speculative.get("parallel_drafting"))
    passes = 0 if method == "ngram" or not has_draft else (1 if parallel else k)
    return Engine(
        gpu_name=instance.gpu_name,
        bandwidth_bytes_s=gpu.memory_bandwidth_gbps * 1e9,
        flops=flops,
        tp=tp,
        link_bytes_s=None if tp == 1 or link is None else link.gbps_per_direction * 1e9,
        layers=model.num_hidden_layers,
        hidden=model.hidden_size or model.num_attention_heads * model.head_dim,
        attention_width=model.num_attention_heads * model.head_dim,
        weight_bytes=weight_bytes,
        parameters=model.parameters_billion * 1e9,
        active_parameters=(model.active_parameters_billion or model.parameters_billion) * 1e9,
        experts=model.num_experts,
        experts_per_token=model.experts_per_token,
        plan=plan,
        max_num_seqs=int(engine_args.get("max_num_seqs") or 256),
        max_model_len=int(engine_args.get("max_model_len") or model.max_position_embeddings),
        prefix_caching=bool(engine_args.get("enable_prefix_caching", True)),
        draft_bytes=plan.draft_mib * MIB,  # this GPU's share of the draft checkpoint, read by each pass
        draft_parameters=plan.draft_mib * MIB * tp / 2,  # 16-bit heads
        k=k if speculative else 0,
        draft_passes=passes,
        acceptance_length=acceptance_length if speculative and k else 1.0,
    )


def weights_read_bytes(e: Engine, tokens: float) -> float:
    """Bytes of weights one forward pass over `tokens` tokens reads, per GPU. A mixture of experts reads
    its shared part always and each expert a token picks: 1 - (1 - top_k / experts)^tokens of them."""
    if not (e.experts and e.experts_per_token and e.active_parameters < e.parameters):
        return e.weight_bytes / e.tp
    picked = e.experts_per_token / e.experts
    expert_params = (e.parameters - e.active_parameters) / (1 - picked)
    shared_params = e.parameters - expert_params
    touched = 1 - float((1 - picked) ** max(tokens, 1.0))
    bytes_per_param = e.weight_bytes / e.parameters
    return bytes_per_param * (shared_params + expert_params * touched) / e.tp


def _allreduce_s(e: Engine, eff: Efficiency, tokens: float) -> float:
    if e.tp == 1 or e.link_bytes_s is None:
        return 0.0
    ring_bytes = tokens * e.hidden * 2 * 2 * (e.tp - 1) / e.tp  # bf16 activations, ring all-reduce
    return 2 * e.layers * (eff.allreduce_latency_s + ring_bytes / e.link_bytes_s)


@dataclass(frozen=True)
class StepTime:
    seconds: float
    bound: Bound


def forward_time(
    e: Engine, eff: Efficiency, sequences: float, tokens_each: float, context: float
) -> StepTime:
    """One target forward pass over `sequences` x `tokens_each` tokens attending `context` tokens each."""
    tokens = sequences * tokens_each
    kv_bytes = sequences * e.plan.kv_mib(max(1, int(context))) * MIB
    memory = (weights_read_bytes(e, tokens) + kv_bytes) / (e.bandwidth_bytes_s * eff.bandwidth)
    attention = 4 * e.layers * e.attention_width * context
    compute = tokens * (2 * e.active_parameters + attention) / e.tp / (e.flops * eff.compute)
    allreduce = _allreduce_s(e, eff, tokens)
    bound: Bound = "memory bandwidth" if memory >= compute else "compute"
    if allreduce > max(memory, compute):
        bound = "interconnect"
    return StepTime(max(memory, compute) + allreduce + eff.step_overhead_s, bound)


def decode_step(e: Engine, eff: Efficiency, sequences: float, context: float) -> StepTime:
    """One engine step for `sequences` running sequences: draft passes, then verification of k + 1."""
    target = forward_time(e, eff, sequences, e.k + 1, context)
    if e.draft_passes == 0:
        return target
    draft_memory = e.draft_bytes / (e.bandwidth_bytes_s * eff.bandwidth)
    draft_compute = sequences * 2 * e.draft_parameters / e.tp / (e.flops * eff.compute)
    draft = e.draft_passes * (max(draft_memory, draft_compute) + eff.draft_pass_overhead_s)
    return StepTime(target.seconds + draft, target.bound)


def prefill_time(e: Engine, eff: Efficiency, new_tokens: float, cached_tokens: float) -> float:
    if new_tokens <= 0:
        return 0.0
    attention = 4 * e.layers * e.attention_width * (cached_tokens + new_tokens / 2)
    compute = new_tokens * (2 * e.active_parameters + attention) / e.tp / (e.flops * eff.prefill)
    memory = weights_read_bytes(e, new_tokens) / (e.bandwidth_bytes_s * eff.bandwidth)
    return max(compute, memory) + _allreduce_s(e, eff, new_tokens) + eff.step_overhead_s


@dataclass(frozen=True)
class LevelPrediction:
    concurrency: float | None
    request_rate: float | None
    running: float  # sequences the engine runs at once
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    output_tokens_per_s_per_request: float | None
    output_tokens_per_s: float | None
    requests_per_s: float | None
    bound: Bound
    notes: list[str] = field(default_factory=list)


def _capacity(e: Engine, w: Workload) -> tuple[float, Bound | None]:
    """Sequences the engine can run at once: max_num_seqs, or fewer when the KV cache holds fewer."""
    kv_sequences = e.plan.cache_tokens() / max(1, w.sequence_tokens)
    if kv_sequences < e.max_num_seqs:
        return max(kv_sequences, 1.0), "KV capacity"
    return float(e.max_num_seqs), "max_num_seqs"


def _new_prefill_tokens(e: Engine, w: Workload) -> tuple[float, float]:
    cached = float(w.prefix_tokens) if e.prefix_caching else 0.0
    return w.input_tokens - cached, cached


def closed_loop(e: Engine, eff: Efficiency, w: Workload, concurrency: int) -> LevelPrediction:
    """`concurrency` users, each sending its next request when the last one ends."""
    capacity, cap_bound = _capacity(e, w)
    running = min(float(concurrency), capacity)
    context = w.input_tokens + w.output_tokens / 2
    step = decode_step(e, eff, running, context)
    new, cached = _new_prefill_tokens(e, w)
    prefill = prefill_time(e, eff, new, cached)
    steps_per_request = w.output_tokens / e.acceptance_length
    gpu_seconds_per_request = prefill + steps_per_request * step.seconds / running
    engine_rate = 1 / gpu_seconds_per_request
    # Little's law over the whole loop: a user's cycle is the engine's latency plus the request overhead.
    engine_latency = max(concurrency / engine_rate, prefill + steps_per_request * step.seconds)
    e2e = engine_latency + eff.request_overhead_s
    rate = concurrency / e2e
    queue = max(0.0, (concurrency - running) / engine_rate)
    # A new request waits for a free sequence slot (queue), then for the prefills already under way: the
    # mean residual of a deterministic server busy rho of the time, rho / (2 (1 - rho)) prefills.
    rho = min(0.95, rate * prefill)
    ttft = queue + prefill * (1 + rho / (2 * (1 - rho))) + step.seconds + eff.request_overhead_s
    tpot = max(0.0, (e2e - ttft) / max(1, w.output_tokens - 1))
    bound: Bound = step.bound
    if concurrency > capacity and cap_bound is not None:
        bound = cap_bound
    return LevelPrediction(
        concurrency=concurrency,
        request_rate=None,
        running=running,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        output_tokens_per_s_per_request=w.output_tokens / e2e,
        output_tokens_per_s=rate * w.output_tokens,
        requests_per_s=rate,
        bound=bound,
    )


def open_loop(e: Engine, eff: Efficiency, w: Workload, request_rate: float) -> LevelPrediction:
    """Requests arriving at `request_rate` per second whatever the latency (Poisson arrivals)."""
    capacity, cap_bound = _capacity(e, w)
    context = w.input_tokens + w.output_tokens / 2
    new, cached = _new_prefill_tokens(e, w)
    prefill = prefill_time(e, eff, new, cached)
    steps_per_request = w.output_tokens / e.acceptance_length
    prefill_share = request_rate * prefill  # the share of GPU time prefills take

    def latency(running: float) -> float:
        step = decode_step(e, eff, max(running, 1.0), context).seconds
        return prefill + steps_per_request * step / max(1e-9, 1 - prefill_share)

    most = capacity * (1 - 1e-9)
    saturated = prefill_share >= 1 or request_rate * latency(most) > most
    if saturated:
        return LevelPrediction(
            concurrency=None,
            request_rate=request_rate,
            running=capacity,
            ttft_s=None,
            tpot_s=None,
            e2e_s=None,
            output_tokens_per_s_per_request=None,
            output_tokens_per_s=None,
            requests_per_s=None,
            bound="overloaded",
            notes=[
                f"{request_rate:g} req/s is more than this deployment serves"
                f" ({cap_bound or 'compute'} limits it): the queue grows without bound"
            ],
        )
    low, high = 0.0, most
    for _ in range(60):  # the running count b solves b = rate x latency(b) (Little's law)
        mid = (low + high) / 2
        if request_rate * latency(mid) > mid:
            low = mid
        else:
            high = mid
    running = max(high, request_rate * latency(high))
    step = decode_step(e, eff, max(running, 1.0), context)
    engine_latency = latency(running)
    e2e = engine_latency + eff.request_overhead_s
    ttft = prefill / max(1e-9, 1 - prefill_share) + step.seconds + eff.request_overhead_s
    tpot = max(0.0, (e2e - ttft) / max(1, w.output_tokens - 1))
    return LevelPrediction(
        concurrency=None,
        request_rate=request_rate,
        running=running,
        ttft_s=ttft,
        tpot_s=tpot,
        e2e_s=e2e,
        output_tokens_per_s_per_request=w.output_tokens / e2e,
        output_tokens_per_s=request_rate * w.output_tokens,
        requests_per_s=request_rate,
        bound=step.bound,
    )
