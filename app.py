#!/usr/bin/env python3
"""Example app: the reference deployment of the seed benchmark, synthesized offline by `make synth`.

The benchmark: "Speculative Decoding on SageMaker: 2.6x Faster with EAGLE3 on Blackwell" (Qwen3-32B,
LMI v20 and vLLM DLC 0.15.1 on g5.12xlarge, g6e.12xlarge and g7e.2xlarge).

No AWS account is needed: the stacks name only a region (or none, for the environment-agnostic one).
"""

from __future__ import annotations

import os

import aws_cdk as cdk

from speculative_infra import (
    EndpointLoadTest,
    InferenceComponentEndpoint,
    LmiInferenceComponent,
    SpeculativeVllmEndpoint,
)

QWEN3_32B_ENGINE = {
    "max_model_len": 4096,
    "enable_prefix_caching": True,
    "enable_chunked_prefill": True,
    "max_num_seqs": 64,
    "gpu_memory_utilization": 0.9,
    "dtype": "bfloat16",
    "tensor_parallel_size": 1,
}
QWEN3_32B_EAGLE3 = {
    "method": "eagle3",
    "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
    "num_speculative_tokens": 4,
}


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir)

    # The reference: Qwen3-32B on one RTX PRO 6000 (g7e.2xlarge), vLLM 0.15.1, EAGLE3 with 4 tokens.
    reference = cdk.Stack(app, "SpeculativeVllmReference", env=cdk.Environment(region="us-west-2"))
    eagle3 = SpeculativeVllmEndpoint(
        reference,
        "Qwen3Eagle3",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine=QWEN3_32B_ENGINE,
        speculative=QWEN3_32B_EAGLE3,
        scaling={"min_capacity": 1, "max_capacity": 4},
        # Measured after every deployment; a throughput below the gate rolls the deployment back.
        benchmark={"concurrency": [1, 8, 32], "min_output_throughput": 300},
    )
    # Watch it: a dashboard, a canary measuring tokens/s and acceptance every 5 minutes, and SLO alarms
    # (acceptance: 15% below what the post-deploy benchmark measured).
    eagle3.add_dashboard()
    eagle3.add_canary()
    eagle3.add_slo_alarms(
        {"p90_ttft_ms": 1000, "p90_tpot_ms": 40, "error_rate": 0.01, "min_tokens_per_chunk": "benchmark"},
        create_topic=True,
    )
    # Does scaling keep up when traffic triples? Runs on demand: `speculative-infra loadtest <StateMachineArn>`.
    EndpointLoadTest(
        reference,
        "LoadTest",
        target=eagle3,
        steps=[{"duration_s": 600, "request_rate": 1}, {"duration_s": 1200, "request_rate": 3}],
        slo={"ttft_ms": 1000},
    )
    # The same model without speculation: the baseline of the benchmark.
    SpeculativeVllmEndpoint(
        reference,
        "Qwen3Baseline",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine=QWEN3_32B_ENGINE,
    )

    # An environment-agnostic stack: the DLC account comes from a region mapping at deploy time.
    agnostic = cdk.Stack(app, "SpeculativeVllmAnyRegion")
    SpeculativeVllmEndpoint(
        agnostic,
        "Qwen3Small",
        model_id="Qwen/Qwen3-8B",
        instance_type="ml.g6e.xlarge",
        vllm_version="0.17.1",
        engine={"max_model_len": 8192, "max_num_seqs": 32},
        speculative={"model": "RedHatAI/Qwen3-8B-speculator.eagle3", "num_speculative_tokens": 3},
    )

    # The LMI path of the benchmark: Qwen3-32B on DJL LMI v20 (vLLM 0.15.1 async), 4 x L40S, as an
    # inference component; plus a small model that scales to zero copies (and instances) when idle.
    lmi = cdk.Stack(app, "LmiInferenceComponents", env=cdk.Environment(region="us-east-1"))
    shared = InferenceComponentEndpoint(
        lmi, "SharedG6e", instance_type="ml.g6e.12xlarge", min_instance_count=1, max_instance_count=2
    )
    LmiInferenceComponent(
        lmi,
        "Qwen3Lmi",
        endpoint=shared,
        model_id="Qwen/Qwen3-32B",
        lmi_version="20",
        tensor_parallel_degree=4,
        engine={k: v for k, v in QWEN3_32B_ENGINE.items() if k != "tensor_parallel_size"},
        scaling={"min_capacity": 1, "max_capacity": 2},
    )
    LmiInferenceComponent(
        lmi,
        "Qwen3SmallScaleToZero",
        instance_type="ml.g5.xlarge",
        model_id="Qwen/Qwen3-8B",
        lmi_version="20",
        engine={"max_model_len": 8192, "max_num_seqs": 32},
        scaling={"min_capacity": 0, "max_capacity": 2},
    )
    return app


if __name__ == "__main__":
    # `cdk synth` passes the output folder in CDK_OUTDIR; `python app.py` alone writes to cdk.out.
    build_app(outdir=os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
