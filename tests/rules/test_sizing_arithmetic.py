"""The memory model's arithmetic on hand-computed cases: exact numbers, every branch."""

from __future__ import annotations

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import Draft, MemoryOverheads, ModelFacts
from speculative_infra.human_int import parse_human_int
from speculative_infra.rules.draft_structure import edit_distance, near_catalog_draft
from speculative_infra.sizing import (
    MIB,
    MemoryPlan,
    estimated_draft_mib,
    kv_heads_per_gpu,
    memory_plan,
    overhead_mib,
    weights_mib,
)

CAT = load_catalog()


def plan(free_bytes: float, full: int = 2, window_layers: int = 2, window: int = 100) -> MemoryPlan:
    """1 KiB per token per layer; `free_bytes` of KV cache."""
    return MemoryPlan(
        budget_mib=free_bytes / MIB,
        weights_mib=0,
        draft_mib=0,
        draft_estimated=False,
        overhead_mib=0,
        token_bytes_per_layer=1024,
        full_layers=full,
        window_layers=window_layers,
        window=window,
    )


@pytest.mark.parametrize(
    ("free", "expected"),
    [
        (0, 0),
        (-5 * MIB, 0),
        (1024 * 4 * 50, 50),  # shorter than the window: every layer holds every token
        (1024 * 4 * 50 + 4095, 50),
        (1024 * 4 * 100, 100),  # exactly the window
        (1024 * (2 * 300 + 2 * 100), 300),  # beyond the window: sliding layers stop growing
        (1024 * (2 * 300 + 2 * 100) - 1, 299),
    ],
)
def test_max_tokens_with_sliding_window(free, expected):
    assert plan(free).max_tokens() == expected
    if expected:
        assert plan(free).fits(expected) and not plan(free).fits(expected + 1)


def test_max_tokens_without_sliding_window():
    assert plan(1024 * 3 * 1000, full=3, window_layers=0, window=0).max_tokens() == 1000
    assert plan(1024 * 3 * 1000 - 1, full=3, window_layers=0, window=0).max_tokens() == 999


def test_only_sliding_layers_fit_any_length_once_the_window_does():
    assert plan(1024 * 2 * 100, full=0).max_tokens() == 2**31 - 1
    assert plan(1024 * 2 * 50, full=0).max_tokens() == 50


def test_kv_for_a_sequence():
    p = plan(0)
    assert p.kv_mib(50) == pytest.approx(1024 * 4 * 50 / MIB)
    assert p.kv_mib(1000) == pytest.approx(1024 * (2 * 1000 + 2 * 100) / MIB)


def test_cache_tokens_counts_every_layer_in_full():
    assert plan(1024 * 4 * 1000).cache_tokens() == 1000
    assert plan(0).cache_tokens(1024 * 4 * 1000 / MIB) == 1000
    assert plan(-1.0).cache_tokens() == 0


def test_available_kv_cache_subtracts_every_term():
    p = MemoryPlan(
        budget_mib=100,
        weights_mib=40,
        draft_mib=5,
        draft_estimated=False,
        overhead_mib=7,
        token_bytes_per_layer=1,
        full_layers=1,
        window_layers=0,
        window=0,
    )
    assert p.kv_available_mib == 48
    assert not MemoryPlan(**{**p.__dict__, "weights_mib": 101}).fits(1)


def test_kv_heads_per_gpu():
    llama = CAT.model("meta-llama/Llama-3.3-70B-Instruct")  # 8 KV heads
    assert [kv_heads_per_gpu(llama, tp) for tp in (1, 2, 4, 8, 16)] == [8, 4, 2, 1, 1]


def test_weights_per_dtype_and_quantization():
    qwen = CAT.model("Qwen/Qwen3-8B")
    assert weights_mib(qwen, 2) == pytest.approx(8.19e9 * 2 / MIB)
    assert weights_mib(qwen, 4) == pytest.approx(8.19e9 * 4 / MIB)
    fp8 = qwen.model_copy(update={"quantization": "fp8"})
    assert weights_mib(fp8, 2) == pytest.approx(8.19e9 / MIB)
    awq = qwen.model_copy(update={"quantization": "awq", "quantized_parameters_billion": 7.0})
    assert weights_mib(awq, 2) == pytest.approx((7e9 * 4.25 / 8 + 1.19e9 * 2) / MIB)


