"""The performance model: time of one engine step, then steady-state load levels.

Per GPU of a tensor-parallel group (docs/planner.md has the equations and what they leave out):

    step(b sequences, q tokens each, p prefill tokens) = roofline(bytes moved / bandwidth, flops / compute)
                                                         + all-reduce (tp > 1) + layers x a per-layer overhead
    roofline(m, c) = (m^n + c^n)^(1/n): the larger of the two, blended where they are close (n fitted)
    bytes moved = the dense weights (the input embedding's table excepted: a step reads only its tokens'
                  rows) + the experts the step's tokens touch (MoE, at the experts' own bits) + KV cache
    speculative step = verification (q = k + 1) + k draft passes (one with parallel drafting),
                       yielding `acceptance length` tokens per sequence

Chunked prefill packs prompt tokens into the same steps as decoding, so prefill adds to a step's compute
(and little to its bytes) instead of running on its own. A closed-loop level of C users keeps
b = min(C, max_num_seqs, sequences the KV cache holds) running; each running sequence brings
a x (new prompt tokens) / (output tokens) prefill tokens to every step, which gives the step time, the
request rate and, by Little's law, the latency. The memory facts come from sizing.memory_plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import InstanceType, ModelFacts
from speculative_infra.planner.workload import Workload
from speculative_infra.sizing import MIB, MemoryPlan, dtype_bytes, quantized_bits, serve_defaults, weights_mib

Bound = Literal["memory bandwidth", "compute", "interconnect", "KV capacity", "max_num_seqs", "overloaded"]
FP8 = {"fp8", "fp8_e4m3", "fp8_e5m2"}


@dataclass(frozen=True)
class Efficiency:
    """Fitted factors (planner_calibration.yaml): the share of each peak a real engine reaches."""

    bandwidth: float  # of the GPU's memory bandwidth
    compute: float  # of dense tensor throughput, for decode and verification tokens
    prefill: float  # of dense tensor throughput, for prompt tokens (large matrix products)
    roofline_exponent: float  # n of the blend (m^n + c^n)^(1/n); large n is the plain max
    link: float  # of the tensor-parallel link's bandwidth an all-reduce reaches
    layer_overhead_s: float  # per layer per engine step: the fixed cost of each kernel, sampling
    draft_pass_overhead_s: float  # per draft forward pass
    allreduce_latency_s: float  # per all-reduce on the link (two per layer)
    request_overhead_s: float  # per request outside the engine: HTTP, SageMaker's front end, detokenizing


@dataclass(frozen=True)
class Engine:
    """What the model needs of a resolved deployment, in SI units; bytes are per GPU."""

    gpu_name: str
    bandwidth_bytes_s: float
    flops: float  # dense tensor flop/s in the weights' precision
    tp: int
    link_bytes_s: float | None  # per GPU per direction; None for tp = 1
    layers: int
    hidden: int
    attention_width: int  # heads x head_dim
    dense_bytes: float  # read by every step: all but the experts and the input embedding's table
    expert_bytes: float  # every expert's weights (0 for a dense model)
    parameters: float
    active_parameters: float
    experts: int | None
    experts_per_token: int | None
    plan: MemoryPlan
    max_num_seqs: int
    batch_tokens: int  # max_num_batched_tokens: prompt tokens a step takes at most
    max_model_len: int
    prefix_caching: bool
    draft_pass_bytes: float  # read by one draft pass
    draft_parameters: float  # run per token by one draft pass (whole group)
    k: int  # drafted tokens per step (0: no speculation)
    draft_passes: int  # sequential draft forward passes per step
    acceptance_length: float  # tokens per step per sequence (1 without speculation)


def _expert_bytes(model: ModelFacts, weight_bytes: float) -> float:
    """Bytes of every expert of a mixture of experts (0 for a dense model). Experts hold
    (parameters - active) / (1 - top_k / experts) parameters; where the checkpoint quantizes about that many
    (gpt-oss: the experts in MXFP4), they are at the quantized bits, else at the checkpoint's mean."""
    active = model.active_parameters_billion
    if not (model.num_experts and model.experts_per_token and active and active < model.parameters_billion):
        return 0.0
    picked = model.experts_per_token / model.num_experts
    expert_params = (model.parameters_billion - active) / (1 - picked) * 1e9
    bits, quantized = quantized_bits(model), model.quantized_parameters_billion
    if bits is not None and quantized is not None and abs(quantized * 1e9 / expert_params - 1) <= 0.1:
        share = expert_params * bits / 8
    else:
        share = weight_bytes * expert_params / (model.parameters_billion * 1e9)
    return min(share, 0.95 * weight_bytes)


