"""Every rule: one compliant and one non-compliant case (table-driven, through resolve + rules)."""

from __future__ import annotations

from typing import Any

import pytest

from speculative_infra.check import check
from speculative_infra.rules import all_rules
from tests.conftest import REFERENCE_SPEC, deep_merge, llama_8b

LMI_G6E = {
    "instance_type": "ml.g6e.12xlarge",
    "container": {"framework": "lmi", "version": "20"},
    "engine": {"tensor_parallel_size": 4},
    "speculative": None,
}
G5_QWEN14B = {
    "instance_type": "ml.g5.12xlarge",
    "model": {"id": "Qwen/Qwen3-14B"},
    "speculative": None,
    "inference_ami_version": "auto",
    "engine": {"tensor_parallel_size": 4},
}
UNKNOWN_MISTRAL = {
    "id": "acme/mistral-like-7b",
    "architecture": "MistralForCausalLM",
    "model_type": "mistral",
    "parameters_billion": 7.2,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 32768,
}

# code -> (changes that comply, changes that violate), both applied to the reference spec. A rule with
# more than one way to fail has more entries: "CODE what".
SPARSE_24_FP8_LLAMA = llama_8b(
    "acme/sparse-llama-3.1-8b-2of4-fp8-dynamic",
    quantization="compressed-tensors",
    quantization_scheme="w8a8_fp8",
    sparsity="2:4",
)