def test_draft_estimates_against_known_heads():
    # P-EAGLE for gpt-oss-20b: 4 layers, ~3.6 GB reported; the estimate is within 10%.
    p_eagle = estimated_draft_mib(CAT.model("openai/gpt-oss-20b"), parallel_drafting=True) * MIB / 1e9
    assert p_eagle == pytest.approx(3.6, rel=0.1)
    # The Qwen3-32B EAGLE3 head weighs 1.56 GB (3.12 GB with its embedding); the estimate errs high.
    eagle3 = estimated_draft_mib(CAT.model("Qwen/Qwen3-32B"), parallel_drafting=False) * MIB / 1e9
    assert 3.12 <= eagle3 <= 1.5 * 3.12
    # by hand: 16 h^2 per layer + 3 h^2 + 2 h V, 16-bit
    h, v = 5120, 151936
    assert eagle3 == pytest.approx((16 * h * h + 3 * h * h + 2 * h * v) * 2 / 1e9)


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [
        ("", "", 0),
        ("abc", "abc", 0),
        ("abc", "", 3),
        ("", "ab", 2),
        ("kitten", "sitting", 3),
        ("ab", "ba", 2),
        ("speculatr", "speculator", 1),
        ("Qwen3-8B", "Qwen3-4B", 1),
        ("flaw", "lawn", 2),
    ],
)
def test_edit_distance(a, b, distance):
    assert edit_distance(a, b) == distance == edit_distance(b, a)


def test_near_catalog_draft():
    assert near_catalog_draft("RedHatAI/Qwen3-32B-speculatr.eagle3") == "RedHatAI/Qwen3-32B-speculator.eagle3"
    assert near_catalog_draft("RedHatAI/Qwen3-32B-speculator.eagle3") is None  # itself: not a typo
    assert near_catalog_draft("RedHatAI/Qwen3-235B-A22B-speculator.eagle3") is None  # a real sibling
    assert near_catalog_draft("RedHatAI/Qwen3-32B-speculatoooor.eagle3") is None  # three edits


def test_a_head_for_a_sibling_model_is_not_a_typo():
    # AngelSlim publishes Qwen3-8B_eagle3 and Qwen3-14B_eagle3 (two edits apart; both linked from the
    # AngelSlim README on the Hugging Face Hub): for a Qwen3-14B deployment, the 14B head is a real name.
    assert near_catalog_draft("AngelSlim/Qwen3-14B_eagle3", "Qwen/Qwen3-14B") is None
    assert near_catalog_draft("AngelSlim/Qwen3-8B_eagel3", "Qwen/Qwen3-8B") == "AngelSlim/Qwen3-8B_eagle3"
    assert near_catalog_draft("AngelSlim/Qwen3-8B_eagel3", "qwen/qwen3-8b") == "AngelSlim/Qwen3-8B_eagle3"
    assert near_catalog_draft("RedHatAI/Qwen3-32B-speculatr.eagle3", "Qwen/Qwen3-8B") is None


@pytest.mark.parametrize(
    ("gpu", "expected"),
    [("H100", (8192, 1024)), ("B200", (8192, 1024)), ("A100-80GB", (2048, 256)), ("L40S", (2048, 256))],
)
def test_vllm_serve_batch_defaults_per_gpu(gpu, expected):
    # vLLM's arg_utils (0.10 to 0.20): 8192 tokens / 1024 sequences for `vllm serve` on GPUs of 70 GiB or
    # more except A100; 2048 / 256 on the others.
    from speculative_infra.sizing import serve_defaults

    facts = CAT.gpus[gpu]
    assert serve_defaults(CAT.vllm.memory_overheads, gpu, facts.memory_mib) == expected


# The overhead and plan terms by hand, with constants chosen here (not the catalog's), so that dropping,
# flipping or mis-scaling any term changes an exact figure. GiB = 1024 MiB; bytes / 2**20 = MiB.
HAND_OVERHEADS = MemoryOverheads(
    activation_fixed_gib=1.0,
    activation_bytes_per_token_hidden=10.0,
    sampler_bytes_per_row_vocab=8.0,
    non_torch_gib=0.5,
    cuda_graph_gib=0.25,
    cuda_graph_counted_from="0.11.0",
    default_gpu_memory_utilization=0.9,
    large_gpu_min_gib=70,
    large_gpu_exceptions=["A100-80GB"],
    large_gpu_defaults=(8192, 1024),
    small_gpu_defaults=(2048, 256),
    source="test",
    confidence="unverified",
)
HAND_MODEL = ModelFacts(
    architecture="TestForCausalLM",
    model_type="test",
    parameters_billion=1.0,
    num_hidden_layers=10,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=64,
    hidden_size=1024,
    max_position_embeddings=4096,
    vocab_size=1000,
)