def _embedding_bytes(model: ModelFacts, dtype_size: float) -> float:
    """The input embedding's table, which a step reads only the rows of (unless the LM head shares it)."""
    if model.vocab_size is None or model.tie_word_embeddings:
        return 0.0
    return (
        float(model.vocab_size * (model.hidden_size or model.num_attention_heads * model.head_dim))
        * dtype_size
    )


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
    dtype_size = dtype_bytes(engine_args.get("dtype"))
    weight_bytes = weights_mib(model, dtype_size) * MIB
    experts = _expert_bytes(model, weight_bytes)
    embedding = min(_embedding_bytes(model, dtype_size), 0.5 * (weight_bytes - experts))
    k = int((speculative or {}).get("num_speculative_tokens") or 0) if speculative else 0
    method = str((speculative or {}).get("method", ""))
    has_draft = bool(speculative and speculative.get("model"))
    parallel = bool(speculative and speculative.get("parallel_drafting"))
    passes = 0 if method == "ngram" or not has_draft else (1 if parallel else k)
    draft_bytes = plan.draft_mib * MIB * tp  # the whole draft as the memory model keeps it
    if plan.draft_estimated:  # the estimate counts an input embedding a pass reads only rows of
        draft_bytes = max(0.25 * draft_bytes, draft_bytes - _embedding_bytes(model, 2))
    configured_batch = engine_args.get("max_num_batched_tokens")
    default_batch, _ = serve_defaults(load_catalog().vllm.memory_overheads, instance.gpu_name, gpu.memory_mib)
    return Engine(
        gpu_name=instance.gpu_name,
        bandwidth_bytes_s=gpu.memory_bandwidth_gbps * 1e9,
        flops=flops,
        tp=tp,
        link_bytes_s=None if tp == 1 or link is None else link.gbps_per_direction * 1e9,
        layers=model.num_hidden_layers,
        hidden=model.hidden_size or model.num_attention_heads * model.head_dim,
        attention_width=model.num_attention_heads * model.head_dim,
        dense_bytes=(weight_bytes - experts - embedding) / tp,
        expert_bytes=experts / tp,
        parameters=model.parameters_billion * 1e9,
        active_parameters=(model.active_parameters_billion or model.parameters_billion) * 1e9,
        experts=model.num_experts,
        experts_per_token=model.experts_per_token,
        plan=plan,
        max_num_seqs=int(engine_args.get("max_num_seqs") or 256),
        batch_tokens=int(configured_batch)
        if isinstance(configured_batch, int) and configured_batch > 0
        else default_batch,
        max_model_len=int(engine_args.get("max_model_len") or model.max_position_embeddings),
        prefix_caching=bool(engine_args.get("enable_prefix_caching", True)),
        draft_pass_bytes=draft_bytes / tp,
        draft_parameters=draft_bytes / 2,  # 16-bit heads
        k=k if speculative else 0,
        draft_passes=passes,
        acceptance_length=acceptance_length if speculative and k else 1.0,
    )


def weights_read_bytes(e: Engine, tokens: float) -> float:
    """Bytes of weights one forward pass over `tokens` tokens reads, per GPU: the dense part always, and
    of a mixture of experts each expert some token picks, 1 - (1 - top_k / experts)^tokens of them."""
    if not e.expert_bytes or not (e.experts and e.experts_per_token):
        return e.dense_bytes
    touched = 1 - float((1 - e.experts_per_token / e.experts) ** max(tokens, 1.0))
    return e.dense_bytes + e.expert_bytes * touched


def roofline(memory_s: float, compute_s: float, exponent: float) -> float:
    """The larger of memory and compute time, blended near the ridge: neither hides the other fully."""
    big = max(memory_s, compute_s)
    if big <= 0:
        return 0.0
    blend = float((memory_s / big) ** exponent + (compute_s / big) ** exponent)
    return big * float(blend ** (1 / exponent))


def _allreduce_s(e: Engine, eff: Efficiency, tokens: float) -> float:
    if e.tp == 1 or e.link_bytes_s is None:
        return 0.0
    ring_bytes = tokens * e.hidden * 2 * 2 * (e.tp - 1) / e.tp  # bf16 activations, ring all-reduce
    return 2 * e.layers * (eff.allreduce_latency_s + ring_bytes / (e.link_bytes_s * eff.link))


@dataclass(frozen=True)
class StepTime:
    seconds: float
    bound: Bound


def _flops_per_token(e: Engine, context: float) -> float:
    return 2 * e.active_parameters + 4 * e.layers * e.attention_width * context


def forward_time(
    e: Engine,
    eff: Efficiency,
    sequences: float,
    tokens_each: float,
    context: float,
    prefill_tokens: float = 0.0,
    prefill_context: float = 0.0,
) -> StepTime:
    """One target forward pass: `sequences` x `tokens_each` decode tokens attending `context` tokens each,
    plus `prefill_tokens` prompt tokens (chunked prefill) attending `prefill_context` on average."""
    tokens = sequences * tokens_each + prefill_tokens
    kv_bytes = sequences * e.plan.kv_mib(max(1, int(context))) * MIB
    memory = (weights_read_bytes(e, tokens) + kv_bytes) / (e.bandwidth_bytes_s * eff.bandwidth)
    decode = sequences * tokens_each * _flops_per_token(e, context) / (e.flops * eff.compute)
    prompt = prefill_tokens * _flops_per_token(e, prefill_context) / (e.flops * eff.prefill)
    compute = (decode + prompt) / e.tp
    allreduce = _allreduce_s(e, eff, tokens)
    bound: Bound = "memory bandwidth" if memory >= compute else "compute"
    if allreduce > max(memory, compute):
        bound = "interconnect"
    seconds = roofline(memory, compute, eff.roofline_exponent) + allreduce + e.layers * eff.layer_overhead_s
    return StepTime(seconds, bound)


