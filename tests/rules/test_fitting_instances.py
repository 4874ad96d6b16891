"""SI300's fix names the instance types and tensor-parallel sizes the model fits on: each one passes SI300
(and adds no other error) when applied to the spec, cheapest first, and the search stays fast."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.rules import Severity
from speculative_infra.rules.fitting_instances import (
    PRICE_FALLBACK_REGION,
    SUGGESTED_INSTANCES,
    FittingInstance,
    instances_that_fit,
)

CAT = load_catalog()
SMALL_GPUS = ["ml.g5.2xlarge", "ml.g6.2xlarge", "ml.g6e.2xlarge", "ml.g5.12xlarge", "ml.g7.2xlarge"]
CONTAINERS = [{"framework": "vllm", "version": "0.19.1"}, {"framework": "lmi", "version": "20"}]


def _spec(instance: str, model: str, max_model_len: int | None, **changes: Any) -> dict[str, Any]:
    engine: dict[str, Any] = {} if max_model_len is None else {"max_model_len": max_model_len}
    return {
        "instance_type": instance,
        "container": {"framework": "vllm", "version": "0.19.1"},
        "model": {"id": model},
        "engine": engine,
        "hf_token_secret": "hf-token",
        **changes,
    }


def _si300(result: Any) -> Any:
    return next((f for f in result.findings if f.code == "SI300"), None)


def _suggestions(spec: dict[str, Any]) -> tuple[Any, list[FittingInstance]]:
    result = check(spec)
    finding = _si300(result)
    assert finding is not None, "the case must not fit"
    tokens = int(result.deployment.engine["max_model_len"])
    return result, instances_that_fit(result.deployment, tokens)


def _applied(spec: dict[str, Any], suggestion: FittingInstance) -> dict[str, Any]:
    engine = {**spec.get("engine", {}), "tensor_parallel_size": suggestion.tensor_parallel_size}
    return {**spec, "instance_type": suggestion.instance_type, "engine": engine}


def _errors(result: Any) -> set[tuple[str, str | None, str]]:
    return {(f.code, f.field, f.message) for f in result.findings if f.severity is Severity.ERROR}


def _assert_sound(spec: dict[str, Any], result: Any, suggestions: list[FittingInstance]) -> None:
    """Each suggestion, applied to the spec, passes SI300 and adds no error; the fix names them in order."""
    assert len(suggestions) <= SUGGESTED_INSTANCES
    before = _errors(result) - {e for e in _errors(result) if e[0] == "SI300"}
    for suggestion in suggestions:
        after = check(_applied(spec, suggestion))
        assert _si300(after) is None, suggestion
        assert _errors(after) <= before, (suggestion, _errors(after) - before)
    fix = _si300(result).fix
    positions = [fix.index(s.describe()) for s in suggestions]
    assert positions == sorted(positions)
    priced = [s.usd_per_hour for s in suggestions if s.usd_per_hour is not None]
    assert priced == sorted(priced)  # cheapest first
    unpriced = [i for i, s in enumerate(suggestions) if s.usd_per_hour is None]
    assert all(i >= len(priced) for i in unpriced)  # unpriced ones last
    gpus = [
        (CAT.instance_type(s.instance_type).gpu_name, CAT.instance_type(s.instance_type).gpu_count)
        for s in suggestions
    ]
    assert len(set(gpus)) == len(gpus)  # one size per GPU and GPU count


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    model=st.sampled_from(sorted(CAT.models)),
    instance=st.sampled_from(SMALL_GPUS),
    share=st.floats(0.05, 1.0),
    region=st.sampled_from([None, "us-west-2", "us-east-1", "eu-west-1"]),
    container=st.sampled_from(CONTAINERS),
    draft=st.booleans(),
)
def test_every_suggestion_passes_the_memory_rule(model, instance, share, region, container, draft):
    context = CAT.model(model).max_position_embeddings
    changes: dict[str, Any] = {"container": container}
    if region is not None:
        changes["region"] = region
    head = next((n for n, d in CAT.drafts.items() if d.target == model), None)
    if draft and head is not None and container["framework"] == "vllm":
        changes["speculative"] = {"method": "eagle3", "model": head, "num_speculative_tokens": 3}
    spec = _spec(instance, model, max(256, int(context * share)), **changes)
    result = check(spec)
    if _si300(result) is None:
        return  # it fits: nothing to suggest
    tokens = int(result.deployment.engine["max_model_len"])
    _assert_sound(spec, result, instances_that_fit(result.deployment, tokens))


@pytest.mark.parametrize(
    ("model", "instance", "max_model_len"),
    [
        ("Qwen/Qwen3-32B", "ml.g5.2xlarge", 4096),  # the weights alone do not fit
        ("Qwen/Qwen3-32B", "ml.g6e.12xlarge", 40960),  # a larger tensor-parallel size on the same instance
        ("meta-llama/Llama-3.3-70B-Instruct", "ml.g6e.2xlarge", None),  # the context defaulted
        ("openai/gpt-oss-120b", "ml.g6.2xlarge", 131072),
    ],
)
def test_catalog_models_that_do_not_fit_get_sound_suggestions(model, instance, max_model_len):
    spec = _spec(instance, model, max_model_len, region="us-west-2")
    if max_model_len is not None and instance == "ml.g6e.12xlarge":
        spec["engine"]["tensor_parallel_size"] = 1
    result, suggestions = _suggestions(spec)
    assert suggestions  # every one of these fits somewhere in the catalog
    _assert_sound(spec, result, suggestions)


def test_the_reference_deployment_is_the_cheapest_fit_for_qwen3_32b():
    # The seed benchmark's Qwen3-32B + EAGLE3 at 4096 tokens: ml.g7e.2xlarge, tensor parallel 1.
    spec = _spec(
        "ml.g5.2xlarge",
        "Qwen/Qwen3-32B",
        4096,
        region="us-west-2",
        speculative={
            "method": "eagle3",
            "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
            "num_speculative_tokens": 4,
        },
    )
    result, suggestions = _suggestions(spec)
    first = suggestions[0]
    assert (first.instance_type, first.tensor_parallel_size, first.price_region) == (
        "ml.g7e.2xlarge",
        1,
        "us-west-2",
    )
    fix = _si300(result).fix
    assert fix.startswith("use more GPU memory: an instance type it fits on, cheapest first: ml.g7e.2xlarge")
    assert "(engine.tensor_parallel_size: 1, $" in fix and "/hour in us-west-2)" in fix
    assert fix.endswith("; or use a quantized model")


def test_the_same_instance_with_more_tensor_parallel_ranks_is_suggested():
    # Llama 3.3 70B at its full context on one of four GPUs: all four are the cheapest fit.
    spec = _spec("ml.g7e.24xlarge", "meta-llama/Llama-3.3-70B-Instruct", 131072, region="us-east-1")
    spec["engine"]["tensor_parallel_size"] = 1
    result, suggestions = _suggestions(spec)
    assert (suggestions[0].instance_type, suggestions[0].tensor_parallel_size) == ("ml.g7e.24xlarge", 4)
    _assert_sound(spec, result, suggestions)


@pytest.mark.parametrize(
    ("region", "note"),
    [
        (None, f" ({PRICE_FALLBACK_REGION} prices: the region is not known): "),
        ("eu-north-1", f" ({PRICE_FALLBACK_REGION} prices where the catalog has none for eu-north-1): "),
        ("us-west-2", None),
    ],
)
def test_prices_fall_back_to_a_documented_region_and_say_so(region, note):
    changes = {} if region is None else {"region": region}
    result, suggestions = _suggestions(_spec("ml.g5.2xlarge", "Qwen/Qwen3-32B", 4096, **changes))
    fix = _si300(result).fix
    if note is None:
        assert "prices where" not in fix and "not known" not in fix
        assert {s.price_region for s in suggestions} == {"us-west-2"}
        assert not any(s.region_fallback for s in suggestions)
    else:
        assert note in fix
        assert all(s.price_region == PRICE_FALLBACK_REGION and s.region_fallback for s in suggestions)


def test_a_region_with_some_prices_uses_its_own_and_names_the_fallback_for_the_rest():
    # eu-west-1 lists a few types (an AWS sample's 2023 bill): those keep its price, the others us-east-1's.
    result, suggestions = _suggestions(_spec("ml.g5.2xlarge", "Qwen/Qwen3-32B", 4096, region="eu-west-1"))
    own = load_catalog().price_lists
    ireland = {t for p in own if p.region == "eu-west-1" for t in p.usd_per_hour}
    for s in suggestions:
        assert s.price_region == ("eu-west-1" if s.instance_type in ireland else PRICE_FALLBACK_REGION)
        assert s.region_fallback == (s.instance_type not in ireland)
    if any(s.region_fallback for s in suggestions):
        assert "prices where the catalog has none for eu-west-1" in _si300(result).fix


def test_a_suggestion_fits_exactly_up_to_its_longest_sequence():
    # Boundary: the cheapest fit for N tokens is suggested at N, not at N + 1.
    model = "meta-llama/Llama-3.3-70B-Instruct"
    cheapest = check(_spec("ml.g7e.12xlarge", model, 4096, region="us-west-2"))
    longest = cheapest.deployment.memory_plan().max_tokens()
    assert longest < CAT.model(model).max_position_embeddings  # a length the model allows
    _, at_limit = _suggestions(_spec("ml.g6e.2xlarge", model, longest, region="us-west-2"))
    _, beyond = _suggestions(_spec("ml.g6e.2xlarge", model, longest + 1, region="us-west-2"))
    assert (at_limit[0].instance_type, at_limit[0].tensor_parallel_size) == ("ml.g7e.12xlarge", 2)
    assert "ml.g7e.12xlarge" not in {s.instance_type for s in beyond}


def test_a_model_no_instance_holds_gets_no_suggestion():
    model = {
        "id": "example/too-big",
        "architecture": "LlamaForCausalLM",
        "model_type": "llama",
        "parameters_billion": 5000,
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "hidden_size": 8192,
        "max_position_embeddings": 8192,
    }
    result = check({**_spec("ml.p5.48xlarge", "example/too-big", 4096), "model": model})
    assert instances_that_fit(result.deployment, 4096) == []
    assert (
        _si300(result).fix
        == "use more GPU memory than any instance type in the catalog offers, or a quantized model"
    )


def test_a_too_long_context_names_the_length_and_says_when_nothing_fits_it():
    # Weights fit; 100 million tokens of KV cache fit nowhere: only the lower length is offered.
    result = check(_spec("ml.g7e.2xlarge", "Qwen/Qwen3-8B", 100_000_000))
    fix = _si300(result).fix
    assert re.fullmatch(
        r"lower engine\.max_model_len to at most \d+, or use an fp8 KV cache \(engine\.kv_cache_dtype: fp8\) "
        r"\(no instance type in the catalog fits 100000000 tokens\)",
        fix,
    )


def test_the_options_read_as_one_list():
    # Weights fit on the L4; the full context does not: a shorter context, fp8, or a larger instance.
    result = check(_spec("ml.g6.2xlarge", "Qwen/Qwen3-8B", 40960, region="us-east-1"))
    fix = _si300(result).fix
    assert re.match(
        r"lower engine\.max_model_len to at most \d+, use an fp8 KV cache \(engine\.kv_cache_dtype: fp8\), "
        r"or move to an instance type it fits on, cheapest first: ml\.",
        fix,
    ), fix


def test_the_search_is_fast():
    spec = _spec("ml.g5.2xlarge", "meta-llama/Llama-3.3-70B-Instruct", 131072)
    check(spec)  # warm the caches (catalog, vLLM release data)
    started = time.perf_counter()
    result = check(spec)
    assert _si300(result) is not None
    assert time.perf_counter() - started < 0.5
