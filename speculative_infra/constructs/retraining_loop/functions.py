"""The loop's two Lambda functions, which do work and never wait: the dataset step
(lambda/retraining_dataset) and the measurement (lambda/retraining_evaluate, the benchmark engine)."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from constructs import Construct

from speculative_infra.constructs.custom_resource import handler_code, handler_function, stage_engine_handler
from speculative_infra.constructs.data_capture import CaptureDestination
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import INVOKE_ACTIONS, read_prefix_statements
from speculative_infra.s3_uri import S3Location


def dataset_function(
    scope: Construct, *, capture: CaptureDestination, bucket: s3.IBucket, work: str
) -> lambda_.Function:
    """`DatasetFunction`: reads the endpoint's captures, writes a cycle's dataset under `work`."""
    fn = handler_function(
        scope,
        "DatasetFunction",
        handler="retraining_dataset.handler.handler",
        description="EAGLE retraining dataset",
        timeout=Duration.minutes(15),
        memory_size=1024,
        code=handler_code("retraining_dataset"),
    )
    for statement in read_prefix_statements(capture.location):
        fn.add_to_role_policy(statement)
    fn.add_to_role_policy(iam.PolicyStatement(actions=["kms:Decrypt"], resources=[capture.kms_key.key_arn]))
    fn.add_to_role_policy(
        iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{work}*")])
    )
    return fn


def evaluate_function(
    scope: Construct, *, served_endpoint_arn: str, candidate_endpoints: str, bucket: s3.IBucket, work: str
) -> lambda_.Function:
    """`EvaluateFunction`: streams to the control and candidate endpoints (`candidate_endpoints`, a
    pattern) and reads the cycle's dataset."""
    fn = handler_function(
        scope,
        "EvaluateFunction",
        handler="retraining_evaluate.handler.handler",
        description="EAGLE retraining evaluation",
        timeout=Duration.minutes(15),
        memory_size=1769,
        code=lambda_.Code.from_asset(stage_engine_handler("retraining_evaluate")),
    )
    fn.add_to_role_policy(
        iam.PolicyStatement(actions=INVOKE_ACTIONS, resources=[served_endpoint_arn, candidate_endpoints])
    )
    work_location = S3Location(bucket=bucket.bucket_name, key=work)
    for statement in read_prefix_statements(work_location):
        fn.add_to_role_policy(statement)
    assert fn.role is not None
    acknowledge(
        fn.role,
        "IAM5",
        "The cycles' datasets, under the loop's prefix only.",
        resource=work_location.object_arn_pattern(Aws.PARTITION),
    )
    return fn


def acknowledge_function_wildcards(
    functions: Sequence[lambda_.Function],
    *,
    bucket: s3.IBucket,
    work: str,
    capture: CaptureDestination,
    candidate_endpoints: str,
) -> None:
    for fn in functions:
        assert fn.role is not None
        for resource in (
            bucket.arn_for_objects(f"{work}*"),
            capture.location.object_arn_pattern(Aws.PARTITION),
            candidate_endpoints,
        ):
            acknowledge(
                fn.role,
                "IAM5",
                "One cycle's objects under the loop's prefixes, and its candidate endpoints (named per cycle).",
                resource=resource,
            )