def _overhead(engine, *, gpu="A10G", memory_gib=24, version="0.15.1", model=HAND_MODEL):
    return overhead_mib(
        HAND_OVERHEADS,
        model=model,
        engine=engine,
        gpu_name=gpu,
        gpu_memory_mib=memory_gib * 1024,
        vllm_version=version,
    )


def test_overhead_terms_by_hand():
    # 100 tokens x 1024 hidden x 10 B = 1,024,000 B; 4 rows x 1000 vocab x 8 B = 32,000 B.
    activation = 1024 + (1_024_000 + 32_000) / MIB
    engine = {"max_num_batched_tokens": 100, "max_num_seqs": 4}
    assert _overhead(engine) == pytest.approx(activation + 512 + 256)  # + non-torch + CUDA graphs
    assert _overhead({**engine, "enforce_eager": True}) == pytest.approx(activation + 512)  # no graphs
    assert _overhead(engine, version="0.10.2") == pytest.approx(activation + 512)  # graphs not counted yet
    assert _overhead(engine, version="0.11.0") == pytest.approx(activation + 512 + 256)  # counted from here
    # Rows are max_num_seqs, at most the batched tokens: 200 rows of 100 tokens count as 100.
    assert _overhead({**engine, "max_num_seqs": 200}) == pytest.approx(
        1024 + (1_024_000 + 800_000) / MIB + 512 + 256
    )
    # Without hidden_size: heads x head_dim = 512.
    no_hidden = HAND_MODEL.model_copy(update={"hidden_size": None})
    assert _overhead(engine, model=no_hidden) == pytest.approx(1024 + (512_000 + 32_000) / MIB + 512 + 256)


def test_overhead_uses_the_serve_defaults_of_the_named_gpu():
    # No batching given: an 80 GiB H100 gets (8192, 1024), the A100-80GB excepted gets (2048, 256).
    h100, a100 = _overhead({}, gpu="H100", memory_gib=80), _overhead({}, gpu="A100-80GB", memory_gib=80)
    assert h100 == pytest.approx(1024 + (8192 * 1024 * 10 + 1024 * 1000 * 8) / MIB + 768)
    assert a100 == pytest.approx(1024 + (2048 * 1024 * 10 + 256 * 1000 * 8) / MIB + 768)


def _plan(speculative, engine=None, tp=2):
    return memory_plan(
        model=HAND_MODEL,
        draft=None,
        speculative=speculative,
        engine=engine or {"max_model_len": 1024},
        gpu_name="A10G",
        gpu_memory_mib=24 * 1024,
        tensor_parallel_size=tp,
        vllm_version="0.15.1",
        overheads=HAND_OVERHEADS,
    )


def test_plan_draft_layers_and_tensor_parallel_by_hand():
    plain = _plan(None)
    assert plain.full_layers == 10 and plain.draft_mib == 0
    eagle = _plan({"method": "eagle3", "model": "test/head"})
    assert eagle.full_layers == 11  # one draft layer
    parallel = _plan({"method": "eagle3", "model": "test/head", "parallel_drafting": True})
    assert parallel.full_layers == 14  # P-EAGLE: four
    assert parallel.draft_mib > eagle.draft_mib  # the estimate grows with the layers
    # The draft splits over its own tensor-parallel degree (default: the target's).
    solo = _plan({"method": "eagle3", "model": "test/head", "draft_tensor_parallel_size": 1})
    assert solo.draft_mib == pytest.approx(2 * eagle.draft_mib)


