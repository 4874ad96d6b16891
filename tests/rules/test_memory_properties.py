"""The memory model over the whole catalog: its fix passes its rule, the resolver's defaults pass every
rule, and the fit moves the right way with memory, context length and KV cache dtype."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.rules import Severity
from speculative_infra.sizing import memory_plan

CAT = load_catalog()
CONTAINER = {"framework": "vllm", "version": "0.19.1"}
# One size per GPU count and family is enough to cover every GPU and every tensor-parallel degree.
INSTANCES = sorted(
    {
        (CAT.instance_type(n).family, CAT.instance_type(n).gpu_count): n for n in CAT.instance_type_names()
    }.values()
)
DRAFTS = {None, *CAT.drafts}


def _spec(instance: str, model: str, draft: str | None, **engine: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "instance_type": instance,
        "container": CONTAINER,
        "model": {"id": model},
        "engine": engine,
        "inference_ami_version": "default",
        "hf_token_secret": "hf-token",
    }
    if draft is not None:
        spec["speculative"] = {"method": "eagle3", "model": draft, "num_speculative_tokens": 3}
    return spec


def _si300(spec: dict[str, Any]):
    return next((f for f in check(spec).findings if f.code == "SI300"), None)


CASES = [
    pytest.param(
        instance, draft.target if draft else model_id, name, kv, id=f"{instance}-{name or model_id}-{kv}"
    )
    for instance in INSTANCES
    for model_id in CAT.models
    for name, draft in [(None, None), *((n, d) for n, d in CAT.drafts.items() if d.target == model_id)][:2]
    for kv in ("auto", "fp8")
]


@pytest.mark.parametrize(("instance", "model", "draft", "kv"), CASES)
def test_suggested_max_model_len_passes_the_rule_and_one_more_fails(instance, model, draft, kv):
    context = CAT.model(model).max_position_embeddings
    finding = _si300(_spec(instance, model, draft, max_model_len=context, kv_cache_dtype=kv))
    if finding is None:
        return
    suggested = re.search(r"at most (\d+)", finding.fix)
    if suggested is None:
        assert "more GPU memory" in finding.fix  # not even the weights fit
        return
    n = int(suggested.group(1))
    assert _si300(_spec(instance, model, draft, max_model_len=n, kv_cache_dtype=kv)) is None
    assert _si300(_spec(instance, model, draft, max_model_len=n + 1, kv_cache_dtype=kv)) is not None


@pytest.mark.parametrize(("instance", "model", "draft", "kv"), CASES)
def test_resolver_defaults_pass_every_rule(instance, model, draft, kv):
    result = check(_spec(instance, model, draft, kv_cache_dtype=kv))
    defaulted = {d.split("=")[0] for d in result.deployment.defaults}
    weights_do_not_fit = any(f.code == "SI300" and "more GPU memory" in f.fix for f in result.findings)
    for finding in result.findings:
        if finding.severity is not Severity.ERROR or finding.field not in defaulted:
            continue
        assert weights_do_not_fit and finding.code == "SI300", (finding.code, finding.message)


MODELS = st.sampled_from(sorted(CAT.models))
OVERHEADS = CAT.vllm.memory_overheads


def _plan(model_id: str, memory_gib: float, tp: int = 1, kv: str = "auto", draft: bool = False):
    draft_name = next((n for n, d in CAT.drafts.items() if d.target == model_id), None) if draft else None
    return memory_plan(
        model=CAT.model(model_id),
        draft=CAT.draft(draft_name) if draft_name else None,
        speculative={"method": "eagle3", "model": draft_name} if draft_name else None,
        # Batch settings pinned: vLLM's own defaults grow with GPU memory (a larger activation peak above
        # 70 GiB), so "more memory, more KV cache" holds only at fixed batch settings.
        engine={
            "dtype": "bfloat16",
            "kv_cache_dtype": kv,
            "gpu_memory_utilization": 0.9,
            "max_num_batched_tokens": 2048,
            "max_num_seqs": 256,
        },
        gpu_name="H100",
        gpu_memory_mib=memory_gib * 1024,
        tensor_parallel_size=tp,
        vllm_version="0.19.1",
        overheads=OVERHEADS,
    )


@settings(max_examples=200, deadline=None)
@given(model=MODELS, memory=st.floats(8, 400), more=st.floats(0, 200), tp=st.sampled_from([1, 2, 4, 8]))
def test_fit_grows_with_memory(model, memory, more, tp):
    assert _plan(model, memory + more, tp).max_tokens() >= _plan(model, memory, tp).max_tokens()


@settings(max_examples=200, deadline=None)
@given(model=MODELS, memory=st.floats(8, 400), tokens=st.integers(1, 300_000), draft=st.booleans())
def test_fit_shrinks_with_max_model_len(model, memory, tokens, draft):
    plan = _plan(model, memory, draft=draft)
    if plan.fits(tokens):
        assert plan.fits(tokens - 1) or tokens == 1
    assert plan.fits(tokens) == (tokens <= plan.max_tokens())


@settings(max_examples=100, deadline=None)
@given(model=MODELS, memory=st.floats(8, 400))
def test_fp8_kv_cache_holds_twice_the_tokens(model, memory):
    auto, fp8 = _plan(model, memory), _plan(model, memory, kv="fp8")
    assert fp8.max_tokens() >= 2 * auto.max_tokens()
    assert fp8.kv_mib(4096) == pytest.approx(auto.kv_mib(4096) / 2)


def test_a_draft_takes_memory_and_kv_cache():
    with_draft, without = _plan("Qwen/Qwen3-32B", 96, draft=True), _plan("Qwen/Qwen3-32B", 96)
    assert with_draft.draft_mib == pytest.approx(1.56e9 / 2**20)
    assert with_draft.kv_mib(1000) > without.kv_mib(1000)  # the head keeps one layer of KV
    assert with_draft.max_tokens() < without.max_tokens()


def test_tensor_parallel_shares_weights_and_kv_heads():
    one, four = (
        _plan("meta-llama/Llama-3.3-70B-Instruct", 80, 1),
        _plan("meta-llama/Llama-3.3-70B-Instruct", 80, 4),
    )
    assert four.weights_mib == pytest.approx(one.weights_mib / 4)
    assert four.token_bytes_per_layer == pytest.approx(one.token_bytes_per_layer / 4)
    eight = _plan("openai/gpt-oss-120b", 80, 16)  # 8 KV heads on 16 GPUs: one each, replicated
    assert eight.token_bytes_per_layer == 2 * 1 * 64 * 2


def test_sliding_window_layers_hold_only_their_window():
    plan = _plan("openai/gpt-oss-120b", 80)
    full_only = plan.token_bytes_per_layer * (plan.full_layers * 100_000 + plan.window_layers * 128) / 2**20
    assert plan.kv_mib(100_000) == pytest.approx(full_only)
    assert plan.window_layers == 18 and plan.window == 128


def test_mxfp4_weights_from_the_quantized_parameters():
    # The checkpoint as stored: experts at 4.25 bits (MXFP4 values + a scale per 32), the rest in bf16.
    from speculative_infra.sizing import weights_mib

    for model_id, checkpoint_gb in (("openai/gpt-oss-20b", 13.8), ("openai/gpt-oss-120b", 65.3)):
        stored = CAT.model(model_id).model_copy(update={"weights_gb": None})
        assert weights_mib(stored, 2) * 2**20 / 1e9 == pytest.approx(checkpoint_gb, rel=0.02)


# vllm serve's default batch, the size of the start-up profile run, grows with max_model_len without chunked
# prefill (at least max_model_len) and doubles under performance_mode throughput: the defaults and SI300's
# suggestion must still pass.
SERVE_VARIANTS = {
    "no-chunked-prefill": {"enable_chunked_prefill": False},
    "throughput": {"performance_mode": "throughput"},
}
VARIANT_CASES = [
    pytest.param(instance, model, draft, variant, id=f"{instance}-{draft or model}-{variant}")
    for instance, model, draft, kv in (c.values for c in CASES)
    if kv == "auto"
    for variant in SERVE_VARIANTS
]


@pytest.mark.parametrize(("instance", "model", "draft", "variant"), VARIANT_CASES)
def test_defaults_and_suggestion_pass_where_the_default_batch_moves(instance, model, draft, variant):
    engine = SERVE_VARIANTS[variant]
    result = check(_spec(instance, model, draft, **engine))
    defaulted = {d.split("=")[0] for d in result.deployment.defaults}
    weights_do_not_fit = any(f.code == "SI300" and "more GPU memory" in f.fix for f in result.findings)
    for finding in result.findings:
        if finding.severity is Severity.ERROR and finding.field in defaulted:
            assert weights_do_not_fit and finding.code == "SI300", (finding.code, finding.message)
    context = CAT.model(model).max_position_embeddings
    finding = _si300(_spec(instance, model, draft, max_model_len=context, **engine))
    suggested = re.search(r"at most (\d+)", finding.fix) if finding is not None else None
    if suggested is not None:
        n = int(suggested.group(1))
        assert _si300(_spec(instance, model, draft, max_model_len=n, **engine)) is None
        assert _si300(_spec(instance, model, draft, max_model_len=n + 1, **engine)) is not None


def _overhead(engine: dict[str, Any], instance: str = "ml.g7e.2xlarge") -> float:
    spec = _spec(instance, "Qwen/Qwen3-32B", None, max_model_len=32768, max_num_seqs=64, **engine)
    return check(spec).deployment.memory_plan().overhead_mib


def test_the_memory_model_runs_the_profile_at_vllm_serves_default_batch():
    # On the 96 GB RTX PRO 6000 vllm serve defaults to 8192 tokens; without chunked prefill to max_model_len
    # (32768); under performance_mode throughput to twice 8192.
    assert _overhead({}) == pytest.approx(_overhead({"max_num_batched_tokens": 8192}))
    assert _overhead({"enable_chunked_prefill": False}) == pytest.approx(
        _overhead({"enable_chunked_prefill": False, "max_num_batched_tokens": 32768})
    )
    assert _overhead({"performance_mode": "throughput"}) == pytest.approx(
        _overhead({"max_num_batched_tokens": 16384})
    )
    assert _overhead({"performance_mode": "throughput"}) > _overhead({})


def test_an_lmi_engine_keeps_the_spec_engine():
    spec = _spec("ml.g6e.12xlarge", "Qwen/Qwen3-32B", None, max_model_len=8192)
    spec["container"] = {"framework": "lmi", "version": "20"}
    d = check(spec).deployment
    assert d.container is not None and d.container.framework == "lmi"
    assert "max_num_batched_tokens" not in d.engine
    assert d.engine_as_run() == d.engine  # DJL's engine is not vllm serve: its default batch is not known


@pytest.mark.parametrize(
    ("fits", "limit", "expected"),
    [
        (lambda n: 10_000, 8192, 8192),  # the whole limit fits
        (lambda n: 0, 8192, 0),  # not one token
        (lambda n: 5000, 8192, 5000),  # a plateau: a set batch
        (lambda n: 9000 - n, 8192, 4500),  # a batch that grows with the length: fits(L) >= L up to 4500
        (lambda n: 1, 1, 1),
    ],
)
def test_longest_fitting_length(fits, limit, expected):
    from speculative_infra.resolve import longest_fitting_length

    assert longest_fitting_length(fits, limit) == expected


def test_the_summary_judges_the_full_context_at_its_own_batch():
    # Without chunked prefill the batch at the full context is the context itself: the summary and SI300
    # must agree on whether it fits, also where the plan at the spec's short max_model_len would say it does.
    moved = 0
    for instance in INSTANCES:
        for model in CAT.models:
            short = check(_spec(instance, model, None, max_model_len=1024, enable_chunked_prefill=False))
            memory = short.deployment.summary()["memory"]
            if memory is None:
                continue
            context = CAT.model(model).max_position_embeddings
            full = _si300(_spec(instance, model, None, max_model_len=context, enable_chunked_prefill=False))
            assert memory["full_context_fits"] is (full is None), (instance, model)
            moved += short.deployment.memory_plan().fits(context) is not (full is None)
    assert moved > 0  # cases where the short plan's answer would have been wrong
