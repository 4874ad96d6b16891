"""A resolved CloudFormation value (a string, or Ref / Fn::GetAtt / Fn::Join of them) as one string,
each reference written by the caller's own pattern (cdk-nag's ``<Logical.Attr>``, a dashboard's
``${Logical.Attr}``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def render_tokens(node: Any, *, ref: Callable[[str], str], getatt: Callable[[str, str], str]) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        ((key, arg),) = node.items()
        if key == "Ref":
            return ref(str(arg))
        if key == "Fn::GetAtt":
            return getatt(str(arg[0]), str(arg[1]))
        if key == "Fn::Join":
            return str(arg[0]).join(render_tokens(part, ref=ref, getatt=getatt) for part in arg[1])
    raise ValueError(f"cannot render {node!r}: only strings, Ref, Fn::GetAtt and Fn::Join are expected")