def test_plan_sliding_window_layers_by_hand():
    windowed = HAND_MODEL.model_copy(update={"sliding_window": 128, "sliding_window_layers": 4})
    plan = memory_plan(
        model=windowed,
        draft=None,
        speculative=None,
        engine={},
        gpu_name="A10G",
        gpu_memory_mib=24 * 1024,
        tensor_parallel_size=1,
        vllm_version="0.15.1",
        overheads=HAND_OVERHEADS,
    )
    assert (plan.full_layers, plan.window_layers, plan.window) == (6, 4, 128)
    assert (_plan(None).window_layers, _plan(None).window) == (0, 0)


def test_plan_passes_the_gpu_to_the_serve_defaults():
    def plan(gpu: str) -> float:
        return memory_plan(
            model=HAND_MODEL,
            draft=None,
            speculative=None,
            engine={},
            gpu_name=gpu,
            gpu_memory_mib=80 * 1024,
            tensor_parallel_size=1,
            vllm_version="0.15.1",
            overheads=HAND_OVERHEADS,
        ).overhead_mib

    assert plan("H100") == pytest.approx(_overhead({}, gpu="H100", memory_gib=80))
    assert plan("H100") > plan("A100-80GB")


def test_overhead_without_a_vocabulary_assumes_128000():
    no_vocab = HAND_MODEL.model_copy(update={"vocab_size": None})
    engine = {"max_num_batched_tokens": 100, "max_num_seqs": 4}
    assert _overhead(engine, model=no_vocab) == pytest.approx(
        1024 + (1_024_000 + 4 * 128_000 * 8) / MIB + 768
    )


# vLLM's human_readable_int docstring examples (vllm/engine/arg_utils.py): '1k' -> 1,000, '1K' -> 1,024,
# '25.6k' -> 25,600; binary suffixes take whole numbers only.
@pytest.mark.parametrize(
    ("text", "value"),
    [("1k", 1000), ("1K", 1024), ("25.6k", 25600), ("2M", 2 * 2**20), ("3g", 3 * 10**9), ("16", 16),
     (" 8k ", 8000), ("1.5K", None), ("k", None), ("8 k", None), ("-1", -1), ("+8", 8), ("1_000", 1000), ("0x10", None), ("1.0", None)],
)  # fmt: skip
def test_parse_human_int(text, value):
    assert parse_human_int(text) == value


def test_overhead_reads_a_human_readable_token_budget():
    engine = {"max_num_batched_tokens": "1k", "max_num_seqs": 4}
    assert _overhead(engine) == pytest.approx(1024 + (1000 * 1024 * 10 + 32_000) / MIB + 768)


def test_more_stages_add_one_embedding_table_to_an_eagle_head_by_hand():
    # A 0.5 GB head for HAND_MODEL (1000 x 1024 vocabulary x hidden, bfloat16, tensor parallel 2): with more
    # than one stage the last stage holds a 1000 x 1024 table more for it; a draft model keeps its own
    # embedding in its checkpoint at any size, and an estimate already counts one.
    head = Draft(method="eagle3", size_gb=0.5, source="hand", confidence="reported")

    def draft_mib(method: str, shares: bool, draft: Draft | None = head) -> float:
        return memory_plan(
            model=HAND_MODEL,
            draft=draft,
            speculative={"method": method, "model": "acme/head"},
            engine={"max_model_len": 1024, "dtype": "bfloat16"},
            gpu_name="A10G",
            gpu_memory_mib=24 * 1024,
            tensor_parallel_size=2,
            vllm_version="0.15.1",
            overheads=HAND_OVERHEADS,
            draft_shares_target_embedding=shares,
        ).draft_mib

    assert draft_mib("eagle3", True) == pytest.approx(0.5e9 / MIB / 2)
    assert draft_mib("eagle3", False) == pytest.approx((0.5e9 + 1000 * 1024 * 2) / MIB / 2)
    assert draft_mib("eagle", False) == pytest.approx((0.5e9 + 1000 * 1024 * 2) / MIB / 2)
    assert draft_mib("draft_model", False) == draft_mib("draft_model", True) == pytest.approx(0.5e9 / MIB / 2)
    assert draft_mib("eagle3", False, None) == draft_mib("eagle3", True, None)
    # The table has the shape the head was built for, where the catalog knows it.
    wide = head.model_copy(update={"target_vocab_size": 2000, "target_hidden_size": 1024})
    assert draft_mib("eagle3", False, wide) == pytest.approx((0.5e9 + 2000 * 1024 * 2) / MIB / 2)
