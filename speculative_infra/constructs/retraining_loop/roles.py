"""The loop's IAM: the optimization job's role, PassRole to SageMaker, and what the state machine's role
needs beyond the statements its tasks add (keys, and the acknowledged wildcards)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from speculative_infra.constructs.execution_role import (
    acknowledge_execution_permissions,
    add_execution_permissions,
)
from speculative_infra.constructs.image import newest_lmi_container, repository_arn
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import sagemaker_log_group_arn, write_logs_statement
from speculative_infra.constructs.retraining_loop.arns import sagemaker_arn
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead
from speculative_infra.s3_uri import S3Location


def pass_role_to_sagemaker(role_arn: str) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        actions=["iam:PassRole"],
        resources=[role_arn],
        conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
    )


def job_role(
    scope: Construct, *, head: ServedEagleHead, target: S3Location, bucket: s3.IBucket, work: str
) -> iam.Role:
    """`JobRole` under `scope`, the optimization job's role: the target's weights, the heads, the cycle's
    dataset and output."""
    role = iam.Role(
        scope,
        "JobRole",
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description="speculative-infra EAGLE retraining job role",
    )
    lmi = newest_lmi_container()
    heads = S3Location(bucket=bucket.bucket_name, key=head.heads_prefix)
    add_execution_permissions(
        role, image_repository_arns=[repository_arn(scope, lmi)], model_data=[target, heads]
    )
    acknowledge_execution_permissions(role, [target, heads])
    role.add_to_policy(
        iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{work}*")])
    )
    role.add_to_policy(write_logs_statement([sagemaker_log_group_arn("*")]))
    acknowledge(
        role,
        "IAM5",
        "SageMaker names the job's log streams at run time under /aws/sagemaker/.",
        resource=sagemaker_log_group_arn("*"),
    )
    if bucket.encryption_key is not None:
        bucket.encryption_key.grant(role, "kms:Decrypt", "kms:GenerateDataKey")
    acknowledge(
        role,
        "IAM5",
        "The cycles' heads and datasets, under the loop's prefix only.",
        resource=bucket.arn_for_objects(f"{work}*"),
    )
    return role


def complete_machine_permissions(
    machine: sfn.StateMachine,
    *,
    endpoint: Any,
    prefix: str,
    bucket: s3.IBucket,
    work: str,
    functions: Sequence[lambda_.Function],
) -> None:
    """The keys the cycle uses, and the acknowledged wildcards of the state machine's role."""
    reason = (
        "Each cycle names its job, models, endpoint config and candidate endpoint after the loop's prefix and "
        "a cycle id; the served endpoint's config and model are named by CloudFormation (or an earlier "
        "cycle), so they are read by pattern; logging, X-Ray and PutMetricData accept no resource."
    )
    for resource in (
        sagemaker_arn(machine, "model", f"{prefix}-*"),
        sagemaker_arn(machine, "model", "*"),
        sagemaker_arn(machine, "endpoint-config", f"{prefix}-*"),
        sagemaker_arn(machine, "endpoint-config", "*"),
        sagemaker_arn(machine, "endpoint", f"{prefix}-*"),
        sagemaker_arn(machine, "endpoint", "*"),
        sagemaker_arn(machine, "optimization-job", f"{prefix}-*"),
        bucket.arn_for_objects(f"{work}*"),
        "*",
    ):
        acknowledge(machine, "IAM5", reason, resource=resource)
    # Keys: the endpoint's volume key is used again by the candidate and control endpoints (their config
    # copies it); a KMS-encrypted heads bucket is read and written by both functions and the job.
    if getattr(endpoint, "kms_key", None) is not None:
        endpoint.kms_key.grant(machine, "kms:CreateGrant", "kms:DescribeKey")
    if bucket.encryption_key is not None:
        for fn in functions:
            bucket.encryption_key.grant(fn, "kms:Decrypt", "kms:GenerateDataKey")
    for fn in functions:
        acknowledge(
            machine,
            "IAM5",
            "aws-cdk-lib's Lambda task may invoke any version of its own function (`<function arn>:*`).",
            resource=f"{fn.function_arn}:*",
        )
