#!/usr/bin/env python3
"""A separate CDK app that uses speculative-infra as an installed library (not from this checkout).

pip install speculative_infra-<version>-py3-none-any.whl
cdk synth          # or: python app.py
"""

from __future__ import annotations

import os

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from speculative_infra import EagleOptimizationJob, LmiInferenceComponent, SpeculativeVllmEndpoint

app = cdk.App(outdir=os.environ.get("CDK_OUTDIR", "cdk.out"))
stack = cdk.Stack(app, "ConsumerLlm", env=cdk.Environment(region="us-east-1"))

# A custom resource (its Lambda code must come from the installed wheel).
job = EagleOptimizationJob(
    stack,
    "DraftTraining",
    model_id="Qwen/Qwen3-8B",
    model_s3_uri="s3://consumer-models/qwen3-8b/",
    deployment_instance_type="ml.g6e.xlarge",
)
endpoint = SpeculativeVllmEndpoint(
    stack,
    "Chat",
    model_id="Qwen/Qwen3-8B",
    instance_type="ml.g6e.xlarge",
    engine={"max_model_len": 8192, "max_num_seqs": 32},
    speculative=job.as_speculative_config(num_speculative_tokens=3),
    scaling={"min_capacity": 1, "max_capacity": 2},
    benchmark={"concurrency": [1, 4]},  # a second custom resource, bundling the benchmark engine
)
endpoint.add_canary()  # a scheduled Lambda whose asset carries the engine and its prompts file
endpoint.add_dashboard()
LmiInferenceComponent(
    stack,
    "Batch",
    instance_type="ml.g5.12xlarge",
    model_id="Qwen/Qwen3-14B",
    lmi_version="20",
    engine={"max_model_len": 8192},
)
caller = lambda_.Function(
    stack,
    "Caller",
    runtime=lambda_.Runtime.PYTHON_3_13,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return event\n"),
)
endpoint.grant_invoke(caller)

app.synth()
