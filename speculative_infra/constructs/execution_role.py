"""The SageMaker execution role: pull the image, write logs and metrics, read the model, use the key."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import (
    read_prefix_statements,
    sagemaker_log_group_arn,
    write_logs_statement,
)
from speculative_infra.s3_uri import S3Location


def create_execution_role(
    scope: Construct,
    construct_id: str,
    *,
    image_repository_arns: Sequence[str],
    model_data: Sequence[S3Location] = (),
    kms_key: kms.IKey | None = None,
    in_vpc: bool = False,
) -> iam.Role:
    role = iam.Role(
        scope,
        construct_id,
        assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
        description="SageMaker execution role created by speculative-infra",
    )
    add_execution_permissions(
        role,
        image_repository_arns=image_repository_arns,
        model_data=model_data,
        kms_key=kms_key,
        in_vpc=in_vpc,
    )
    acknowledge_execution_permissions(role, model_data)
    return role


def acknowledge_execution_permissions(role: iam.IRole, model_data: Sequence[S3Location] = ()) -> None:
    """Acknowledge, with reasons, the cdk-nag findings add_execution_permissions causes on a role we own."""
    acknowledge(
        role,
        "IAM5",
        "Only ecr:GetAuthorizationToken, cloudwatch:PutMetricData (limited to SageMaker namespaces by a "
        "condition) and, in a VPC, the EC2 network-interface actions SageMaker needs: none accepts a resource ARN.",
        resource="*",
    )
    for folder in LOG_GROUP_FOLDERS:
        acknowledge(
            role,
            "IAM5",
            "SageMaker names the log group after the endpoint or component, which CloudFormation names at "
            "deploy time; the pattern covers SageMaker's own log groups only.",
            resource=sagemaker_log_group_arn(f"{folder}/*"),
        )
    for location in model_data:
        acknowledge(
            role,
            "IAM5",
            "Objects under the model's S3 prefix only.",
            resource=location.object_arn_pattern(Aws.PARTITION),
        )


LOG_GROUP_FOLDERS = ("Endpoints", "InferenceComponents")


def add_execution_permissions(
    role: iam.IRole,
    *,
    image_repository_arns: Sequence[str],
    model_data: Sequence[S3Location] = (),
    kms_key: kms.IKey | None = None,
    in_vpc: bool = False,
) -> None:
    """Grant exactly what a SageMaker model container needs. Wildcards only where AWS allows no resource."""
    statements = []
    if image_repository_arns:  # an inference-component endpoint's role gets them as components attach
        statements.append(
            iam.PolicyStatement(
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=list(image_repository_arns),
            )
        )
    statements += [
        # GetAuthorizationToken and PutMetricData accept no resource ARN.
        iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"]),
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringLike": {"cloudwatch:namespace": ["/aws/sagemaker/*", "AWS/SageMaker"]}},
        ),
        write_logs_statement([sagemaker_log_group_arn(f"{folder}/*") for folder in LOG_GROUP_FOLDERS]),
    ]
    for location in model_data:
        statements += read_prefix_statements(location)
    if in_vpc:
        # SageMaker creates ENIs in the user's subnets; these EC2 actions accept no resource scoping.
        statements.append(
            iam.PolicyStatement(
                actions=[
                    "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeVpcs",
                ],
                resources=["*"],
            )
        )
    for statement in statements:
        role.add_to_principal_policy(statement)
    if kms_key is not None:
        kms_key.grant(role, "kms:CreateGrant", "kms:Decrypt", "kms:DescribeKey", "kms:GenerateDataKey")
