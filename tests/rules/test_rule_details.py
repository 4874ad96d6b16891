"""What findings say, and the edges of the host and draft checks, against NVIDIA's and vLLM's own numbers.

Expected values here come from the outside sources the catalog cites (NVIDIA's CUDA release notes and
driver tables), never from the catalog entry the code reads.
"""

from __future__ import annotations

import re

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.host_fit import driver_fit, driver_fits, drives_gpu, host_fix
from speculative_infra.rules.capacity import ComponentDemand, check_capacity
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.draft_structure import is_local_path, near_catalog_draft
from speculative_infra.rules.finding import Severity
from speculative_infra.rules.registry import all_rules
from speculative_infra.spec.loader import SpecError
from tests.conftest import REFERENCE_SPEC, deep_merge

CAT = load_catalog()
VLLM_0151 = CAT.container("vllm", "0.15.1")  # CUDA 12.9, forward-compat libraries enabled
H100, V100, RTX_PRO = CAT.gpus["H100"], CAT.gpus["V100"], CAT.gpus["RTX-PRO-6000-Blackwell-Server"]


def _findings(changes):
    return check(deep_merge(REFERENCE_SPEC, changes)).findings


# CUDA 12.9 needs driver 575 natively (CUDA toolkit release notes, table 3); any 12.x runs on 525+ through
# minor-version compatibility; the 12.9 cuda-compat package supports branches from 535 (nvidia/cuda images'
# NVIDIA_REQUIRE_CUDA), on data-center GPUs only.
@pytest.mark.parametrize(
    ("gpu", "driver", "kind"),
    [
        (H100, 575, "native"),
        (H100, 574, "minor_version_compat"),
        (H100, 525, "minor_version_compat"),
        (H100, 524, "no"),  # below 525: only forward compatibility, which needs 535 for 12.9
        (None, 524, "no"),
    ],
)
def test_driver_fit_edges(gpu, driver, kind):
    fit = driver_fit(CAT, VLLM_0151, gpu, driver)
    assert fit.kind == kind and fit.ok == (kind != "no")
    assert (fit.needed_native, fit.needed_minor_compat, fit.needed_forward_compat) == (575, 525, 535)


def test_forward_compat_needs_a_data_center_gpu():
    cuda13 = CAT.container("vllm", "0.20.0")  # CUDA 13.0: minor-version compatibility from 580
    assert driver_fit(CAT, cuda13, H100, 570).kind == "forward_compat"
    assert driver_fit(CAT, cuda13, None, 570).kind == "forward_compat"
    assert driver_fit(CAT, cuda13, RTX_PRO, 570).kind == "no"
    assert driver_fit(CAT, cuda13, H100, 534).kind == "no"


def test_drives_gpu_edges():
    # Volta: from R384 (CUDA 9) to R580, its last branch; Blackwell RTX PRO 6000 Server: from 575.
    assert drives_gpu(V100, 384) and drives_gpu(V100, 580)
    assert not drives_gpu(V100, 383) and not drives_gpu(V100, 581)
    assert drives_gpu(RTX_PRO, 575) and not drives_gpu(RTX_PRO, 570)


def test_drives_gpu_within_a_branch():
    # NVIDIA's README lists the L40S from 535.104.05: the first build of R535 that drives it. An unknown
    # build of R535 is given the benefit of the doubt; any R550 drives it.
    l40s = CAT.instance_type("ml.g6e.xlarge").gpu
    assert drives_gpu(l40s, 535, "535.104.05") and not drives_gpu(l40s, 535, "535.104.04")
    assert not drives_gpu(l40s, 535, "535.54.03")
    assert drives_gpu(l40s, 535) and drives_gpu(l40s, 550, "550.54.14")


# Pinned from AWS, not from the catalog: gpu-2 and gpu-2-1 bring driver 535.54.03 (SageMaker's
# container-nvidia-compliance page; gpu-2's documented instance types leave out ml.g6e.*), older than the
# L40S's first build (535.104.05, NVIDIA/open-gpu-kernel-modules README).
@pytest.mark.parametrize("host", ["al2-ami-sagemaker-inference-gpu-2", "al2-ami-sagemaker-inference-gpu-2-1"])
def test_g6e_is_not_driven_by_the_535_54_host_images(host: str) -> None:
    spec = {
        "instance_type": "ml.g6e.xlarge",
        "container": {"framework": "lmi", "version": "18"},
        "model": {"id": "Qwen/Qwen3-8B"},
        "engine": {"tensor_parallel_size": 1},
        "inference_ami_version": host,
    }
    errors = [f for f in check(spec).findings if f.code == "SI213"]
    assert errors and "535.54.03" in errors[0].message and "535.104.05" in errors[0].message