def step_time(
    e: Engine,
    eff: Efficiency,
    sequences: float,
    context: float,
    prefill_tokens: float = 0.0,
    prefill_context: float = 0.0,
) -> StepTime:
    """One engine step for `sequences` running sequences and `prefill_tokens` prompt tokens: the draft's
    passes, then verification of k + 1 tokens per sequence."""
    target = forward_time(e, eff, sequences, e.k + 1, context, prefill_tokens, prefill_context)
    if e.draft_passes == 0:
        return target
    draft_memory = e.draft_pass_bytes / (e.bandwidth_bytes_s * eff.bandwidth)
    draft_tokens = sequences + prefill_tokens / e.draft_passes  # the prompt goes through the first pass
    draft_compute = draft_tokens * 2 * e.draft_parameters / e.tp / (e.flops * eff.compute)
    one_pass = roofline(draft_memory, draft_compute, eff.roofline_exponent) + eff.draft_pass_overhead_s
    return StepTime(target.seconds + e.draft_passes * one_pass, target.bound)


def decode_step(e: Engine, eff: Efficiency, sequences: float, context: float) -> StepTime:
    """A step with no prompt tokens in it."""
    return step_time(e, eff, sequences, context)


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


def _context(w: Workload) -> float:
    return w.input_tokens + w.output_tokens / 2


def prompt_steps(
    e: Engine, eff: Efficiency, w: Workload, running: float, step: StepTime
) -> tuple[int, float]:
    """(chunks, seconds of one step that carries a chunk): a prompt's new tokens run in chunks of at most
    max_num_batched_tokens, each in a step beside the `running` sequences' decoding (chunked prefill)."""
    new, cached = _new_prefill_tokens(e, w)
    if new <= 0:
        return 0, step.seconds
    chunks = math.ceil(new / max(1, e.batch_tokens))
    with_prompt = step_time(e, eff, running, _context(w), new / chunks, cached + new / 2).seconds
    return chunks, with_prompt


def first_token_s(chunks: int, with_prompt: float, step: StepTime) -> float:
    """From admission to the first token: the step under way ends (half a step on average), then the
    prompt's chunks; a prompt served wholly from the prefix cache needs one step."""
    return step.seconds / 2 + (chunks * with_prompt if chunks else step.seconds)


def closed_loop(e: Engine, eff: Efficiency, w: Workload, concurrency: int) -> LevelPrediction:
    """`concurrency` users, each sending its next request when the last one ends."""
    capacity, cap_bound = _capacity(e, w)
    running = min(float(concurrency), capacity)
    context = _context(w)
    step = decode_step(e, eff, running, context)
    chunks, with_prompt = prompt_steps(e, eff, w, running, step)
    steps_per_request = w.output_tokens / e.acceptance_length
    # A request costs the GPU its share of the decode steps plus what its prompt adds to the steps it
    # rides in (little while decoding is memory-bound, a whole prefill when it is alone).
    gpu_seconds = chunks * (with_prompt - step.seconds) + steps_per_request * step.seconds / running
    engine_rate = 1 / gpu_seconds
    first = first_token_s(chunks, with_prompt, step)
    # Little's law over the whole loop: a user's cycle is the engine's latency plus the request overhead.
    alone = first + max(0.0, steps_per_request - 1) * step.seconds
    engine_latency = max(concurrency / engine_rate, alone)
    e2e = engine_latency + eff.request_overhead_s
    rate = concurrency / e2e
    queue = max(0.0, (concurrency - running) / engine_rate)  # waiting for a free sequence slot
    ttft = queue + first + eff.request_overhead_s
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
    context = _context(w)
    steps_per_request = w.output_tokens / e.acceptance_length

    def steps(running: float) -> tuple[StepTime, int, float]:
        step = decode_step(e, eff, max(running, 1.0), context)
        return (step, *prompt_steps(e, eff, w, max(running, 1.0), step))

    def latency(running: float) -> float:
        step, chunks, with_prompt = steps(running)
        # other requests' prompts take this share of the GPU's time, and decoding waits for them
        prompt_share = request_rate * chunks * (with_prompt - step.seconds)
        if prompt_share >= 1:
            return math.inf
        decoding = max(0.0, steps_per_request - 1) * step.seconds / (1 - prompt_share)
        return first_token_s(chunks, with_prompt, step) + decoding

    most = capacity * (1 - 1e-9)
    if request_rate * latency(most) > most:
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
    step, chunks, with_prompt = steps(running)
    e2e = latency(running) + eff.request_overhead_s
    ttft = first_token_s(chunks, with_prompt, step) + eff.request_overhead_s
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
