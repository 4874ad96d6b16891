"""An argparse ``type=`` value (int, a vLLM helper, a lambda) mapped to the coarse value type the flag
tables record."""

from __future__ import annotations

import ast
from typing import Any

from .constants import SAFE_STR_METHODS
from .dataclass_fields import flatten_hints, hint_to_argtype
from .release_index import ReleaseIndex
from .values import ArgType, ExtRef, FuncRef


def to_argtype(ex: ReleaseIndex, value: Any) -> ArgType:
    """Map an argparse ``type=`` value to a coarse value type."""
    if isinstance(value, ArgType):
        return value
    if isinstance(value, ExtRef):
        return ArgType(
            {"int": "int", "float": "float", "str": "str", "bool": "bool", "json.loads": "json"}.get(
                value.qualname, "unknown"
            )
        )
    if isinstance(value, FuncRef):
        if isinstance(value.node, ast.Lambda):
            return _lambda_argtype(value.node)
        known = {
            "human_readable_int": "human_int",  # "16k" = 16,000; "16K" = 16,384
            "human_readable_int_or_auto": "human_int_or_auto",
            "union_dict_and_str": "json",
            "parse_reasoning_parser": "str",
        }
        if value.name in known:
            return ArgType(known[value.name])
        returns = value.node.returns
        if returns is not None:
            hint = ex.eval_type(returns, value.module)
            flat = [h for h in flatten_hints(hint) if h.kind != "none"]
            if len(flat) == 1:
                t = hint_to_argtype(flat[0])
                if flat[0].kind == "builtin" and flat[0].name in ("dict", "list"):
                    return ArgType("json")
                return t
        return ArgType("unknown")
    return ArgType("unknown")


def _lambda_argtype(node: ast.Lambda) -> ArgType:
    """``lambda s: s.lower().replace("-", "_")``: a chain of str methods on the argument."""
    params = [a.arg for a in node.args.args]
    body: ast.expr = node.body
    while isinstance(body, ast.Call) and isinstance(body.func, ast.Attribute):
        if body.func.attr not in SAFE_STR_METHODS - {"split", "startswith", "endswith", "join"}:
            return ArgType("unknown")
        body = body.func.value
    if body is not node.body and isinstance(body, ast.Name) and params and body.id == params[0]:
        return ArgType("str")
    return ArgType("unknown")