def test_capacity_reports_every_shortfall():
    instance = CAT.instance_type("ml.g5.12xlarge")  # 4 GPUs
    fine = ComponentDemand(name="a", accelerators=2, memory_mb=1000, copies=2)
    assert check_capacity(instance, 1, [fine]) == []
    too_wide = ComponentDemand(name="b", accelerators=8, memory_mb=10**9, copies=1)
    findings = check_capacity(instance, 1, [too_wide])
    assert [f.field for f in findings] == ["copy_count"] * 3
    assert "needs 8 GPUs per copy" in findings[0].message and "host memory" in findings[1].message
    assert "need 8 GPUs" in findings[2].message and "offer 4" in findings[2].message


def test_rule_registry_refuses_a_code_twice():
    registered = {r.code: r for r in all_rules()}
    assert (
        registered["SI300"].name == "model-fits-gpu-memory" and registered["SI300"].severity is Severity.ERROR
    )
    with pytest.raises(ValueError, match="SI300 registered twice"):
        rule(code="SI300", name="x", severity=Severity.ERROR, title="t", rationale="r")(lambda d: [])


def test_draft_names_and_paths():
    assert (
        near_catalog_draft("RedHatAI/Qwen3-32B-speculatr.eagl3") == "RedHatAI/Qwen3-32B-speculator.eagle3"
    )  # two edits
    assert is_local_path("/opt/ml/model/draft") and is_local_path("s3://b/draft") and is_local_path("./d")
    assert not is_local_path("RedHatAI/Qwen3-32B-speculator.eagle3")
    local = _findings({"speculative": {"model": "/opt/ml/additional-model-data-sources/draft"}})
    assert not {"SI410", "SI411"} & {f.code for f in local}
    ngram = _findings({"speculative": {"method": "ngram", "model": None, "prompt_lookup_max": 4}})
    assert not {"SI409", "SI410", "SI411", "SI301"} & {f.code for f in ngram}


def test_a_real_head_for_a_sibling_model_is_only_unchecked():
    found = check(
        {
            "instance_type": "ml.g6e.xlarge",
            "container": {"framework": "vllm", "version": "0.15.1"},
            "model": {"id": "Qwen/Qwen3-14B"},
            "engine": {"max_model_len": 4096},
            "speculative": {
                "method": "eagle3",
                "model": "AngelSlim/Qwen3-14B_eagle3",
                "num_speculative_tokens": 3,
            },
        }
    ).findings
    codes = {f.code for f in found}
    assert "SI410" not in codes and "SI411" in codes, [(f.code, f.message) for f in found]


