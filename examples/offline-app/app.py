#!/usr/bin/env python3
"""Offline work with speculative decoding: a nightly batch transform job over a file of requests, and an
asynchronous endpoint that scales to zero between bursts. Synthesizes offline (no AWS account needed).

python app.py            # or: cdk synth
"""

from __future__ import annotations

import os

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from speculative_infra import AsyncInferenceOptions, BatchInference, SpeculativeVllmEndpoint

QWEN3_32B_EAGLE3 = {"model": "RedHatAI/Qwen3-32B-speculator.eagle3", "num_speculative_tokens": 4}


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir)
    stack = cdk.Stack(app, "OfflineLlm", env=cdk.Environment(region="us-west-2"))
    answers_key = kms.Key(stack, "AnswersKey", enable_key_rotation=True)

    # Every night at 02:00 UTC, and whenever a file lands under s3://my-requests/nightly/: Qwen3-32B with
    # EAGLE3 over OpenAI-Batch-style lines ({"custom_id": ..., "body": {"messages": [...]}}).
    # Batch transform offers no g7e: 4 x L40S (g6e.12xlarge), tensor parallel 4.
    BatchInference(
        stack,
        "Nightly",
        instance_type="ml.g6e.12xlarge",
        model_id="Qwen/Qwen3-32B",
        vllm_version="0.15.1",
        engine={"max_model_len": 4096, "max_num_seqs": 64, "tensor_parallel_size": 4},
        speculative=QWEN3_32B_EAGLE3,
        input_s3_uri="s3://my-requests/nightly/",
        output_s3_uri="s3://my-answers/nightly/",
        kms_key=answers_key,
        schedule="cron(0 2 * * ? *)",
        start_on_upload=True,
    )

    # The same requests on the DJL LMI container (vLLM async mode) on 4 x A10G, the pairing the reference
    # benchmark ran on g5 (the vLLM DLC did not start there). Started by StartExecution only.
    BatchInference(
        stack,
        "OnA10G",
        instance_type="ml.g5.12xlarge",
        model_id="Qwen/Qwen3-32B",
        lmi_version="20",
        engine={"max_model_len": 4096, "max_num_seqs": 64, "tensor_parallel_size": 4},
        speculative=QWEN3_32B_EAGLE3,
        input_s3_uri="s3://my-requests/nightly/",
        output_s3_uri="s3://my-answers/on-a10g/",
        kms_key=answers_key,
    )

    # Requests through InvokeEndpointAsync; answers in S3 and an SNS message; zero instances when idle.
    done = sns.Topic(
        stack,
        "AnswersReady",
        enforce_ssl=True,
        master_key=kms.Key(stack, "TopicKey", enable_key_rotation=True),
    )
    SpeculativeVllmEndpoint(
        stack,
        "OnDemand",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine={"max_model_len": 4096, "max_num_seqs": 64},
        speculative=QWEN3_32B_EAGLE3,
        scaling={"min_capacity": 0, "max_capacity": 2},
        async_inference=AsyncInferenceOptions(
            output_s3_uri="s3://my-answers/async/",
            input_s3_uri="s3://my-requests/async/",
            failure_s3_uri="s3://my-answers/async-failed/",
            success_topic=done,
            error_topic=done,
            kms_key=answers_key,
        ),
    )
    return app


if __name__ == "__main__":
    build_app(outdir=os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
