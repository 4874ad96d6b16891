"""Walking config dataclasses: vLLM's get_kwargs rules from a field's type hint."""

from __future__ import annotations

from typing import Any

from .release_index import ReleaseIndex
from .values import ArgType, ClassRef, ExtRef, TypeHint, Unknown


def compute_field_kwargs(ex: ReleaseIndex, name: str, hint: TypeHint) -> dict[str, Any]:
    """Static mirror of vLLM's ``_compute_kwargs`` for one dataclass field."""
    hints = flatten_hints(hint)
    if ex._feature("dict_subclass"):
        hints = [
            TypeHint("builtin", name="dict")
            if h.kind == "class" and h.cls is not None and ex.is_dict_subclass(h.cls)
            else h
            for h in hints
        ]
    kw: dict[str, Any] = {"default": Unknown("default"), "help": Unknown("help")}
    dataclass_hint = next(
        (h for h in hints if h.kind == "class" and isinstance(h.cls, ClassRef) and ex.is_dataclass(h.cls)),
        None,
    )
    kinds = {(h.kind, h.name) for h in hints}
    if dataclass_hint is not None:
        kw["type"] = ArgType("json")
    elif ex._feature("bool_str_none") and kinds == {("builtin", "bool"), ("builtin", "str"), ("none", "")}:
        kw["type"] = ArgType("str")
        kw["nargs"] = "?"
        kw["const"] = True
    elif contains(hints, "bool"):
        kw["action"] = ExtRef("argparse.BooleanOptionalAction")
    elif any(h.kind == "literal" for h in hints):
        kw.update(literal_to_kwargs(ex, hints))
    elif contains(hints, "tuple"):
        kw.update(collection_to_kwargs(ex, hints, "tuple"))
    elif contains(hints, "list"):
        kw.update(collection_to_kwargs(ex, hints, "list"))
    elif ex._feature("set_collection") and contains(hints, "set"):
        kw.update(collection_to_kwargs(ex, hints, "set"))
    elif contains(hints, "int"):
        # Some int fields are parsed as human-readable sizes ("16k"), chosen by name in arg_utils.
        kw["type"] = ArgType(ex.human_readable_fields().get(name, "int"))
    elif contains(hints, "float"):
        kw["type"] = ArgType("float")
    elif contains(hints, "dict") and (contains(hints, "str") or any(not_builtin(h) for h in hints)):
        kw["type"] = ArgType("json")  # union_dict_and_str: a JSON object, or a plain string
    elif contains(hints, "dict"):
        kw["type"] = ArgType("json")
    elif contains(hints, "str") or any(not_builtin(h) for h in hints):
        kw["type"] = ArgType("str")
    else:
        ex.warn(f"unsupported type hints for field {name}: {hints}")
        kw["type"] = ArgType("unknown")

    # A sequence of literals: the element type is a Literal -> choices from it
    elem = kw.pop("_elem_literal", None)
    if elem is not None:
        kw.update(literal_to_kwargs(ex, [elem]))

    # Optional[...] appends None to the choices (optional_type maps "None"/"" to None)
    if any(h.kind == "none" for h in hints) and not contains(hints, "bool") and kw.get("choices"):
        kw["choices"] = [*kw["choices"], None if ex._feature("choices_none_obj") else "None"]
    return kw


def flatten_hints(hint: TypeHint) -> list[TypeHint]:
    if hint.kind == "annotated":
        return flatten_hints(hint.args[0])
    if hint.kind == "union":
        out: list[TypeHint] = []
        for arg in hint.args:
            for h in flatten_hints(arg):
                if h not in out:
                    out.append(h)
        return out
    return [hint]


def contains(hints: list[TypeHint], name: str) -> bool:
    return any(h.kind in ("builtin", "generic") and h.name == name for h in hints)


def not_builtin(h: TypeHint) -> bool:
    if h.kind in ("class", "any", "unknown", "literal"):
        return True
    if h.kind == "generic":
        return h.name == ""
    return False


def literal_to_kwargs(ex: ReleaseIndex, hints: list[TypeHint]) -> dict[str, Any]:
    lit = next(h for h in hints if h.kind == "literal")
    options = list(lit.args)
    known = [o for o in options if not isinstance(o, Unknown)]
    option_kind = {bool: "bool", int: "int", float: "float", str: "str"}.get(
        type(known[0]) if known else str, "unknown"
    )
    kwarg = "metavar" if ex._feature("literal_metavar") and contains(hints, "str") else "choices"
    out: dict[str, Any] = {"type": ArgType(option_kind)}
    if len(known) != len(options):
        out[kwarg] = Unknown("literal member not statically known")
    else:
        out[kwarg] = sorted(options, key=lambda o: (str(type(o)), o))
    return out


def collection_to_kwargs(ex: ReleaseIndex, hints: list[TypeHint], origin: str) -> dict[str, Any]:
    h = next(h for h in hints if h.kind in ("builtin", "generic") and h.name == origin)
    args = list(h.args)
    if not args:
        return {"type": ArgType("unknown"), "nargs": "+"}
    elem = args[0]
    out: dict[str, Any] = {}
    if elem.kind == "union":
        elem = TypeHint("builtin", name="str")
    if elem.kind == "literal":
        out["_elem_literal"] = elem
        out["type"] = ArgType("str")
    else:
        out["type"] = hint_to_argtype(elem)
    ellipsis = any(a.kind == "ellipsis" for a in args)
    out["nargs"] = "+" if origin != "tuple" or ellipsis else len(args)
    return out


def hint_to_argtype(h: TypeHint) -> ArgType:
    if h.kind == "builtin" and h.name in ("int", "float", "str", "bool"):
        return ArgType(h.name)
    if h.kind in ("class", "any"):
        return ArgType("str")
    if h.kind == "builtin" and h.name == "dict":
        return ArgType("json")
    return ArgType("unknown")
