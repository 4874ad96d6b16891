"""Specific cdk-nag acknowledgments, attached where the finding arises and with the reason.

Uses aws-cdk-lib's own Validations API, so a user's app needs cdk-nag only if it runs the checks.
A finding on an IAM wildcard is named after the resource as cdk-nag prints it (tokens as
`<LogicalId.Attr>` and `<AWS::Partition>`); `nag_resource` renders a value that way.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

from speculative_infra.constructs.cfn_tokens import render_tokens

PACK = "AwsSolutions"


def nag_resource(scope: IConstruct, value: Any) -> str:
    """A resource ARN as cdk-nag prints it in finding ids."""
    return render_tokens(
        Stack.of(scope).resolve(value),
        ref=lambda name: f"<{name}>",
        getatt=lambda res, attr: f"<{res}.{attr}>",
    )


def acknowledge(
    scope: IConstruct, rule: str, reason: str, *, resource: Any = None, action: str | None = None
) -> None:
    """Acknowledge one finding of `rule` on `scope` (and its children), optionally for one resource/action."""
    finding = rule
    if resource is not None:
        finding = f"{rule}[Resource::{nag_resource(scope, resource)}]"
    elif action is not None:
        finding = f"{rule}[Action::{action}]"
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{PACK}::{PACK}-{finding}", reason=reason))