_LLAMA_YUHUILI: dict[str, Any] = {
    "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
    "speculative": {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"},
}
_MTP_LONG: dict[str, Any] = {
    "container": {"version": "0.21.0"},
    "engine": {"max_model_len": 65536},
    "environment": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"},
    "speculative": {"method": "mtp", "model": None},
}

CASES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "SI100": ({}, {"instance_type": "ml.g5.13xlarge"}),
    # botocore's TransformInstanceType list has g6e but no g7e.
    "SI103": (
        {"serving": "batch", "instance_type": "ml.g6e.12xlarge"},
        {"serving": "batch", "instance_type": "ml.g7e.2xlarge"},
    ),
    "SI101": (
        {
            "instance_type": "ml.p3.8xlarge",
            "container": {"version": "0.19.1"},
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
            "engine": {"dtype": "float16", "tensor_parallel_size": 4},
            "volume_size_in_gb": 200,
        },
        {"volume_size_in_gb": 200},
    ),
    "SI110": ({"region": "eu-west-1"}, {"region": "xx-west-9"}),
    "SI111": ({**LMI_G6E, "region": "us-east-1"}, {**LMI_G6E, "region": "us-west-1"}),
    "SI120": ({}, {"container": {"version": "0.99.0"}}),
    "SI122": ({}, {"container": {"version": "0.11.0"}, "inference_ami_version": "default"}),
    "SI200": (
        {
            "instance_type": "ml.p3.8xlarge",
            "container": {"version": "0.19.1"},
            "engine": {"dtype": "float16"},
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
        },
        {
            "instance_type": "ml.p3.8xlarge",
            "container": {"version": "0.20.0"},
            "engine": {"dtype": "float16"},
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
        },
    ),
    "SI201": ({}, {"container": {"framework": "lmi", "version": "20"}}),
    "SI210": (
        {
            "instance_type": "ml.g5.12xlarge",
            "engine": {"tensor_parallel_size": 4},
            "inference_ami_version": "al2-ami-sagemaker-inference-gpu-3-1",
        },
        {
            "instance_type": "ml.g5.12xlarge",
            "engine": {"tensor_parallel_size": 4},
            "inference_ami_version": "default",
        },
    ),
    "SI211": (
        {},
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": "0.20.0"},
            "engine": {"tensor_parallel_size": 4},
            "inference_ami_version": "default",
        },
    ),
    "SI212": (
        {
            "instance_type": "ml.g6.12xlarge",
            "container": {"version": "0.20.0"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 4},
            "inference_ami_version": "al2023-ami-sagemaker-inference-gpu-4-1",
        },
        {
            "instance_type": "ml.g6.12xlarge",
            "speculative": None,
            "engine": {"tensor_parallel_size": 4},
            "inference_ami_version": "default",
        },
    ),
    # R550 has no Blackwell GPU in its kernel driver: the reference g7e deployment on gpu-3-1.
    "SI213": (
        {"inference_ami_version": "al2023-ami-sagemaker-inference-gpu-4-1"},
        {"inference_ami_version": "al2-ami-sagemaker-inference-gpu-3-1"},
    ),
    "SI214": ({}, {"inference_ami_version": "al2-ami-sagemaker-inference-gpu-9"}),
    # Qwen3MoeForCausalLM implements SupportsEagle3 from vLLM 0.11.1 (read from the wheels).
    "SI414": (
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": "0.11.1"},
            "model": {"id": "Qwen/Qwen3-Coder-30B-A3B-Instruct"},
            "engine": {"tensor_parallel_size": 4},
            "speculative": {"method": "eagle3", "model": "acme/qwen3-coder-eagle3"},
        },
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": "0.11.0"},
            "model": {"id": "Qwen/Qwen3-Coder-30B-A3B-Instruct"},
            "engine": {"tensor_parallel_size": 4},
            "speculative": {"method": "eagle3", "model": "acme/qwen3-coder-eagle3"},
        },
    ),
    # vLLM 0.15.0-0.20.2 refuse a draft model for a multimodal target; 0.21.0 warns.
    "SI415": (
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": "0.21.0"},
            "model": {**UNKNOWN_MISTRAL, "architecture": "Mistral3ForConditionalGeneration"},
            "engine": {"tensor_parallel_size": 4},
            "speculative": {
                "method": "draft_model",
                "model": "acme/mistral-small-draft",
                "num_speculative_tokens": 3,
            },
        },
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": "0.20.2"},
            "model": {**UNKNOWN_MISTRAL, "architecture": "Mistral3ForConditionalGeneration"},
            "engine": {"tensor_parallel_size": 4},
            "speculative": {
                "method": "draft_model",
                "model": "acme/mistral-small-draft",
                "num_speculative_tokens": 3,
            },
        },
    ),
    # P-EAGLE (4 slots per request) x 512 sequences fill vllm serve's 2048-token default on an L40S (0.20-0.27).
    "SI504": (
        {
            "instance_type": "ml.g6e.xlarge",
            "container": {"version": "0.25.1"},
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": {
                "model": "amazon/GPT-OSS-20B-P-EAGLE",
                "num_speculative_tokens": 5,
                "parallel_drafting": True,
            },
            "engine": {"tensor_parallel_size": 1, "max_model_len": 8192, "max_num_seqs": 511},
        },
        {
            "instance_type": "ml.g6e.xlarge",
            "container": {"version": "0.25.1"},
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": {
                "model": "amazon/GPT-OSS-20B-P-EAGLE",
                "num_speculative_tokens": 5,
                "parallel_drafting": True,
            },
            "engine": {"tensor_parallel_size": 1, "max_model_len": 8192, "max_num_seqs": 512},
        },
    ),
    # AWS's 2026-07 G7e expansion names Tokyo; nothing public names sa-east-1.
    "SI112": ({"region": "ap-northeast-1"}, {"region": "sa-east-1"}),
    # SchedulerConfig: max_num_batched_tokens >= max_num_seqs (every release; tests/golden/vllm_startup_checks.json).
    "SI503": (
        {"engine": {"max_num_batched_tokens": 256, "max_num_seqs": 256}},
        {"engine": {"max_num_batched_tokens": 255, "max_num_seqs": 256}},
    ),
    # vLLM 0.20.0's wheel carries no sm_70 machine code (read by scripts/read_vllm_kernels.py).
    "SI204": (
        {},
        {
            "instance_type": "ml.p3.2xlarge",
            "container": {"version": "0.20.0"},
            "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
            "hf_token_secret": "hf-token",
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16"},
        },
    ),
    # A 2:4 sparse FP8 checkpoint: vLLM 0.18.1 runs it on the 2:4 kernel (9.0 and up); 0.22.0 refuses its
    # sparsity_config ("Sparsity support has been removed from compressed-tensors").
    "SI205": (
        {
            "instance_type": "ml.p5.48xlarge",
            "container": {"version": "0.18.1"},
            "model": SPARSE_24_FP8_LLAMA,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096},
        },
        {
            "instance_type": "ml.p5.48xlarge",
            "container": {"version": "0.22.0"},
            "model": SPARSE_24_FP8_LLAMA,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096},
        },
    ),
    # int4 weights in the marlin-24 layout: W4A16Sparse24 up to vLLM 0.15.1, no scheme from 0.16.0.
    "SI206": (
        {
            "instance_type": "ml.g5.xlarge",
            "container": {"version": "0.15.1"},
            "model": {**SPARSE_24_FP8_LLAMA, "quantization_scheme": "w4a16_sparse24", "sparsity": None},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096, "dtype": "float16"},
        },
        {
            "instance_type": "ml.g5.xlarge",
            "container": {"version": "0.16.0"},
            "model": {**SPARSE_24_FP8_LLAMA, "quantization_scheme": "w4a16_sparse24", "sparsity": None},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096, "dtype": "float16"},
        },
    ),
    # SageMaker refused gpu-4-1 on ml.g5.12xlarge ("Invalid combination", aws/deep-learning-containers 2ec0bc190f).
    "SI215": (
        {**G5_QWEN14B, "inference_ami_version": "al2-ami-sagemaker-inference-gpu-3-1"},
        {**G5_QWEN14B, "inference_ami_version": "al2023-ami-sagemaker-inference-gpu-4-1"},
    ),
    # On ml.g5.2xlarge the image is only said to need g6 or newer (DLC dd5eb8e74b); AWS's docs pair them.
    "SI216": (
        {
            **G5_QWEN14B,
            "instance_type": "ml.g5.2xlarge",
            "model": {"id": "Qwen/Qwen3-8B"},
            "engine": {"tensor_parallel_size": 1, "max_model_len": 8192},
            "inference_ami_version": "al2-ami-sagemaker-inference-gpu-3-1",
        },
        {
            **G5_QWEN14B,
            "instance_type": "ml.g5.2xlarge",
            "model": {"id": "Qwen/Qwen3-8B"},
            "engine": {"tensor_parallel_size": 1, "max_model_len": 8192},
            "inference_ami_version": "al2023-ami-sagemaker-inference-gpu-4-1",
        },
    ),
    # vLLM's Mxfp4Config.get_min_capability() is 80 (vllm-project/vllm @ 007d5005); gpt-oss is MXFP4.
    "SI203": (
        {
            "instance_type": "ml.g6e.xlarge",
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096},
        },
        {
            "instance_type": "ml.g4dn.12xlarge",
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 4, "max_model_len": 4096},
        },
    ),
    # MXFP4 runs bfloat16 activations only (Mxfp4Config.get_supported_act_dtypes()).
    "SI203 activations": (
        {
            "instance_type": "ml.g6e.xlarge",
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096, "dtype": "bfloat16"},
        },
        {
            "instance_type": "ml.g6e.xlarge",
            "model": {"id": "openai/gpt-oss-20b"},
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "max_model_len": 4096, "dtype": "float16"},
        },
    ),
    "SI220": (
        {
            "instance_type": "ml.g4dn.12xlarge",
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
            "engine": {"dtype": "float16", "tensor_parallel_size": 4},
        },
        {
            "instance_type": "ml.g4dn.12xlarge",
            "model": {"id": "Qwen/Qwen3-8B"},
            "speculative": None,
            "engine": {"dtype": "bfloat16", "tensor_parallel_size": 4},
        },
    ),
    "SI300": ({}, {"instance_type": "ml.g6e.xlarge"}),
    "SI301": (
        {},
        {"model": {"id": "Qwen/Qwen3-8B"}, "speculative": {"model": "RedHatAI/Qwen3-8B-speculator.eagle3"}},
    ),
    "SI310": ({}, {"engine": {"tensor_parallel_size": 2}}),
    "SI311": ({**G5_QWEN14B}, {**G5_QWEN14B, "engine": {"tensor_parallel_size": 3}}),
    "SI312": ({**G5_QWEN14B}, {**G5_QWEN14B, "engine": {"tensor_parallel_size": 2}}),
    "SI314": (
        {"engine": {"pipeline_parallel_size": 1}},
        {
            "model": {**UNKNOWN_MISTRAL, "architecture": "Zamba2ForCausalLM", "model_type": "zamba2"},
            "speculative": None,
            "instance_type": "ml.g6e.12xlarge",
            "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2},
        },
    ),
    "SI313": (
        {**G5_QWEN14B, "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}},
        {**G5_QWEN14B, "engine": {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}},
    ),
    "SI320": ({}, {"engine": {"max_model_len": 50000}}),
    "SI321": (
        {"engine": {"max_model_len": 40960}, "environment": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}},
        {"engine": {"max_model_len": 40961}, "environment": {"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}},
    ),
    "SI330": (
        {"model": UNKNOWN_MISTRAL, "speculative": None},
        {"model": {"id": "acme/unknown-7b"}, "speculative": None},
    ),
    # The catalog's Qwen3-32B has 64 attention heads; a spec override of the KV heads must divide them.
    "SI331": ({"model": {"num_key_value_heads": 16}}, {"model": {"num_key_value_heads": 7}}),
    "SI331 window": ({"model": {"sliding_window_layers": 0}}, {"model": {"sliding_window_layers": 65}}),
    # An architecture no release registers loads through the Transformers backend, or not at all.
    "SI340": ({}, {"model": {"architecture": "AcmeForCausalLM"}}),
    "SI342": ({"engine": {"model_impl": "transformers"}}, {"engine": {"model_impl": "Transformers"}}),
    "SI341": (
        {"engine": {"model_impl": "vllm"}},
        {"model": {"architecture": "AcmeForCausalLM"}, "engine": {"model_impl": "vllm"}},
    ),
    "SI400": ({}, {"speculative": {"method": "eagle9"}}),
    # The reference spec serves max_model_len 4096.
    "SI416": ({"speculative": {"max_model_len": 4096}}, {"speculative": {"max_model_len": 4097}}),
    # An MTP draft reads the target's own config (Qwen3-32B: 40960 tokens); the variable lets it run past it.
    # The yuhuili EAGLE-3 head's config gives it 2048 positions; the reference container (0.15.1) does not
    # raise them to the target's max_model_len.
    "SI418": (
        {**_LLAMA_YUHUILI, "engine": {"max_model_len": 2048}},
        {**_LLAMA_YUHUILI, "engine": {"max_model_len": 2049}},
    ),
    "SI417": (
        {**_MTP_LONG, "speculative": {**_MTP_LONG["speculative"], "max_model_len": 40960}},
        {**_MTP_LONG, "speculative": {**_MTP_LONG["speculative"], "max_model_len": 40961}},
    ),
    # vLLM 0.14.x is the last to refuse a plain draft model; the first DLC after it is 0.15.1
    "SI400 refused": (
        {"speculative": {"method": "draft_model", "model": "Qwen/Qwen3-0.6B"}},
        {
            "container": {"version": "0.14.0"},
            "speculative": {"method": "draft_model", "model": "Qwen/Qwen3-0.6B"},
        },
    ),
    "SI401": ({}, {"model": UNKNOWN_MISTRAL, "speculative": {"model": "acme/mistral-eagle3"}}),
    "SI402": (
        {"container": {"version": "0.16.0"}, "speculative": {"parallel_drafting": True}},
        {"speculative": {"parallel_drafting": True}},
    ),
    "SI403": ({}, {"speculative": {"acceptance_boost": 2}}),
    "SI404": ({}, {"speculative": {"num_speculative_tokens": 0}}),
    # The reference's max_model_len is 4096: a step verifies k + 1 tokens of one sequence.
    "SI404 context": (
        {"speculative": {"num_speculative_tokens": 4095}},
        {"speculative": {"num_speculative_tokens": 4096}},
    ),
    "SI405": (
        {"speculative": {"draft_tensor_parallel_size": 1}},
        {"speculative": {"draft_tensor_parallel_size": 2}},
    ),
    "SI406": ({}, {"model": {"id": "Qwen/Qwen3-14B"}}),
    "SI407": ({}, {"speculative": {"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"}}),
    "SI408": (
        {"speculative": {"method": "ngram", "model": None, "prompt_lookup_max": 4}},
        {"speculative": {"method": "mtp", "model": None}},
    ),
    "SI409": ({}, {"speculative": {"method": "draft_model", "model": None}}),
    "SI410": ({}, {"speculative": {"model": "RedHatAI/Qwen3-32B-speculatr.eagle3"}}),
    "SI411": ({}, {"speculative": {"model": "acme/Qwen3-32B-draft-v2"}}),
    "SI412": (
        {"speculative": {"method": "ngram", "model": None, "prompt_lookup_max": 4}},
        {"speculative": {"prompt_lookup_max": 4}},
    ),
    "SI413": (
        {"speculative": {"method": "ngram", "model": None, "prompt_lookup_min": 2, "prompt_lookup_max": 4}},
        {"speculative": {"method": "ngram", "model": None, "prompt_lookup_min": 5, "prompt_lookup_max": 4}},
    ),
    "SI500": ({"engine": {"enable_prefix_caching": True}}, {"engine": {"enable_prefix_cach": True}}),
    "SI501": ({}, {"engine": {"model": "Qwen/Qwen3-32B"}}),
    "SI502": (
        {"engine": {"max_num_batched_tokens": 8192, "kv_cache_dtype": "fp8", "enforce_eager": False}},
        {"engine": {"seed": "8k"}},  # a plain int in every release: vLLM's int() refuses "8k"
    ),
    # vLLM's human_readable_int takes "8k" (8,000) and "8K" (8,192) but refuses decimals with binary
    # suffixes ("Decimals are not allowed with binary suffixes"): vllm/engine/arg_utils.py.
    "SI502 human-readable": (
        {"engine": {"max_num_batched_tokens": "8k"}},
        {"engine": {"max_num_batched_tokens": "1.5K"}},
    ),
    "SI502 finite": ({"engine": {"swap_space": "4.5"}}, {"engine": {"swap_space": "nan"}}),
    "SI502 infinite": ({"engine": {"swap_space": 1e308}}, {"engine": {"swap_space": "-inf"}}),
    "SI502 choices": ({"engine": {"kv_cache_dtype": "fp8_e5m2"}}, {"engine": {"kv_cache_dtype": "fp9"}}),
    "SI502 boolean": ({"engine": {"enforce_eager": True}}, {"engine": {"enforce_eager": "yes"}}),
    "SI510": (
        {"environment": {f"EXTRA_{i}": "x" for i in range(10)}},
        {"environment": {f"EXTRA_{i}": "x" for i in range(100)}},
    ),
    "SI510 nul": ({"environment": {"A": "a b"}}, {"environment": {"A": "a\0b"}}),
    "SI510 key": ({"environment": {"_has_underscore9": "x"}}, {"environment": {"has space": "x"}}),
    "SI511": (
        {"environment": {"VLLM_LOGGING_LEVEL": "INFO"}},
        {"environment": {"SM_VLLM_MAX_NUM_SEQS": "4096"}},
    ),
    "SI511 model": ({}, {"environment": {"HF_MODEL_ID": "Qwen/Qwen3-8B"}}),
    "SI511 speculative": ({}, {"environment": {"SM_VLLM_SPECULATIVE_CONFIG": "{}"}}),
    "SI511 lmi": (
        {**LMI_G6E, "environment": {"OPTION_TGI_COMPAT": "true"}},
        {**LMI_G6E, "environment": {"OPTION_MAX_ROLLING_BATCH_SIZE": "512"}},
    ),
    "SI511 lmi model": ({**LMI_G6E}, {**LMI_G6E, "environment": {"OPTION_MODEL_ID": "evil/model"}}),
    "SI511 lmi degree": ({**LMI_G6E}, {**LMI_G6E, "environment": {"TENSOR_PARALLEL_DEGREE": "8"}}),
    "SI511 lmi flag": ({**LMI_G6E}, {**LMI_G6E, "environment": {"OPTION_MAX_MODEL_LEN": "4096"}}),
    "SI511 lmi async mode": ({**LMI_G6E}, {**LMI_G6E, "environment": {"OPTION_ROLLING_BATCH": "vllm"}}),
    "SI530": (
        {"hf_token_secret": "hf-token"},
        {"environment": {"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz"}},
    ),
    "SI531": (
        {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "speculative": None, "hf_token_secret": "hf"},
        {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "speculative": None},
    ),
    "SI520": ({"engine": {"enable_lora": False}}, {"engine": {"enable_lora": True}}),
    "SI600": (
        {"scaling": {"min_capacity": 1, "max_capacity": 2}},
        {"scaling": {"min_capacity": 3, "max_capacity": 2}},
    ),
    # A schedule that sets only min_capacity keeps scaling.max_capacity (3) as the maximum.
    "SI600 schedule": (
        {
            "scaling": {
                "max_capacity": 3,
                "schedules": [{"name": "day", "schedule": "cron(0 8 * * ? *)", "min_capacity": 3}],
            }
        },
        {
            "scaling": {
                "max_capacity": 3,
                "schedules": [{"name": "day", "schedule": "cron(0 8 * * ? *)", "min_capacity": 4}],
            }
        },
    ),
    "SI601": (
        {"scaling": {"max_capacity": 2, "target_value": 8}},
        {"scaling": {"max_capacity": 2, "target_value": 0}},
    ),
    "SI602": ({"serving": "async"}, {"serving": "async", "container": {"framework": "lmi", "version": "20"}}),
    "SI602 batch-scaling": (
        {"serving": "batch", "instance_type": "ml.g6e.12xlarge"},
        {"serving": "batch", "instance_type": "ml.g6e.12xlarge", "scaling": {"max_capacity": 2}},
    ),
}

# Rules whose non-compliant input cannot be written as a spec against today's catalog data; they are
# tested below on a resolved deployment with the relevant fact changed (SI419, which only vLLM 0.33.0
# raises and no catalogued container ships yet: tests/rules/test_draft_limits_target.py).
SYNTHETIC = {"SI121", "SI202", "SI419"}


def codes_for(changes: dict[str, Any]) -> set[str]:
    return {f.code for f in check(deep_merge(REFERENCE_SPEC, changes)).findings}


@pytest.mark.parametrize("code", sorted(CASES))
def test_compliant(code):
    assert code.split()[0] not in codes_for(CASES[code][0])


@pytest.mark.parametrize("code", sorted(CASES))
def test_non_compliant(code):
    assert code.split()[0] in codes_for(CASES[code][1])


def test_every_rule_has_cases():
    registered = {r.code for r in all_rules()}
    assert registered == {code.split()[0] for code in CASES} | SYNTHETIC


def test_every_rule_documents_itself():
    for r in all_rules():
        assert r.title and r.rationale and r.name, r.code


def _resolved(**update: Any):
    return check(REFERENCE_SPEC).deployment.model_copy(update=update)


def test_si121_missing_vllm_flag_data():
    from speculative_infra.rules.container import vllm_release_data

    assert list(vllm_release_data(_resolved())) == []
    [violation] = vllm_release_data(_resolved(vllm_release=None))
    assert "no flag data for vLLM 0.15.1" in violation.message


def test_si202_gpu_older_than_vllm_supports():
    from speculative_infra.rules.gpu_support import vllm_min_compute_capability

    deployment = _resolved()
    assert list(vllm_min_compute_capability(deployment)) == []
    old_gpu = deployment.instance.gpu.model_copy(update={"compute_capability": "3.7"})
    old = deployment.model_copy(update={"instance": deployment.instance.model_copy(update={"gpu": old_gpu})})
    [violation] = vllm_min_compute_capability(old)
    assert "compute capability 3.7" in violation.message


def test_messages_name_value_and_allowed():
    findings = check(deep_merge(REFERENCE_SPEC, {"engine": {"tensor_parallel_size": 2}})).findings
    si310 = next(f for f in findings if f.code == "SI310")
    assert "tensor_parallel_size 2" in si310.message and "allowed: 1 to 1" in si310.message


def test_eagle3_target_fix_names_the_first_release_that_allows_it():
    findings = check(
        deep_merge(REFERENCE_SPEC, {"model": UNKNOWN_MISTRAL, "speculative": {"model": "acme/d"}})
    ).findings
    si401 = next(f for f in findings if f.code == "SI401")
    assert "'mistral'" in si401.message and si401.fix == "use vLLM 0.22.0 or newer, which allows this target"


@pytest.mark.parametrize(
    ("container", "refused"),
    [
        ({"framework": "vllm", "version": "0.11.0"}, True),
        ({"framework": "vllm", "version": "0.14.0"}, True),
        ({"framework": "vllm", "version": "0.15.1"}, False),
        ({"framework": "lmi", "version": "19"}, True),  # vLLM 0.14.0
        ({"framework": "lmi", "version": "20"}, False),  # vLLM 0.15.1
    ],
)
def test_draft_model_refused_up_to_vllm_0_14(container, refused):
    """vLLM 0.10.0-0.14.1 raise NotImplementedError("Speculative decoding with draft model is not supported
    yet") for a plain draft model (vllm#26547 on 0.11.0, vllm#31883 on 0.13.0); 0.15.0 runs it again."""
    spec = deep_merge(
        REFERENCE_SPEC,
        {"container": container, "speculative": {"method": "draft_model", "model": "Qwen/Qwen3-0.6B"}},
    )
    si400 = [f for f in check(spec).findings if f.code == "SI400"]
    assert bool(si400) is refused
    if refused:
        [finding] = si400
        assert (
            "'draft_model' is named by vLLM" in finding.message and "refused at start-up" in finding.message
        )
        assert finding.fix.startswith("use vLLM DLC 0.15.1 or newer, LMI v20 or newer, or a method")


def test_engine_arg_typo_suggests_the_flag():
    findings = check(deep_merge(REFERENCE_SPEC, {"engine": {"enable_prefix_cach": True}})).findings
    si500 = next(f for f in findings if f.code == "SI500")
    assert "enable_prefix_caching" in si500.message


def test_engine_arg_from_a_later_release_names_where_it_exists():
    findings = check(deep_merge(REFERENCE_SPEC, {"engine": {"enable_flashinfer_autotune": True}})).findings
    si500 = next(f for f in findings if f.code == "SI500")
    assert si500.message == (
        "engine.enable_flashinfer_autotune is not a flag of vLLM 0.15.1; it exists in vLLM 0.16.0 to 0.33.0"
    )
    later = check(
        deep_merge(
            REFERENCE_SPEC,
            {"container": {"version": "0.17.1"}, "engine": {"enable_flashinfer_autotune": True}},
        )
    )
    assert "SI500" not in {f.code for f in later.findings}


def test_memory_overflow_says_the_numbers():
    findings = check(deep_merge(REFERENCE_SPEC, {"instance_type": "ml.g6e.xlarge"})).findings
    si300 = next(f for f in findings if f.code == "SI300")
    assert "GiB" in si300.message and "weights" in si300.message and "ml.g6e.xlarge" in si300.message


def test_unknown_speculative_key_says_dropped_before_016():
    findings = check(deep_merge(REFERENCE_SPEC, {"speculative": {"acceptance_boost": 2}})).findings
    assert "silently drops it" in next(f for f in findings if f.code == "SI403").message
    findings = check(
        deep_merge(
            REFERENCE_SPEC, {"container": {"version": "0.16.0"}, "speculative": {"acceptance_boost": 2}}
        )
    ).findings
    assert "refuses to start" in next(f for f in findings if f.code == "SI403").message


@pytest.mark.parametrize(
    ("scaling", "expected"),
    [
        ({"max_capacity": 0, "min_capacity": 0}, "max_capacity is 0"),
        ({"max_capacity": 2, "min_capacity": 0}, "min_capacity is 0"),
        ({"max_capacity": 2, "metric": "invocations"}, "target_value is required"),
        (
            {
                "max_capacity": 2,
                "schedules": [{"name": "night", "schedule": "every night", "min_capacity": 1}],
            },
            "cron(...)",
        ),
    ],
)
def test_scaling_errors(scaling, expected):
    findings = check(deep_merge(REFERENCE_SPEC, {"scaling": scaling})).findings
    assert any(expected in f.message for f in findings if f.code.startswith("SI60"))


def test_fewer_gpus_per_copy_is_fine_for_inference_components():
    lmi = deep_merge(
        REFERENCE_SPEC,
        {
            **G5_QWEN14B,
            "container": {"framework": "lmi", "version": "20"},
            "engine": {"tensor_parallel_size": 2},
        },
    )
    assert "SI312" not in {f.code for f in check(lmi).findings}


def test_all_errors_reported_at_once():
    findings = check(
        deep_merge(
            REFERENCE_SPEC,
            {
                "engine": {"tensor_parallel_size": 2, "max_model_len": 50000},
                "speculative": {"num_speculative_tokens": 0},
            },
        )
    ).findings
    assert {"SI310", "SI320", "SI404"} <= {f.code for f in findings}
