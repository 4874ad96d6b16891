"""Property-based tests: any generated input either fails with a clear error or synthesizes a template
that passes cfn-lint. Never a traceback of another kind, never a broken template."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from speculative_infra import CompatibilityError, SpeculativeVllmEndpoint
from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.spec import SpecError
from tests.cfn import cfn_lint_errors

CAT = load_catalog()
INSTANCES = CAT.instance_type_names()
VLLM_VERSIONS = CAT.vllm_dlc_versions()
MODELS = sorted(CAT.models)
DRAFTS = sorted(CAT.drafts)

junk_text = st.text(min_size=0, max_size=12)
maybe = st.one_of
engine_values = st.one_of(st.integers(-4, 70000), st.booleans(), st.floats(-1, 2, allow_nan=False), junk_text)
engine = st.dictionaries(
    st.sampled_from(
        [
            "tensor_parallel_size",
            "max_model_len",
            "dtype",
            "enable_prefix_caching",
            "enable_chunked_prefill",
            "max_num_seqs",
            "gpu_memory_utilization",
            "enable_lora",
            "kv_cache_dtype",
            "enforce_eager",
            "max_num_batched_tokens",
            "enable_prefix_cach",
            "seed",
            "model",
        ]
    ),
    engine_values,
    max_size=6,
)
speculative = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"model": st.sampled_from(DRAFTS)},
        optional={
            "method": st.sampled_from(["eagle3", "eagle", "ngram", "mtp", "eagle9"]),
            "num_speculative_tokens": st.integers(-2, 12),
            "parallel_drafting": st.booleans(),
            "draft_tensor_parallel_size": st.integers(0, 4),
            "acceptance_boost": st.integers(),
        },
    ),
)
spec_dicts = st.fixed_dictionaries(
    {
        # valid values three times as likely as junk, so most examples reach the rules
        "instance_type": st.one_of(*[st.sampled_from(INSTANCES)] * 3, junk_text, st.integers()),
        "container": st.fixed_dictionaries(
            {"framework": st.sampled_from(["vllm", "vllm", "lmi", "tgi"])},
            optional={
                "version": st.one_of(st.sampled_from([*VLLM_VERSIONS, "20", "24", "0.99.0"]), st.integers())
            },
        ),
        "model": st.fixed_dictionaries({"id": st.one_of(*[st.sampled_from(MODELS)] * 3, junk_text)}),
    },
    optional={
        "region": st.sampled_from(["us-east-1", "us-west-1", "eu-west-3", "xx-west-9", "moon"]),
        "instance_count": st.integers(-1, 4),
        "engine": engine,
        "speculative": speculative,
        "inference_ami_version": st.sampled_from(
            [None, "auto", "al2-ami-sagemaker-inference-gpu-3-1", "bogus"]
        ),
        "scaling": st.fixed_dictionaries(
            {"max_capacity": st.integers(-1, 5)},
            optional={
                "min_capacity": st.integers(-1, 5),
                "target_value": st.floats(-5, 100, allow_nan=False),
            },
        ),
    },
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec_dicts)
def test_check_never_crashes(data: dict[str, Any]):
    try:
        result = check(data)
    except SpecError as err:
        event("invalid spec")
        assert err.problems and all(reason for _, reason in err.problems)
        return
    event("deployable" if result.ok else "findings")
    for finding in result.findings:
        assert finding.message and finding.fix and finding.code.startswith("SI")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    instance_type=st.sampled_from(
        [
            "ml.g7e.2xlarge",
            "ml.g6e.12xlarge",
            "ml.g5.12xlarge",
            "ml.g6e.xlarge",
            "ml.g5.xlarge",
            "ml.p5.48xlarge",
            "ml.g4dn.xlarge",
        ]
    ),
    model_id=st.sampled_from(["Qwen/Qwen3-8B", "Qwen/Qwen3-32B", "meta-llama/Llama-3.1-8B-Instruct"]),
    vllm_version=st.sampled_from(["0.11.0", "0.15.1", "0.17.1", "0.19.1", "0.27.1"]),
    engine=st.fixed_dictionaries(
        {},
        optional={
            "max_model_len": st.integers(0, 60000),
            "max_num_seqs": st.integers(0, 512),
            "enable_prefix_caching": st.booleans(),
            "tensor_parallel_size": st.sampled_from([1, 1, 2, 4, 8, 0]),
        },
    ),
    speculative=speculative,
    scaling=st.one_of(
        st.none(),
        st.fixed_dictionaries({"max_capacity": st.integers(0, 4), "min_capacity": st.integers(0, 4)}),
    ),
)
def test_construct_raises_clearly_or_synthesizes_clean(
    instance_type, model_id, vllm_version, engine, speculative, scaling
):
    app = cdk.App()
    stack = cdk.Stack(app, "Fuzz", env=cdk.Environment(region="us-east-1"))
    try:
        SpeculativeVllmEndpoint(
            stack,
            "E",
            model_id=model_id,
            instance_type=instance_type,
            vllm_version=vllm_version,
            engine=engine,
            speculative=speculative,
            scaling=scaling,
        )
    except CompatibilityError as err:
        event("CompatibilityError")
        assert err.findings and str(err)
        return
    except ValueError as err:
        event("ValueError")
        assert "Fuzz/E" in str(err) and len(str(err)) > 20
        return
    event("synthesized")
    template = app.synth().get_stack_by_name("Fuzz").template
    assert cfn_lint_errors(template, ["us-east-1"]) == []


# --- the construct with an oracle: each generated input says which outcome it must get ------------------
# Deployments seen to work (tests/golden/observations.yaml: vLLM 0.15.1 on g6e and g7e with Qwen3-32B, and
# the same hosts with a smaller Qwen3), varied within values that cannot break them.
KNOWN_GOOD = [
    {
        "instance_type": "ml.g7e.2xlarge",
        "model_id": "Qwen/Qwen3-32B",
        "tp": 1,
        "draft": "RedHatAI/Qwen3-32B-speculator.eagle3",
    },
    {
        "instance_type": "ml.g6e.12xlarge",
        "model_id": "Qwen/Qwen3-32B",
        "tp": 4,
        "draft": "RedHatAI/Qwen3-32B-speculator.eagle3",
    },
    {
        "instance_type": "ml.g6e.12xlarge",
        "model_id": "Qwen/Qwen3-8B",
        "tp": 4,
        "draft": "RedHatAI/Qwen3-8B-speculator.eagle3",
    },
]
# One broken setting each, and the outcome it must get: the spec schema's ValueError naming the field,
# or the rule's CompatibilityError naming the code.
BREAKS: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "negative tensor parallel": (
        {"engine": {"tensor_parallel_size": -1}},
        ValueError,
        "tensor_parallel_size",
    ),
    "utilization above 1": (
        {"engine": {"gpu_memory_utilization": 1.5}},
        ValueError,
        "gpu_memory_utilization",
    ),
    "unknown dtype": ({"engine": {"dtype": "int3"}}, ValueError, "dtype"),
    "more GPUs than the instance": ({"engine": {"tensor_parallel_size": 16}}, CompatibilityError, "SI310"),
    "longer than the context": ({"engine": {"max_model_len": 40961}}, CompatibilityError, "SI320"),
    "unknown method": ({"speculative": {"method": "eagle9"}}, CompatibilityError, "SI400"),
    "no tokens to draft": ({"speculative": {"num_speculative_tokens": 0}}, CompatibilityError, "SI404"),
    # The base's own draft with one letter dropped (a near miss of a head for another model is not a typo:
    # real sibling heads are that close).
    "misspelt draft": (
        {"speculative": {"model": "<the base's draft, misspelt>"}},
        CompatibilityError,
        "SI410",
    ),
    "head for another model": (
        {"speculative": {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"}},
        CompatibilityError,
        "SI407",
    ),
    "mtp without MTP layers": (
        {"speculative": {"method": "mtp", "model": None}},
        CompatibilityError,
        "SI408",
    ),
    "token in plaintext": ({"environment": {"HF_TOKEN": "hf_secret"}}, CompatibilityError, "SI530"),
    "environment name with a space": ({"environment": {"has space": "1"}}, CompatibilityError, "SI510"),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(KNOWN_GOOD),
    max_model_len=st.integers(256, 8192),
    max_num_seqs=st.integers(1, 64),
    prefix_caching=st.booleans(),
    tokens=st.integers(1, 6),
    speculate=st.booleans(),
    break_with=st.one_of(st.none(), st.sampled_from(sorted(BREAKS))),
)
def test_construct_outcome_matches_the_oracle(
    base, max_model_len, max_num_seqs, prefix_caching, tokens, speculate, break_with
):
    props: dict[str, Any] = {
        "instance_type": base["instance_type"],
        "model_id": base["model_id"],
        "vllm_version": "0.15.1",
        "engine": {
            "tensor_parallel_size": base["tp"],
            "max_model_len": max_model_len,
            "max_num_seqs": max_num_seqs,
            "enable_prefix_caching": prefix_caching,
        },
        "speculative": {"method": "eagle3", "model": base["draft"], "num_speculative_tokens": tokens}
        if speculate
        or break_with
        in (
            "unknown method",
            "no tokens to draft",
            "misspelt draft",
            "head for another model",
            "mtp without MTP layers",
        )
        else None,
    }
    expected: tuple[type[Exception], str] | None = None
    if break_with is not None:
        change, error, text = BREAKS[break_with]
        if break_with == "misspelt draft":
            change = {"speculative": {"model": base["draft"].replace("speculator", "speculatr")}}
        for key, value in change.items():
            merged = {**(props.get(key) or {}), **value}
            props[key] = {k: v for k, v in merged.items() if v is not None}
        expected = (error, text)
    stack = cdk.Stack(cdk.App(), "Fuzz", env=cdk.Environment(region="us-east-1"))
    try:
        SpeculativeVllmEndpoint(stack, "E", **props)
    except (CompatibilityError, ValueError) as err:
        assert expected is not None, f"a known-good deployment was refused: {err}"
        assert type(err) is expected[0] and expected[1] in str(err), (break_with, str(err))
        event(f"refused: {break_with}")
        return
    assert expected is None, f"{break_with} was not refused"
    event("synthesized")
