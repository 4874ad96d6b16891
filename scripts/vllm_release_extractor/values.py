"""The symbolic values the interpreter computes with (references, recorded argparse actions, type hints)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Unknown:
    """A value the static reader cannot know (environment, plugins, runtime registries)."""

    why: str


@dataclass(frozen=True)
class ExtRef:
    """Something outside the vllm package: ``argparse.BooleanOptionalAction``, ``int``..."""

    qualname: str


@dataclass(frozen=True)
class ModRef:
    module: str


@dataclass(frozen=True)
class ClassRef:
    module: str
    name: str
    node: ast.ClassDef = field(compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class FuncRef:
    module: str
    name: str
    node: ast.FunctionDef | ast.Lambda = field(compare=False, hash=False, repr=False)
    owner: ClassRef | None = None


@dataclass(frozen=True)
class BoundMethod:
    func: FuncRef
    bound: Any  # the ClassRef for classmethods, None for staticmethods


@dataclass(frozen=True)
class SuperRef:
    owner: ClassRef
    cls: ClassRef


@dataclass(frozen=True)
class AliasRef:
    """A module-level assignment (``SpeculativeMethod = Literal[...]``), kept lazy."""

    module: str
    name: str
    expr: ast.expr = field(compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Registry:
    """A class-level name registry filled at import time (``ReasoningParserManager.reasoning_parsers``)."""

    cls: ClassRef
    attr: str


@dataclass(frozen=True)
class ArgType:
    """What an argparse ``type=`` callable converts to (int, float, str, json, bool, unknown)."""

    kind: str


@dataclass
class RecordedAction:
    option_strings: list[str]
    kwargs: dict[str, Any]
    where: str


class ParserObj:
    """Stands in for a ``FlexibleArgumentParser`` (and its argument groups)."""

    def __init__(self) -> None:
        self.actions: list[RecordedAction] = []


@dataclass(frozen=True)
class TypeHint:
    """kind: builtin|none|literal|generic|union|annotated|class|any|unknown|ellipsis.

    builtin/generic: ``name`` is the builtin origin (int, str, list, dict, ...).
    literal: ``args`` holds the literal values. class: ``cls`` is the class (or an
    ``ExtRef`` for classes outside vllm).
    """

    kind: str
    name: str = ""
    args: tuple[Any, ...] = ()
    cls: ClassRef | ExtRef | None = None


BUILTIN_TYPES = {"int", "float", "str", "bool", "bytes", "dict", "list", "tuple", "set",
                 "frozenset", "type", "object", "complex"}  # fmt: skip


TYPING_GENERIC_ALIASES = {
    "List": "list", "Dict": "dict", "Tuple": "tuple", "Set": "set", "FrozenSet": "frozenset",
    "Type": "type", "DefaultDict": "dict",
}  # fmt: skip


TYPING_MODULES = ("typing.", "typing_extensions.")


def typing_name(ref: Any) -> str | None:
    if isinstance(ref, ExtRef):
        for prefix in TYPING_MODULES:
            if ref.qualname.startswith(prefix):
                return ref.qualname[len(prefix) :]
    return None


def is_concrete(value: Any) -> bool:
    if isinstance(value, Unknown):
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(is_concrete(v) for v in value)
    if isinstance(value, dict):
        return all(is_concrete(k) and is_concrete(v) for k, v in value.items())
    return True


def is_plain(value: Any) -> bool:
    if isinstance(value, list | tuple | set | frozenset):
        return all(is_plain(v) for v in value)
    return isinstance(value, str | int | float | bool | type(None))
