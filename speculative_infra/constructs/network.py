"""VPC configuration shared by the model constructs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct


def model_vpc_config(
    scope: Construct,
    vpc: ec2.IVpc | None,
    subnets: ec2.SubnetSelection | None,
    security_groups: Sequence[ec2.ISecurityGroup] | None,
) -> tuple[sagemaker.CfnModel.VpcConfigProperty | None, list[ec2.ISecurityGroup]]:
    """VpcConfig for a model (None without a VPC); creates a security group when none is given."""
    if vpc is None:
        return None, []
    groups = list(security_groups or [])
    if not groups:
        groups = [
            ec2.SecurityGroup(
                scope, "SecurityGroup", vpc=vpc, description="speculative-infra model containers"
            )
        ]
    selected = vpc.select_subnets(**({} if subnets is None else _subnet_kwargs(subnets)))
    config = sagemaker.CfnModel.VpcConfigProperty(
        security_group_ids=[g.security_group_id for g in groups], subnets=selected.subnet_ids
    )
    return config, groups


def _subnet_kwargs(selection: ec2.SubnetSelection) -> dict[str, Any]:
    keys = (
        "availability_zones",
        "one_per_az",
        "subnet_filters",
        "subnet_group_name",
        "subnets",
        "subnet_type",
    )
    return {k: getattr(selection, k) for k in keys if getattr(selection, k, None) is not None}
