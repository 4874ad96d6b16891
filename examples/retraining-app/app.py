#!/usr/bin/env python3
"""Continuous EAGLE improvement: an endpoint that captures its traffic, a head served from SSM, and a
weekly retraining loop that promotes a new head only when it measures faster. Synthesizes offline.

python app.py            # or: cdk synth
"""

from __future__ import annotations

import os

import aws_cdk as cdk

from speculative_infra import (
    DataCaptureOptions,
    EagleOptimizationJob,
    EagleRetrainingLoop,
    ServedEagleHead,
    SpeculativeVllmEndpoint,
)

TARGET_WEIGHTS = "s3://my-models/qwen3-32b/"  # the optimization job reads the target from S3


def build_app(outdir: str | None = None) -> cdk.App:
    app = cdk.App(outdir=outdir)
    stack = cdk.Stack(app, "RetrainedLlm", env=cdk.Environment(region="us-west-2"))

    # The first head: trained on SageMaker's curated datasets (a long job: the stack does not wait).
    first = EagleOptimizationJob(
        stack,
        "FirstHead",
        model_id="Qwen/Qwen3-32B",
        model_s3_uri=TARGET_WEIGHTS,
        deployment_instance_type="ml.g7e.2xlarge",
        wait=False,
    )
    head = ServedEagleHead.from_job(stack, "ServedHead", first)
    endpoint = SpeculativeVllmEndpoint(
        stack,
        "Qwen3",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine={"max_model_len": 4096, "max_num_seqs": 64},
        speculative=head.speculative_config(num_speculative_tokens=4),
        data_capture=DataCaptureOptions(sampling_percentage=20),
    )
    endpoint.add_canary()
    alarms = endpoint.add_slo_alarms({"min_tokens_per_chunk": 2.0})
    EagleRetrainingLoop(
        stack,
        "Retraining",
        endpoint=endpoint,
        head=head,
        model_s3_uri=TARGET_WEIGHTS,
        schedule="rate(7 days)",
        start_on_alarm=alarms.acceptance_alarm,  # also retrain when acceptance drops
    )
    return app


if __name__ == "__main__":
    build_app(outdir=os.environ.get("CDK_OUTDIR", "cdk.out")).synth()
