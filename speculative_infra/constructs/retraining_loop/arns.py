"""The ARNs the loop's permissions name: SageMaker resources by name or pattern, and its own state machine."""

from __future__ import annotations

from aws_cdk import ArnFormat, Stack
from constructs import Construct


def sagemaker_arn(scope: Construct, resource: str, name: str) -> str:
    """A SageMaker resource in the scope's stack (`name` may be a pattern such as `<prefix>-*` or `*`)."""
    return Stack.of(scope).format_arn(service="sagemaker", resource=resource, resource_name=name)


def state_machine_arn(scope: Construct, name: str) -> str:
    """The loop's own state machine, by its literal name (its ARN token would make the policy circular)."""
    return Stack.of(scope).format_arn(
        service="states",
        resource="stateMachine",
        resource_name=name,
        arn_format=ArnFormat.COLON_RESOURCE_NAME,
    )
