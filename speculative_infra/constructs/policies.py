"""IAM statements the constructs share: read under an S3 prefix, SageMaker logs, invoke an endpoint."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam

from speculative_infra.s3_uri import S3Location

INVOKE_ACTIONS = ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"]


def sagemaker_log_group_arn(path: str) -> str:
    """ARN pattern of SageMaker's log groups under /aws/sagemaker/<path>."""
    return f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:/aws/sagemaker/{path}"


def write_logs_statement(log_group_arns: Sequence[str]) -> iam.PolicyStatement:
    return iam.PolicyStatement(
        actions=[
            "logs:CreateLogGroup",
            "logs:CreateLogStream",
            "logs:DescribeLogStreams",
            "logs:PutLogEvents",
        ],
        resources=list(log_group_arns),
    )


def read_prefix_statements(location: S3Location) -> list[iam.PolicyStatement]:
    """GetObject under the prefix, and ListBucket limited to it."""
    return [
        iam.PolicyStatement(actions=["s3:GetObject"], resources=[location.object_arn_pattern(Aws.PARTITION)]),
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[location.bucket_arn(Aws.PARTITION)],
            conditions={"StringLike": {"s3:prefix": [location.key_prefix_pattern()]}},
        ),
    ]


def grant_invoke(grantee: iam.IGrantable, resource_arns: Sequence[str]) -> iam.Grant:
    """InvokeEndpoint and InvokeEndpointWithResponseStream on exactly these resources."""
    return iam.Grant.add_to_principal(
        grantee=grantee, actions=INVOKE_ACTIONS, resource_arns=list(resource_arns)
    )
