"""Recorded argparse actions -> the flag records of the release data."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .argtypes import to_argtype
from .values import ClassRef, ExtRef, Unknown, is_plain

if TYPE_CHECKING:
    from .extractor import Extractor
    from .values import RecordedAction


NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version"}


def action_to_flag(ex: Extractor, rec: RecordedAction, stats: dict[str, int]) -> dict[str, Any] | None:
    opts = rec.option_strings
    if not opts or not all(o.startswith("-") for o in opts):
        return None  # positional (model_tag)
    kw = rec.kwargs
    longs = [o for o in opts if o.startswith("--")]
    name = longs[0] if longs else opts[0]
    dest = kw.get("dest")
    if not isinstance(dest, str):
        dest = name.lstrip("-").replace("-", "_")
    aliases = sorted(o for o in opts if o != name)

    action = kw.get("action")
    registry = ex.parser_action_registry()
    if action in registry and action is not None:
        action = registry[action]
    boolean = negatable = False
    negations: list[str] = []
    takes_value = True
    if isinstance(action, str):
        if action in ("store_true", "store_false"):
            boolean = True
        if action in NO_VALUE_ACTIONS:
            takes_value = False
    elif action is not None:
        if _is_boolean_optional(ex, action):
            boolean = negatable = True
            takes_value = False
            negations = [f"--no-{o[2:]}" for o in opts if o.startswith("--")]
            inverse = _inverse_prefixes(ex, action)
            for o in opts:
                for prefix, inv in inverse.items():
                    if o.startswith(prefix):
                        negations.append(inv + o[len(prefix) :])
        elif isinstance(action, ClassRef):
            takes_value = _custom_action_takes_value(action, kw)
        else:
            stats["unknown_action"] += 1
            ex.warn(f"{rec.where}: unknown action {action} for {name}")
    nargs = kw.get("nargs")
    if isinstance(nargs, Unknown):
        nargs = None
    if nargs == 0:
        takes_value = False

    choices_raw = kw.get("choices")
    choices: list[str] | None = None
    if choices_raw is not None:
        if isinstance(choices_raw, list | tuple | set) and all(is_plain(c) for c in choices_raw):
            choices = sorted({_choice_str(c) for c in choices_raw})
        else:
            stats["unknown_choices"] += 1
            ex.warn(f"{rec.where}: choices of {name} not statically known")

    if boolean:
        value_type = "bool"
    elif not takes_value:
        value_type = "bool" if not boolean and action in ("store_const", "count") else "unknown"
        if action == "count":
            value_type = "int"
    else:
        t = kw.get("type")
        value_type = "str" if t is None else to_argtype(ex, t).kind
        if value_type == "unknown":
            stats["unknown_type"] += 1
            ex.warn(f"{rec.where}: value type of {name} unknown ({t})")
    return {
        "name": name,
        "dest": dest,
        "takes_value": takes_value,
        "boolean": boolean,
        "negatable": negatable,
        "negations": sorted(set(negations)),
        "nargs": nargs if isinstance(nargs, int | str) else None,
        "choices": choices,
        "value_type": value_type,
        "aliases": aliases,
        "deprecated": kw.get("deprecated") is True,
    }


def _choice_str(c: Any) -> str:
    if c is None:
        return "None"
    if isinstance(c, bool):
        return str(c)
    return str(c)


def _is_boolean_optional(ex: Extractor, action: Any) -> bool:
    if isinstance(action, ExtRef):
        return action.qualname == "argparse.BooleanOptionalAction"
    if isinstance(action, ClassRef):
        return any(
            isinstance(b, ExtRef) and b.qualname == "argparse.BooleanOptionalAction"
            for klass in ex.class_mro(action)
            for b in ex.class_bases(klass)
        )
    return False


def _inverse_prefixes(ex: Extractor, action: Any) -> dict[str, str]:
    if not isinstance(action, ClassRef):
        return {}
    value = ex.class_attr(action, "_inverse_prefixes")
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    return {}


def _custom_action_takes_value(action: ClassRef, kw: dict[str, Any]) -> bool:
    if "nargs" in kw:
        return bool(kw["nargs"] != 0)
    for node in ast.walk(action.node):
        if isinstance(node, ast.keyword) and node.arg == "nargs" and isinstance(node.value, ast.Constant):
            return node.value.value != 0
    return True