def test_shape_mismatch_names_both_shapes_and_the_right_drafts():
    si407, vocab = [
        f
        for f in _findings({"speculative": {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"}})
        if f.code == "SI407"
    ]
    assert vocab.message.endswith(
        "vocabulary size 128256) cannot load against Qwen/Qwen3-32B (vocabulary size 151936)"
    )
    assert si407.message == (
        "draft 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B' (built for meta-llama/Llama-3.1-8B-Instruct, hidden size "
        "4096) cannot load against Qwen/Qwen3-32B (hidden size 5120)"
    )
    assert si407.fix == (
        "use a draft trained for Qwen/Qwen3-32B: RedHatAI/Qwen3-32B-speculator.eagle3; or train one "
        "(EagleOptimizationJob)"
    )
    oss = _findings(
        {
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
        }
    )
    assert [f.message.split("(")[-1] for f in oss if f.code == "SI407"] == [
        "hidden size 2880)",
        "vocabulary size 201088)",
    ]


def test_dynamic_reference_is_not_plaintext():
    env = {"HF_TOKEN": "{{resolve:secretsmanager:prod/hf:SecretString:::}}"}
    assert "SI530" not in {f.code for f in _findings({"environment": env})}
    assert "SI530" in {
        f.code for f in _findings({"environment": {"HUGGING_FACE_HUB_TOKEN": "{{RESOLVE:x}}"}})
    }


def test_messages_name_the_releases():
    [si402] = [f for f in _findings({"speculative": {"parallel_drafting": True}}) if f.code == "SI402"]
    assert si402.message == "parallel_drafting (P-EAGLE) needs vLLM >= 0.16.0; the container has vLLM 0.15.1"
    [si500] = [
        f
        for f in _findings({"container": {"version": "0.27.1"}, "engine": {"enable_prefix_cach": True}})
        if f.code == "SI500"
    ]
    assert "enable_prefix_caching" in si500.message


def test_memory_message_in_gib():
    spec = {
        "instance_type": "ml.g5.xlarge",
        "container": {"version": "0.11.0"},
        "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
        "speculative": None,
        "hf_token_secret": "t",
        "engine": {"max_model_len": 131072},
    }
    [si300] = [f for f in _findings(spec) if f.code == "SI300"]
    # 8.03e9 x 2 bytes = 14.96 GiB; 131072 tokens x 2 x 32 layers x 8 heads x 128 x 2 bytes = 16 GiB
    assert "weights 15.0 GiB" in si300.message and "KV cache 16.0 GiB for 131072 tokens" in si300.message
    assert "0.9 x 22.5 GiB A10G" in si300.message


def test_engine_arg_from_one_release_names_that_release():
    [si500] = [f for f in _findings({"engine": {"monokernel": True}}) if f.code == "SI500"]
    assert si500.message == "engine.monokernel is not a flag of vLLM 0.15.1; it exists in vLLM 0.33.0"


def test_parent_relative_draft_path_is_local():
    assert is_local_path("../drafts/head")


@pytest.mark.parametrize(
    ("instance", "version", "expected"),
    [
        # AWS's DLC release notes recommend gpu-3-1 for the CUDA 12.9 vLLM images
        # (aws/deep-learning-containers docs/releasenotes/vllm/0.13-sagemaker.md) ...
        ("ml.g5.12xlarge", "0.15.1", "al2-ami-sagemaker-inference-gpu-3-1"),
        # ... and their SageMaker examples use gpu-4-1 for CUDA 13.0 (docs/vllm/deployment/sagemaker.md),
        ("ml.g6e.12xlarge", "0.20.0", "al2023-ami-sagemaker-inference-gpu-4-1"),
        # which SageMaker refuses on g5 ("requires g6 or newer instances", DLC commit dd5eb8e74b); AWS's
        # embeddinggemma example runs a CUDA 13.0 vLLM image on g5 with gpu-3-1 (golden table).
        ("ml.g5.12xlarge", "0.20.0", "al2-ami-sagemaker-inference-gpu-3-1"),
        ("ml.p4d.24xlarge", "0.25.1", "al2-ami-sagemaker-inference-gpu-3-1"),
    ],
)
def test_auto_takes_aws_recommended_host_where_the_default_cannot_run_the_image(instance, version, expected):
    # g5's and p4d's default hosts have driver 470, too old for CUDA 12.9 and 13.0 images
    deployment = check(
        deep_merge(
            REFERENCE_SPEC,
            {
                "instance_type": instance,
                "container": {"version": version},
                "model": {"id": "Qwen/Qwen3-8B"},
                "speculative": None,
                "inference_ami_version": "auto",
                "engine": {"tensor_parallel_size": 4},
            },
        )
    ).deployment
    assert deployment.host is not None and deployment.host.inference_ami_version == expected


def test_capacity_edges():
    instance = CAT.instance_type("ml.g5.12xlarge")  # 4 GPUs, 192 GiB of host memory
    fits_exactly = ComponentDemand(
        name="a", accelerators=4, memory_mb=int(instance.memory_gib * 1024), copies=2
    )
    assert check_capacity(instance, 2, [fits_exactly]) == []  # 2 instances x 4 GPUs hold 2 copies of 4
    [finding] = check_capacity(instance, 1, [fits_exactly])
    assert (
        "need 8 GPUs at their initial copy counts (a 2 x 4)" in finding.message
        and "offer 4" in finding.message
    )


def test_findings_name_their_field():
    findings = _findings({"engine": {"tensor_parallel_size": 2}, "environment": {"HF_TOKEN": "x"}})
    fields = {f.code: f.field for f in findings}
    assert fields["SI310"] == "engine.tensor_parallel_size" and fields["SI530"] == "environment.HF_TOKEN"


def test_reserved_keys_follow_the_container():
    lmi = {
        "container": {"framework": "lmi", "version": "20"},
        "speculative": None,
        "engine": {"served_model_name_env": "x"},
    }
    assert "SI501" not in {f.code for f in _findings(lmi)}  # only the vLLM DLC's renderer reserves it
    assert "SI501" in {f.code for f in _findings({"engine": {"served_model_name_env": "x"}})}


def test_forward_compat_is_not_assumed_for_rtx_parts():
    from speculative_infra.host_fit import driver_fits

    cuda13 = CAT.container("vllm", "0.20.0")
    assert not driver_fits(CAT, cuda13, RTX_PRO, 575)  # drives the GPU, but 13.0 needs 580 on it
    assert driver_fits(CAT, cuda13, RTX_PRO, 580)


def test_methods_without_a_checkpoint_take_no_draft_memory():
    deployment = check(
        deep_merge(
            REFERENCE_SPEC, {"speculative": {"method": "ngram", "model": None, "prompt_lookup_max": 4}}
        )
    ).deployment
    plan = deployment.memory_plan()
    assert plan is not None and plan.draft_mib == 0 and not plan.draft_estimated


def test_draft_tensor_parallel_follows_vllm_not_the_catalog():
    """vllm/config/speculative.py _verify_and_get_draft_tp (v0.11.0 onward): 1 or the target's TP."""
    spec = {"instance_type": "ml.g6e.12xlarge", "engine": {"tensor_parallel_size": 4}}
    for draft_tp, refused in ((1, False), (2, True), (4, False), (8, True)):
        findings = _findings({**spec, "speculative": {"draft_tensor_parallel_size": draft_tp}})
        assert ("SI405" in {f.code for f in findings}) is refused, draft_tp


@pytest.mark.parametrize(
    ("instance_type", "vllm_default"),
    # vllm/engine/arg_utils.py (v0.11.0 onward): max_num_seqs 1024 on GPUs of 70 GiB or more (A100 excepted),
    # 256 below.
    [("ml.g6e.12xlarge", 256), ("ml.p5.48xlarge", 1024), ("ml.p4de.24xlarge", 256)],
)
def test_default_max_num_seqs_says_how_it_relates_to_vllms(instance_type, vllm_default):
    result = check(
        deep_merge(REFERENCE_SPEC, {"instance_type": instance_type, "engine": {"max_num_seqs": None}})
    )
    (line,) = [d for d in result.deployment.defaults if d.startswith("engine.max_num_seqs=")]
    assert result.deployment.engine["max_num_seqs"] == 256
    assert ("vLLM's default" in line) is (vllm_default == 256), line
    assert (str(vllm_default) in line.split("(", 1)[1]) is (vllm_default != 256), line


def test_documented_model_fields_reach_the_memory_model():
    """docs/spec.md lists sliding_window, sliding_window_layers and quantized_parameters_billion for models
    outside the catalog: given inline, they change the plan as they do for a catalog model."""
    base = {
        "id": "example/gpt-oss-like",
        "architecture": "GptOssForCausalLM",
        "model_type": "gpt_oss",
        "parameters_billion": 20.9,
        "quantization": "mxfp4",
        "num_hidden_layers": 24,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "hidden_size": 2880,
        "max_position_embeddings": 131072,
        "vocab_size": 201088,
        "dtype": "bfloat16",
    }
    spec = {"instance_type": "ml.g6e.xlarge", "speculative": None, "engine": {"max_model_len": 131072}}

    def plan(**extra):
        result = check(deep_merge(REFERENCE_SPEC, {**spec, "model": {**base, **extra}}))
        return result.deployment.memory_plan()

    plain, windowed = plan(), plan(sliding_window=128, sliding_window_layers=12)
    assert windowed.kv_mib(131072) < 0.6 * plain.kv_mib(131072)  # half the layers hold 128 tokens
    # Only the experts are MXFP4: the other 1.79 B parameters count at bf16 width.
    assert plan(quantized_parameters_billion=19.11).weights_mib > plain.weights_mib


# --- the batch transform host (mutation testing's survivors) --------------------------------------


def test_batch_host_prefers_the_newest_driver_that_fits_whatever_the_names():
    from speculative_infra.catalog import load_catalog
    from speculative_infra.host_fit import choose_batch_host

    cat = load_catalog()
    real = cat.batch_amis["al2-ami-sagemaker-batch-gpu-535"]
    # Names sorted the other way round from drivers: only the driver order picks the 580 image.
    amis = {"a-batch-535": real, "z-batch-580": real.model_copy(update={"driver": 580, "cuda": "13.0"})}
    fake = cat.model_copy(update={"batch_amis": amis})
    instance = cat.instance_type("ml.g6e.2xlarge")
    container = cat.container("vllm", "0.15.1")
    choice = choose_batch_host(fake, instance, container)
    assert (choice.inference_ami_version, choice.fits) == ("z-batch-580", True)
    assert "driver 580" in choice.reason and instance.gpu_name in choice.reason


def test_batch_host_names_the_newest_image_when_none_fits():
    from speculative_infra.catalog import load_catalog
    from speculative_infra.host_fit import choose_batch_host

    cat = load_catalog()
    # Blackwell (g7e) needs R570 or later: neither batch image (470, 535) drives it.
    choice = choose_batch_host(cat, cat.instance_type("ml.g7e.2xlarge"), cat.container("vllm", "0.15.1"))
    assert (choice.inference_ami_version, choice.fits) == ("al2-ami-sagemaker-batch-gpu-535", False)
    assert "none in the catalog fits" in choice.reason
    unknown = choose_batch_host(cat, None, cat.container("vllm", "0.15.1"))
    assert (unknown.inference_ami_version, unknown.fits) == ("al2-ami-sagemaker-batch-gpu-535", False)
    assert "no known instance" in unknown.reason


def test_flashinfer_fix_names_releases_that_pass_it():
    # LMI v20 (CUDA 12.8) on a compute-capability-12.0 GPU: the fix names the first releases to try.
    spec = {
        "instance_type": "ml.g7e.2xlarge",
        "container": {"framework": "lmi", "version": "20"},
        "model": {"id": "Qwen/Qwen3-8B"},
        "engine": {"tensor_parallel_size": 1},
    }
    (finding,) = [f for f in check(spec).findings if f.code == "SI201"]
    vllm, lmi = re.search(r"vLLM DLC (\S+) or newer, LMI v(\S+) or newer", finding.fix).groups()
    for container in ({"framework": "vllm", "version": vllm}, {"framework": "lmi", "version": lmi}):
        assert "SI201" not in {f.code for f in check({**spec, "container": container}).findings}, container


def test_host_choice_weighs_the_driver_build():
    # The build reaches the host choice too: a 535.54.03 image cannot carry an L40S (first build 535.104.05).
    l40s = CAT.instance_type("ml.g6e.xlarge").gpu
    lmi18 = CAT.container("lmi", "18")
    assert not driver_fits(CAT, lmi18, l40s, 535, "535.54.03")
    assert driver_fits(CAT, lmi18, l40s, 535, "535.104.05") and driver_fits(CAT, lmi18, l40s, 535)


def test_the_fix_where_no_host_image_drives_the_gpu_names_the_default_host():
    fix = host_fix(CAT, CAT.instance_type("ml.g7.2xlarge"), CAT.container("vllm", "0.20.1"))
    assert fix.startswith("no host image in the catalog drives the RTX-PRO-4500-Blackwell-Server")
    assert "set inference_ami_version to default" in fix and "not documented" in fix


def test_the_fix_keeps_no_default_host_that_was_seen_failing():
    """No catalog row shows anything on g7's default host, so add a row: after a failure the fix must not
    offer that host; after a success `auto` keeps it (with no row, the test above: offered, to confirm)."""
    from speculative_infra.catalog.models import Observation

    g7, vllm = CAT.instance_type("ml.g7.2xlarge"), CAT.container("vllm", "0.20.1")
    seen = {
        "framework": "vllm",
        "version": "0.20.1",
        "family": "g7",
        "source": "test",
        "confidence": "reported",
    }
    failed = CAT.model_copy(
        update={"observations": [*CAT.observations, Observation(**seen, outcome="fails")]}
    )
    assert host_fix(failed, g7, vllm) == (
        "choose a container release or instance family that a host image in the catalog can run"
    )
    worked = CAT.model_copy(
        update={"observations": [*CAT.observations, Observation(**seen, outcome="works")]}
    )
    assert host_fix(worked, g7, vllm).startswith(
        "set inference_ami_version: auto (SageMaker's default host for g7"
    )


def test_max_model_len_as_vllm_writes_sizes():
    # vLLM reads --max-model-len 32k as 32,000 and 32K as 32,768 (human_readable_int); the spec keeps the
    # integer, so the container gets digits whatever the release, and a size vLLM refuses stays an error.
    for text, tokens in (("4k", 4000), ("4K", 4096)):
        result = check({**REFERENCE_SPEC, "engine": {**REFERENCE_SPEC["engine"], "max_model_len": text}})
        assert result.deployment.engine["max_model_len"] == tokens
    with pytest.raises(SpecError, match="max_model_len"):
        check({**REFERENCE_SPEC, "engine": {**REFERENCE_SPEC["engine"], "max_model_len": "1.5K"}})


def test_memory_fix_offers_an_fp8_kv_cache_only_where_vllm_computes_in_fp8():
    # vLLM's docs: FP8 computation on compute capability >= 8.9 (Ada, Hopper, Blackwell): the L40S (8.9)
    # gets the suggestion, the A10G (8.6) does not.
    def fix(instance_type: str, tp: int) -> str:
        spec = deep_merge(
            REFERENCE_SPEC,
            {
                "instance_type": instance_type,
                "container": {"version": "0.11.0"},
                "engine": {"tensor_parallel_size": tp, "max_model_len": 40960, "gpu_memory_utilization": 0.8},
                "speculative": None,
            },
        )
        (finding,) = [f for f in check(spec).findings if f.code == "SI300"]
        return finding.fix

    assert "kv_cache_dtype: fp8" in fix("ml.g6e.12xlarge", 2)
    assert "kv_cache_dtype: fp8" not in fix("ml.g5.12xlarge", 4)


# What vLLM 0.15.1's argument parser accepts per flag type (argparse `type=` in its arg_utils: int, float,
# human_readable_int, human_readable_int_or_auto, choices, BooleanOptionalAction), value by value.
@pytest.mark.parametrize(
    ("dest", "value", "problem"),
    [
        ("cpu_offload_gb", "lots", "a number"),  # float
        ("cpu_offload_gb", True, "a number"),
        ("cpu_offload_gb", "2.5", None),
        ("cpu_offload_gb", 2, None),
        ("max_num_seqs", "2k", "an integer"),  # int: no sizes
        ("max_num_seqs", True, "an integer"),
        ("max_num_seqs", "64", None),
        ("max_num_batched_tokens", "lots", "an integer, or a size such as 16k (16,000) or 16K (16,384)"),
        ("max_num_batched_tokens", "16k", None),
        ("max_num_batched_tokens", "16K", None),
        ("max_num_batched_tokens", True, "an integer, or a size such as 16k (16,000) or 16K (16,384)"),
        ("max_model_len", "lots", 'an integer, or a size such as 16k (16,000) or 16K (16,384), or "auto"'),
        ("max_model_len", "32k", None),
        ("max_model_len", "auto", None),  # human_readable_int_or_auto
        ("max_num_batched_tokens", "auto", "an integer, or a size such as 16k (16,000) or 16K (16,384)"),
        ("enable_prefix_caching", "yes", "true or false"),
        ("enable_prefix_caching", False, None),
    ],
)
def test_engine_arg_value_problem_per_flag_type(dest, value, problem):
    from speculative_infra.catalog.vllm_release import load_vllm_release
    from speculative_infra.rules.engine_args import _value_problem

    flag = load_vllm_release("0.15.1").flag_by_dest(dest)
    assert flag is not None, dest
    assert _value_problem(flag, value) == problem


def test_engine_arg_choices_name_every_choice():
    from speculative_infra.catalog.vllm_release import load_vllm_release
    from speculative_infra.rules.engine_args import _value_problem

    flag = load_vllm_release("0.15.1").flag_by_dest("kv_cache_dtype")
    assert flag is not None and flag.choices
    assert _value_problem(flag, "fp9") == "one of " + ", ".join(flag.choices)
    assert _value_problem(flag, flag.choices[-1]) is None


def test_auto_prefers_the_host_image_aws_recommends_for_the_containers_cuda():
    """AWS recommends gpu-3-1 for CUDA 12.x images (amis.yaml recommended_by_cuda); where it fits it is
    chosen even when a newer-driver image (gpu-4-1, driver 580) is offered and fits too."""
    from speculative_infra.host_fit import fitting_host_image

    cat = load_catalog()
    container = cat.container("vllm", "0.11.0")  # CUDA 12.8
    instance = cat.instance_type("ml.g6e.xlarge")
    assert container is not None and instance is not None
    gpu41 = cat.amis["al2023-ami-sagemaker-inference-gpu-4-1"]
    assert gpu41.offered_on(instance.name) and not gpu41.doubted_for(instance.family)
    assert not gpu41.offered_on("ml.g5.12xlarge") and gpu41.doubted_for("g5")  # the refusal on record
    assert fitting_host_image(cat, container, instance) == "al2-ami-sagemaker-inference-gpu-3-1"
    blackwell = cat.instance_type("ml.g7e.2xlarge")  # gpu-3-1 (550) cannot drive it: the newest that can
    assert blackwell is not None
    assert fitting_host_image(cat, cat.container("vllm", "0.15.1"), blackwell) == (
        "al2023-ami-sagemaker-inference-gpu-4-1"
    )
