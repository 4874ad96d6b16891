"""Specific cdk-nag acknowledgments, attached where the finding arises and with the reason.

Uses aws-cdk-lib's own Validations API, so a user's app needs cdk-nag only if it runs the checks.
A finding on an IAM wildcard is named after the resource as cdk-nag prints it (tokens as
`<LogicalId.Attr>` and `<AWS::Partition>`); `nag_resource` renders a value that way.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Acknowledgment, Stack, Validations
from constructs import IConstruct

PACK = "AwsSolutions"


def nag_resource(scope: IConstruct, value: Any) -> str:
    """A resource ARN as cdk-nag prints it in finding ids."""
    return _render(Stack.of(scope).resolve(value))


def _render_parts(parts: list[Any], separator: str) -> str:
    return separator.join(_render(p) for p in parts)


def _render(node: Any) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        ((key, arg),) = node.items()
        if key == "Ref":
            return f"<{arg!s}>"
        if key == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if key == "Fn::Join":
            return _render_parts(arg[1], str(arg[0]))
    raise ValueError(f"cannot render {node!r} as a cdk-nag resource")


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
