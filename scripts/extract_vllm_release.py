#!/usr/bin/env python3
"""Extract per-release vLLM knowledge from vLLM's own released wheels.

For each vLLM version this script downloads the wheel (``pip download --no-deps
--only-binary=:all:``), hashes it, and reads the Python sources inside it *statically*
with :mod:`ast`. vLLM (and torch) are never imported.

What is extracted:

* every ``vllm serve`` flag: the serve parser is rebuilt by symbolically running
  ``make_arg_parser`` (found through ``vllm/entrypoints/cli/serve.py``), which calls
  ``FrontendArgs.add_cli_args`` and ``AsyncEngineArgs.add_cli_args`` (and thereby
  ``EngineArgs.add_cli_args``). ``get_kwargs(SomeConfig)`` is reproduced statically from
  the config dataclass's fields and type hints, following the same rules as vLLM's
  ``_compute_kwargs`` (bool -> ``BooleanOptionalAction``, ``Literal`` -> choices, ...).
* ``SpeculativeConfig``: field names, the values allowed for ``method``, the EAGLE3
  target allow-list (where one exists), and whether unknown keys are rejected.

Run ``python scripts/extract_vllm_release.py --all`` to regenerate
``speculative_infra/catalog/data/vllm/*.json`` and
``python scripts/extract_vllm_release.py --print-table`` to print the summary table.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import concurrent.futures
import contextlib
import copy
import hashlib
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXTRACTED_BY = "scripts/extract_vllm_release.py"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "speculative_infra" / "catalog" / "data" / "vllm"

# Every final vLLM release on PyPI from 0.10.0 through 0.33.0 (``pip index versions
# vllm``). Post releases and 4-part versions (0.10.1.1) are deliberately left out.
DEFAULT_VERSIONS: tuple[str, ...] = (
    "0.10.0", "0.10.1", "0.10.2",
    "0.11.0", "0.11.1", "0.11.2",
    "0.12.0", "0.13.0",
    "0.14.0", "0.14.1",
    "0.15.0", "0.15.1",
    "0.16.0", "0.17.0", "0.17.1",
    "0.18.0", "0.18.1",
    "0.19.0", "0.19.1",
    "0.20.0", "0.20.1", "0.20.2",
    "0.21.0", "0.22.0", "0.22.1",
    "0.23.0", "0.24.0", "0.25.0", "0.25.1",
    "0.26.0", "0.27.0", "0.27.1",
    "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)  # fmt: skip

# The process image the serve parser is built in: ``vllm serve ...`` on CPython 3.12
# (the SageMaker vLLM DLCs ship py312). Only used to decide ``if`` statements.
SIMULATED_ARGV = ["vllm", "serve"]
SIMULATED_PY = (3, 12, 0)

MAX_CALL_DEPTH = 12


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


# ---------------------------------------------------------------------------
# Source access
# ---------------------------------------------------------------------------


class SourceTree:
    """Read-only view of the ``vllm`` package sources (a wheel, or a mapping in tests)."""

    def __init__(self, reader: Callable[[str], str | None]) -> None:
        self._reader = reader
        self._text: dict[str, str | None] = {}
        self._ast: dict[str, ast.Module | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_mapping(cls, files: Mapping[str, str]) -> SourceTree:
        return cls(lambda path: files.get(path))

    @classmethod
    def from_zip(cls, zf: zipfile.ZipFile) -> SourceTree:
        names = set(zf.namelist())

        def read(path: str) -> str | None:
            if path not in names:
                return None
            return zf.read(path).decode("utf-8")

        return cls(read)

    def read(self, path: str) -> str | None:
        with self._lock:
            if path not in self._text:
                self._text[path] = self._reader(path)
            return self._text[path]

    def module_path(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if self.read(candidate) is not None:
                return candidate
        return None

    def is_module(self, module: str) -> bool:
        return module.startswith("vllm") and self.module_path(module) is not None

    def is_package(self, module: str) -> bool:
        path = self.module_path(module)
        return path is not None and path.endswith("/__init__.py")

    def module_ast(self, module: str) -> ast.Module | None:
        if module in self._ast:
            return self._ast[module]
        path = self.module_path(module)
        tree = None
        if path is not None:
            text = self.read(path)
            assert text is not None
            tree = ast.parse(text, filename=path)
        self._ast[module] = tree
        return tree


# ---------------------------------------------------------------------------
# Symbolic values
# ---------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------
# Type hints (static mirror of what typing.get_origin/get_args would give)
# ---------------------------------------------------------------------------


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


def _typing_name(ref: Any) -> str | None:
    if isinstance(ref, ExtRef):
        for prefix in TYPING_MODULES:
            if ref.qualname.startswith(prefix):
                return ref.qualname[len(prefix) :]
    return None


# ---------------------------------------------------------------------------
# The resolver / interpreter
# ---------------------------------------------------------------------------


class Extractor:
    """Static reader for one vLLM release."""

    def __init__(self, tree: SourceTree, version: str = "?") -> None:
        self.tree = tree
        self.version = version
        self.warnings: list[str] = []
        self._bindings: dict[str, dict[str, list[Any]]] = {}
        self._alias_stack: set[tuple[str, str]] = set()
        self._fields_cache: dict[tuple[str, str], list[tuple[str, TypeHint]]] = {}
        self._depth = 0
        self._action_registry: dict[Any, Any] = {}
        self._compute_features: dict[str, bool] = {}
        self.stats: dict[str, Any] = {}

    def warn(self, msg: str) -> None:
        self.warnings.append(f"{self.version}: {msg}")

    # -- module-level bindings ---------------------------------------------

    def _module_bindings(self, module: str) -> dict[str, list[Any]]:
        if module in self._bindings:
            return self._bindings[module]
        bindings: dict[str, list[Any]] = {}
        self._bindings[module] = bindings
        tree = self.tree.module_ast(module)
        if tree is None:
            return bindings
        self._collect_bindings(module, tree.body, bindings)
        return bindings

    def _collect_bindings(self, module: str, body: list[ast.stmt], out: dict[str, list[Any]]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                out.setdefault(stmt.name, []).append(ClassRef(module, stmt.name, stmt))
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                if isinstance(stmt, ast.FunctionDef):
                    out.setdefault(stmt.name, []).append(FuncRef(module, stmt.name, stmt))
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        out.setdefault(target.id, []).append(AliasRef(module, target.id, stmt.value))
            elif isinstance(stmt, ast.AnnAssign):
                if isinstance(stmt.target, ast.Name) and stmt.value is not None:
                    out.setdefault(stmt.target.id, []).append(AliasRef(module, stmt.target.id, stmt.value))
            elif isinstance(stmt, ast.ImportFrom):
                base = self._import_base(module, stmt)
                for alias in stmt.names:
                    if alias.name == "*":
                        out.setdefault("*", []).append(ModRef(base))
                        continue
                    out.setdefault(alias.asname or alias.name, []).append(("from", base, alias.name))
            elif isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        out.setdefault(alias.asname, []).append(("module", alias.name))
                    else:
                        top = alias.name.split(".")[0]
                        out.setdefault(top, []).append(("module", top))
            elif isinstance(stmt, ast.If):
                test = ast.unparse(stmt.test)
                if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    # Runtime view: the ``else`` branch is what the interpreter runs.
                    self._collect_bindings(module, stmt.orelse, out)
                else:
                    self._collect_bindings(module, stmt.body, out)
                    self._collect_bindings(module, stmt.orelse, out)
            elif isinstance(stmt, ast.Try):
                self._collect_bindings(module, stmt.body, out)
                for handler in stmt.handlers:
                    self._collect_bindings(module, handler.body, out)

    def _import_base(self, module: str, stmt: ast.ImportFrom) -> str:
        if not stmt.level:
            return stmt.module or ""
        parts = module.split(".")
        if not self.tree.is_package(module):
            parts = parts[:-1]
        if stmt.level > 1:
            parts = parts[: -(stmt.level - 1)]
        return ".".join(parts + ([stmt.module] if stmt.module else []))

    def lookup(self, module: str, name: str, _seen: frozenset[tuple[str, str]] = frozenset()) -> Any:
        """Resolve ``name`` in ``module`` globals to a symbolic reference."""
        if (module, name) in _seen:
            return Unknown(f"import cycle {module}.{name}")
        seen = _seen | {(module, name)}
        if not self.tree.is_module(module):
            return ExtRef(f"{module}.{name}" if module else name)
        if (module, name) == ("vllm.platforms", "current_platform"):
            # Resolved lazily at runtime (module __getattr__); we simulate an NVIDIA GPU host.
            for cls_name in ("NvmlCudaPlatform", "CudaPlatform", "CudaPlatformBase"):
                found = self.lookup("vllm.platforms.cuda", cls_name, seen)
                if isinstance(found, ClassRef):
                    return found
        bindings = self._module_bindings(module)
        if name in bindings:
            return self._binding_value(bindings[name][-1], seen)
        for star in bindings.get("*", []):
            found = self.lookup(star.module, name, seen)
            if not isinstance(found, Unknown | ExtRef) or (
                isinstance(found, ExtRef) and not self.tree.is_module(star.module)
            ):
                return found
        if self.tree.is_module(f"{module}.{name}"):
            return ModRef(f"{module}.{name}")
        return Unknown(f"{module}.{name} not found")

    def _binding_value(self, binding: Any, seen: frozenset[tuple[str, str]]) -> Any:
        if isinstance(binding, tuple):
            if binding[0] == "module":
                mod = binding[1]
                return ModRef(mod) if self.tree.is_module(mod) else ExtRef(mod)
            _, base, attr = binding
            if self.tree.is_module(base):
                if self.tree.is_module(f"{base}.{attr}"):
                    bindings = self._module_bindings(base)
                    if attr not in bindings:
                        return ModRef(f"{base}.{attr}")
                return self.lookup(base, attr, seen)
            return ExtRef(f"{base}.{attr}")
        return binding

    def resolve_global(self, module: str, name: str) -> Any:
        value = self.lookup(module, name)
        if isinstance(value, Unknown) and hasattr(builtins, name):
            return ExtRef(name)  # a builtin: int, list, sorted, super, ...
        return value

    # -- classes -------------------------------------------------------------

    def class_bases(self, cls: ClassRef) -> list[Any]:
        # a generic base (``dict[str, X]``, ``Generic[T]``) counts as its origin
        return [
            self.eval_static(base.value if isinstance(base, ast.Subscript) else base, cls.module)
            for base in cls.node.bases
        ]

    def class_mro(self, cls: ClassRef) -> list[ClassRef]:
        """A simple depth-first, left-to-right linearisation (enough for vLLM's classes)."""
        out: list[ClassRef] = []

        def visit(c: ClassRef) -> None:
            if c in out:
                return
            out.append(c)
            for base in self.class_bases(c):
                if isinstance(base, ClassRef):
                    visit(base)

        visit(cls)
        return out

    def class_attr(self, cls: ClassRef, name: str, start_after: ClassRef | None = None) -> Any:
        mro = self.class_mro(cls)
        if start_after is not None and start_after in mro:
            mro = mro[mro.index(start_after) + 1 :]
        for klass in mro:
            for stmt in klass.node.body:
                if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                    func = FuncRef(klass.module, stmt.name, stmt, owner=klass)
                    decorators = {ast.unparse(d) for d in stmt.decorator_list}
                    if "staticmethod" in decorators:
                        return BoundMethod(func, None)
                    if "classmethod" in decorators:
                        return BoundMethod(func, cls)
                    return func
                value: ast.expr | None = None
                if isinstance(stmt, ast.Assign):
                    if any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                        value = stmt.value
                elif isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == name:
                    value = stmt.value
                if value is not None:
                    if self._is_registry(klass, name, value):
                        return Registry(klass, name)
                    return self.eval_static(value, klass.module)
        return Unknown(f"{cls.name}.{name}")

    def _is_registry(self, cls: ClassRef, name: str, value: ast.expr) -> bool:
        """An empty class-level dict that the class's own methods fill (``cls.x[key] = ...``)."""
        if not (isinstance(value, ast.Dict) and not value.keys):
            return False
        for node in ast.walk(cls.node):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and ast.unparse(t.value) in (f"cls.{name}", f"{cls.name}.{name}")
                for t in node.targets
            ):
                return True
        return False

    def registry_keys(self, registry: Registry) -> list[str] | Unknown:
        """Names registered with ``@Manager.register_module("name")`` by the modules that the
        registry's package imports (its ``__init__``, transitively within the package)."""
        package = registry.cls.module.rsplit(".", 1)[0]
        if not self.tree.is_package(package):
            return Unknown(f"registry {registry.cls.name}.{registry.attr}")
        todo, seen = [package], set()
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            tree = self.tree.module_ast(module)
            if tree is None:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = self._import_base(module, node)
                    candidates = [base] + [f"{base}.{a.name}" for a in node.names]
                    todo.extend(c for c in candidates if c.startswith(package) and self.tree.is_module(c))
        names: list[str] = []
        for module in sorted(seen):
            tree = self.tree.module_ast(module)
            if tree is None:
                continue
            for node in ast.walk(tree):
                if not (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func) == f"{registry.cls.name}.register_module"
                ):
                    continue
                arg = (
                    node.args[0]
                    if node.args
                    else next((k.value for k in node.keywords if k.arg == "name"), None)
                )
                value = None if arg is None else Interp(self, module, {}, None).eval(arg)
                if isinstance(value, str):
                    names.append(value)
                elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
                    names.extend(value)
                else:
                    return Unknown(f"registration {ast.unparse(node)}")
        return sorted(set(names))

    def _decorator_names(self, cls: ClassRef) -> list[tuple[Any, ast.expr]]:
        out = []
        for dec in cls.node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            out.append((self.eval_static(target, cls.module), dec))
        return out

    def is_dataclass(self, cls: ClassRef) -> bool:
        for klass in self.class_mro(cls):
            for ref, _ in self._decorator_names(klass):
                if isinstance(ref, ExtRef) and ref.qualname in (
                    "dataclasses.dataclass",
                    "pydantic.dataclasses.dataclass",
                ):
                    return True
                if isinstance(ref, FuncRef) and "dataclass(" in ast.unparse(ref.node):
                    # vLLM's ``@config`` decorator (newer releases wrap pydantic's dataclass)
                    return True
        return False

    def is_enum(self, cls: ClassRef | ExtRef) -> bool:
        if isinstance(cls, ExtRef):
            return cls.qualname.startswith("enum.")
        for base in self.class_bases(cls):
            if isinstance(base, ExtRef) and base.qualname.startswith("enum."):
                return True
            if isinstance(base, ClassRef) and self.is_enum(base):
                return True
        return False

    def class_bases_ext(self, cls: ClassRef) -> set[str]:
        names: set[str] = set()
        for klass in self.class_mro(cls):
            for base in self.class_bases(klass):
                if isinstance(base, ExtRef):
                    names.add(base.qualname)
        return names

    def is_dict_subclass(self, cls: ClassRef | ExtRef) -> bool:
        if isinstance(cls, ExtRef):
            return False
        ext = self.class_bases_ext(cls)
        if any(q.endswith("TypedDict") for q in ext):
            return False
        return "dict" in ext

    def enum_values(self, cls: ClassRef) -> list[Any] | Unknown:
        values: list[Any] = []
        for stmt in cls.node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Name) and not target.id.startswith("_"):
                    if isinstance(stmt.value, ast.Constant):
                        values.append(stmt.value.value)
                    else:
                        return Unknown(f"non-constant enum member {cls.name}.{target.id}")
        return values

    def dataclass_fields(self, cls: ClassRef) -> list[tuple[str, TypeHint]]:
        """``dataclasses.fields(cls)``: (name, type hint) in definition order, bases first."""
        key = (cls.module, cls.name)
        if key in self._fields_cache:
            return self._fields_cache[key]
        ordered: dict[str, TypeHint] = {}
        for klass in reversed(self.class_mro(cls)):
            if not self.is_dataclass(klass):
                continue
            for stmt in klass.node.body:
                if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                    continue
                ann = ast.unparse(stmt.annotation)
                if ann.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
                    continue
                if ann in ("KW_ONLY", "dataclasses.KW_ONLY"):
                    continue
                ordered[stmt.target.id] = self.eval_type(stmt.annotation, klass.module)
        result = list(ordered.items())
        self._fields_cache[key] = result
        return result

    # -- type hints ------------------------------------------------------------

    def eval_type(self, node: ast.expr, module: str) -> TypeHint:
        if isinstance(node, ast.Constant):
            if node.value is None:
                return TypeHint("none")
            if node.value is Ellipsis:
                return TypeHint("ellipsis")
            if isinstance(node.value, str):
                # A forward reference: at runtime typing keeps it as ``ForwardRef`` (inside
                # Optional/Union) -- a non-builtin, non-dataclass type for get_kwargs.
                return TypeHint("class", cls=ExtRef("typing.ForwardRef"))
            return TypeHint("unknown", repr(node.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return TypeHint(
                "union", args=(self.eval_type(node.left, module), self.eval_type(node.right, module))
            )
        if isinstance(node, ast.Name | ast.Attribute):
            return self._type_from_ref(self.eval_static(node, module), ast.unparse(node))
        if isinstance(node, ast.Subscript):
            origin = self.eval_static(node.value, module)
            elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            tname = _typing_name(origin)
            if tname == "Literal":
                values: list[Any] = []
                for elt in elts:
                    values.extend(self._literal_values(elt, module))
                return TypeHint("literal", args=tuple(values))
            if tname == "Optional":
                return TypeHint("union", args=(self.eval_type(elts[0], module), TypeHint("none")))
            if tname == "Union":
                return TypeHint("union", args=tuple(self.eval_type(e, module) for e in elts))
            if tname == "Annotated" or (
                isinstance(origin, ExtRef)
                and origin.qualname.startswith("pydantic")
                and origin.qualname.endswith("SkipValidation")
            ):
                # pydantic's SkipValidation[X] is Annotated[X, SkipValidation()] at runtime
                return TypeHint("annotated", args=(self.eval_type(elts[0], module),))
            args = tuple(self.eval_type(e, module) for e in elts)
            if isinstance(origin, ExtRef) and origin.qualname in BUILTIN_TYPES:
                return TypeHint("generic", name=origin.qualname, args=args)
            if tname in TYPING_GENERIC_ALIASES:
                return TypeHint("generic", name=TYPING_GENERIC_ALIASES[tname], args=args)
            base = self._type_from_ref(origin, ast.unparse(node.value))
            if base.kind == "class":
                # e.g. Mapping[str, int] / Callable[...]: typing generic of a non-builtin
                return TypeHint("generic", name="", args=args, cls=base.cls)
            return TypeHint("unknown", ast.unparse(node))
        return TypeHint("unknown", ast.unparse(node))

    def _literal_values(self, node: ast.expr, module: str) -> list[Any]:
        if isinstance(node, ast.Constant):
            return [node.value]
        hint = self.eval_type(node, module)
        if hint.kind == "literal":
            return list(hint.args)
        self.warn(f"cannot read Literal member {ast.unparse(node)} in {module}")
        return [Unknown(ast.unparse(node))]

    def _type_from_ref(self, ref: Any, text: str) -> TypeHint:
        if isinstance(ref, ExtRef):
            q = ref.qualname
            if q in BUILTIN_TYPES:
                return TypeHint("builtin", name=q)
            if q == "None":
                return TypeHint("none")
            tname = _typing_name(ref)
            if tname == "Any":
                return TypeHint("any")
            if tname in TYPING_GENERIC_ALIASES:
                return TypeHint("builtin", name=TYPING_GENERIC_ALIASES[tname])
            return TypeHint("class", cls=ref)
        if isinstance(ref, ClassRef):
            return TypeHint("class", cls=ref)
        if isinstance(ref, AliasRef):
            key = (ref.module, ref.name)
            if key in self._alias_stack:
                return TypeHint("unknown", text)
            self._alias_stack.add(key)
            try:
                value = ref.expr
                # ``X = TypeAliasType("X", Literal[...])`` / ``NewType``: unwrap
                if isinstance(value, ast.Call):
                    fname = ast.unparse(value.func)
                    if (fname.endswith("TypeAliasType") and len(value.args) >= 2) or (
                        fname.endswith("NewType") and len(value.args) >= 2
                    ):
                        value = value.args[1]
                    elif fname.endswith("TypeVar"):
                        return TypeHint("any")
                return self.eval_type(value, ref.module)
            finally:
                self._alias_stack.discard(key)
        return TypeHint("unknown", text)

    def concrete_alias(self, ref: Any) -> Any:
        """A module constant (``FOO = "bar"``) as its value; type aliases stay references."""
        if not isinstance(ref, AliasRef):
            return ref
        key = (ref.module, ref.name)
        if key in self._alias_stack:
            return ref
        self._alias_stack.add(key)
        try:
            value = Interp(self, ref.module, {}, owner=None).eval(ref.expr)
        finally:
            self._alias_stack.discard(key)
        if isinstance(value, ModRef):
            return value
        if _plain(value) or (isinstance(value, dict) and is_concrete(value) and _plain(list(value))):
            return copy.deepcopy(value)
        return ref

    # -- static value evaluation (module-level, no locals) -----------------

    def eval_static(self, node: ast.expr, module: str) -> Any:
        return Interp(self, module, {}, owner=None).eval(node)

    # -- get_kwargs -----------------------------------------------------------

    def _feature(self, name: str) -> bool:
        if not self._compute_features:
            text = self.tree.read("vllm/engine/arg_utils.py") or ""
            self._compute_features = {
                "literal_metavar": '"metavar" if contains_type(type_hints, str)' in text,
                "bool_str_none": "type_hints == {bool, str, type(None)}" in text,
                "dict_subclass": "is_dict_subclass(th)" in text,
                "set_collection": "contains_type(type_hints, set)" in text,
                "choices_none_obj": '["choices"].append(None)' in text,
            }
        return self._compute_features[name]

    def get_kwargs(self, cls: Any) -> dict[str, dict[str, Any]] | Unknown:
        if not isinstance(cls, ClassRef):
            return Unknown(f"get_kwargs({cls})")
        if not self.is_dataclass(cls):
            self.warn(f"get_kwargs on non-dataclass {cls.name}")
        return {name: compute_field_kwargs(self, name, hint) for name, hint in self.dataclass_fields(cls)}

    # -- argparse action registry ------------------------------------------------

    def parser_action_registry(self) -> dict[Any, Any]:
        """``self.register("action", A, B)`` calls in ``FlexibleArgumentParser.__init__``."""
        if self._action_registry:
            return self._action_registry
        registry: dict[Any, Any] = {"_": None}
        for module in ("vllm.utils.argparse_utils", "vllm.utils"):
            cls = self.lookup(module, "FlexibleArgumentParser")
            if not isinstance(cls, ClassRef):
                continue
            for stmt in ast.walk(cls.node):
                if (
                    isinstance(stmt, ast.Call)
                    and isinstance(stmt.func, ast.Attribute)
                    and stmt.func.attr == "register"
                    and len(stmt.args) == 3
                    and isinstance(stmt.args[0], ast.Constant)
                    and stmt.args[0].value == "action"
                ):
                    src = self.eval_static(stmt.args[1], cls.module)
                    dst = self.eval_static(stmt.args[2], cls.module)
                    registry[src] = dst
            break
        self._action_registry = registry
        return registry


def compute_field_kwargs(ex: Extractor, name: str, hint: TypeHint) -> dict[str, Any]:
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
        kw["type"] = ArgType("int")
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


def literal_to_kwargs(ex: Extractor, hints: list[TypeHint]) -> dict[str, Any]:
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


def collection_to_kwargs(ex: Extractor, hints: list[TypeHint], origin: str) -> dict[str, Any]:
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


# ---------------------------------------------------------------------------
# A small interpreter for the add_cli_args / make_arg_parser functions
# ---------------------------------------------------------------------------


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


SAFE_STR_METHODS = {"replace", "join", "lower", "upper", "strip", "lstrip", "rstrip", "split",
                    "startswith", "endswith", "removeprefix", "removesuffix", "format"}  # fmt: skip
SAFE_LIST_METHODS = {"append", "extend", "remove", "insert", "copy", "index", "count", "pop", "sort"}
SAFE_DICT_METHODS = {"items", "keys", "values", "get", "pop", "update", "copy", "setdefault"}


def is_concrete(value: Any) -> bool:
    if isinstance(value, Unknown):
        return False
    if isinstance(value, list | tuple | set | frozenset):
        return all(is_concrete(v) for v in value)
    if isinstance(value, dict):
        return all(is_concrete(k) and is_concrete(v) for k, v in value.items())
    return True


_COMPARE_OPS: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: bool(a == b),
    ast.NotEq: lambda a, b: bool(a != b),
    ast.Lt: lambda a, b: bool(a < b),
    ast.LtE: lambda a, b: bool(a <= b),
    ast.Gt: lambda a, b: bool(a > b),
    ast.GtE: lambda a, b: bool(a >= b),
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}


class Interp:
    """Runs a function body over symbolic values; anything unmodelled becomes ``Unknown``."""

    def __init__(self, ex: Extractor, module: str, local: dict[str, Any], owner: ClassRef | None,
                 cls_binding: ClassRef | None = None) -> None:  # fmt: skip
        self.ex = ex
        self.module = module
        self.local = local
        self.owner = owner
        self.cls_binding = cls_binding

    # -- statements -----------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.exec(stmt)

    def exec(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Expr):
            if not isinstance(stmt.value, ast.Constant):
                self.eval(stmt.value)
        elif isinstance(stmt, ast.Assign):
            value = self.eval(stmt.value)
            for target in stmt.targets:
                self.assign(target, value)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.eval(stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            current = self.eval(stmt.target)
            value = self.binop(stmt.op, current, self.eval(stmt.value))
            if isinstance(stmt.op, ast.Add) and isinstance(current, list) and isinstance(value, list):
                current[:] = value  # in-place like list.__iadd__
                value = current
            self.assign(stmt.target, value)
        elif isinstance(stmt, ast.Return):
            raise _Return(self.eval(stmt.value) if stmt.value is not None else None)
        elif isinstance(stmt, ast.If):
            test = self.truth(self.eval(stmt.test))
            if test is None:
                self.ex.warn(f"{self.module}:{stmt.lineno}: undecidable `if {ast.unparse(stmt.test)}`"
                             " - running both branches")  # fmt: skip
                self.run(stmt.body)
                self.run(stmt.orelse)
            elif test:
                self.run(stmt.body)
            else:
                self.run(stmt.orelse)
        elif isinstance(stmt, ast.For):
            iterable = self.eval(stmt.iter)
            if isinstance(iterable, Unknown) or not hasattr(iterable, "__iter__"):
                self.ex.warn(f"{self.module}:{stmt.lineno}: cannot iterate {ast.unparse(stmt.iter)}")
                return
            for item in list(iterable):
                self.assign(stmt.target, item)
                self.run(stmt.body)
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript):
                    container = self.eval(target.value)
                    key = self.eval(target.slice)
                    if isinstance(container, dict | list) and is_concrete(key):
                        try:
                            del container[key]
                        except (KeyError, IndexError):
                            self.ex.warn(f"{self.module}:{stmt.lineno}: del of missing key {key!r}")
        elif isinstance(stmt, ast.ImportFrom):
            base = self.ex._import_base(self.module, stmt)
            for alias in stmt.names:
                self.local[alias.asname or alias.name] = self.ex._binding_value(
                    ("from", base, alias.name), frozenset()
                )
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                mod = alias.name if alias.asname else alias.name.split(".")[0]
                self.local[alias.asname or mod] = ModRef(mod) if self.ex.tree.is_module(mod) else ExtRef(mod)
        elif isinstance(stmt, ast.Try):
            self.run(stmt.body)
            self.run(stmt.finalbody)
        elif isinstance(stmt, ast.With):
            self.run(stmt.body)
        elif isinstance(stmt, ast.FunctionDef):
            self.local[stmt.name] = FuncRef(self.module, stmt.name, stmt)
        elif isinstance(stmt, ast.Pass | ast.Assert | ast.Raise | ast.Global | ast.Nonlocal):
            pass
        else:
            self.ex.warn(f"{self.module}:{stmt.lineno}: unsupported statement {type(stmt).__name__}")

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.local[target.id] = value
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value)
            key = self.eval(target.slice)
            if (isinstance(container, dict) and is_concrete(key)) or (
                isinstance(container, list) and isinstance(key, int)
            ):
                container[key] = value
            elif not isinstance(container, Unknown):
                self.ex.warn(f"{self.module}: cannot assign into {ast.unparse(target)}")
        elif isinstance(target, ast.Tuple | ast.List):
            if isinstance(value, tuple | list) and len(value) == len(target.elts):
                for elt, item in zip(target.elts, value, strict=True):
                    self.assign(elt, item)
            else:
                for elt in target.elts:
                    self.assign(elt, Unknown("unpack"))
        elif isinstance(target, ast.Attribute):
            pass  # parser.epilog = ..., self.x = ...: irrelevant to the flag set

    # -- expressions --------------------------------------------------------------

    def truth(self, value: Any) -> bool | None:
        if isinstance(value, Unknown):
            return None
        if isinstance(value, bool | int | str | list | tuple | dict | type(None)):
            return bool(value)
        return None

    def eval(self, node: ast.expr) -> Any:
        try:
            return self._eval(node)
        except _Return:
            raise
        except RecursionError:
            raise
        except Exception as exc:
            return Unknown(f"{ast.unparse(node)}: {exc!r}")

    def _eval(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.local:
                return self.local[node.id]
            if node.id in ("True", "False", "None"):
                return {"True": True, "False": False, "None": None}[node.id]
            return self.ex.concrete_alias(self.ex.resolve_global(self.module, node.id))
        if isinstance(node, ast.Attribute):
            return self.ex.concrete_alias(self.getattr(self.eval(node.value), node.attr))
        if isinstance(node, ast.List):
            return self.eval_seq(node.elts)
        if isinstance(node, ast.Tuple):
            return tuple(self.eval_seq(node.elts))
        if isinstance(node, ast.Set):
            seq = self.eval_seq(node.elts)
            return set(seq) if is_concrete(seq) else Unknown("set")
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None:
                    expanded = self.eval(value)
                    if isinstance(expanded, dict):
                        out.update(expanded)
                    else:
                        return Unknown(f"**{ast.unparse(value)}")
                else:
                    out[self.eval(key)] = self.eval(value)
            return out
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                elif isinstance(value, ast.FormattedValue):
                    inner = self.eval(value.value)
                    if not isinstance(inner, str | int | float):
                        return Unknown(f"f-string {ast.unparse(node)}")
                    parts.append(str(inner))
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            container = self.eval(node.value)
            if isinstance(node.slice, ast.Slice):
                lower = self.eval(node.slice.lower) if node.slice.lower else None
                upper = self.eval(node.slice.upper) if node.slice.upper else None
                if isinstance(container, list | tuple | str) and is_concrete([lower, upper]):
                    return container[lower:upper]
                return Unknown("slice")
            key = self.eval(node.slice)
            if isinstance(container, dict | list | tuple) and is_concrete(key):
                return container[key]
            return Unknown(f"subscript {ast.unparse(node)}")
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left), self.eval(node.right))
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand)
            if isinstance(node.op, ast.Not):
                t = self.truth(operand)
                return Unknown("not") if t is None else not t
            if isinstance(node.op, ast.USub) and isinstance(operand, int | float):
                return -operand
            return Unknown("unary")
        if isinstance(node, ast.BoolOp):
            values = [self.truth(self.eval(v)) for v in node.values]
            if isinstance(node.op, ast.And):
                if any(v is False for v in values):
                    return False
                return True if all(v is True for v in values) else Unknown("and")
            if any(v is True for v in values):
                return True
            return False if all(v is False for v in values) else Unknown("or")
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.IfExp):
            t = self.truth(self.eval(node.test))
            if t is None:
                return Unknown(f"ifexp {ast.unparse(node.test)}")
            return self.eval(node.body if t else node.orelse)
        if isinstance(node, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            result = self.comprehension(node)
            if isinstance(result, list) and isinstance(node, ast.SetComp):
                return set(result)
            return result
        if isinstance(node, ast.Lambda):
            return FuncRef(self.module, "<lambda>", node)
        if isinstance(node, ast.Starred):
            return self.eval(node.value)
        if isinstance(node, ast.NamedExpr):
            value = self.eval(node.value)
            self.assign(node.target, value)
            return value
        return Unknown(f"expr {type(node).__name__}")

    def eval_seq(self, elts: list[ast.expr]) -> list[Any]:
        out: list[Any] = []
        for elt in elts:
            if isinstance(elt, ast.Starred):
                value = self.eval(elt.value)
                if isinstance(value, list | tuple):
                    out.extend(value)
                else:
                    out.append(Unknown(f"*{ast.unparse(elt.value)}"))
            else:
                out.append(self.eval(elt))
        return out

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp) -> Any:
        if len(node.generators) != 1:
            return Unknown("nested comprehension")
        gen = node.generators[0]
        iterable = self.eval(gen.iter)
        if isinstance(iterable, ClassRef) and self.ex.is_enum(iterable):
            # [f.value for f in SomeEnum]
            values = self.ex.enum_values(iterable)
            if isinstance(values, Unknown):
                return values
            iterable = [_EnumMember(v) for v in values]
        if isinstance(iterable, Unknown) or not isinstance(iterable, list | tuple | set | dict | Iterator):
            return Unknown(f"comprehension over {ast.unparse(gen.iter)}")
        out = []
        sub = Interp(self.ex, self.module, dict(self.local), self.owner, self.cls_binding)
        for item in list(iterable):
            sub.assign(gen.target, item)
            if all(sub.truth(sub.eval(cond)) for cond in gen.ifs):
                out.append(sub.eval(node.elt))
        return out

    def compare(self, node: ast.Compare) -> Any:
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            if isinstance(op, ast.In | ast.NotIn) and isinstance(right, dict) and _plain(left):
                right = list(right.keys())
            if not (is_concrete(left) and is_concrete(right)) or not _plain(left) or not _plain(right):
                return Unknown("compare")
            try:
                ok = _COMPARE_OPS[type(op)](left, right)
            except (TypeError, KeyError):
                return Unknown("compare")
            if not ok:
                return False
            left = right
        return True

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(op, ast.Add):
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            if isinstance(left, tuple) and isinstance(right, tuple):
                return left + right
            if isinstance(left, str) and isinstance(right, str):
                return left + right
            if isinstance(left, int | float) and isinstance(right, int | float):
                return left + right
            if isinstance(left, list) and isinstance(right, Unknown):
                return [*left, right]  # known prefix, unknown tail
        if isinstance(op, ast.BitOr) and isinstance(left, dict) and isinstance(right, dict):
            return {**left, **right}
        if isinstance(op, ast.Mod) and isinstance(left, str) and is_concrete(right):
            try:
                return left % right
            except (TypeError, ValueError):
                return Unknown("%")
        return Unknown(f"binop {type(op).__name__}")

    def getattr(self, obj: Any, attr: str) -> Any:
        if isinstance(obj, ModRef):
            return self.ex.lookup(obj.module, attr)
        if isinstance(obj, ExtRef):
            if obj.qualname == "sys" and attr == "argv":
                return list(SIMULATED_ARGV)
            if obj.qualname == "sys" and attr == "version_info":
                return SIMULATED_PY
            return ExtRef(f"{obj.qualname}.{attr}")
        if isinstance(obj, ClassRef):
            return self.ex.class_attr(obj, attr)
        if isinstance(obj, SuperRef):
            found = self.ex.class_attr(obj.cls, attr, start_after=obj.owner)
            if isinstance(found, BoundMethod) and found.bound is not None:
                return BoundMethod(found.func, obj.cls)
            return found
        if isinstance(obj, _EnumMember) and attr == "value":
            return obj.value
        if isinstance(obj, ParserObj | str | list | dict | tuple):
            return _Method(obj, attr)
        if isinstance(obj, Registry) and attr == "keys":
            keys = self.ex.registry_keys(obj)
            return _Method(dict.fromkeys(keys), attr) if isinstance(keys, list) else keys
        return Unknown(f"attr .{attr}")

    # -- calls ----------------------------------------------------------------

    def call(self, node: ast.Call) -> Any:
        func = self.eval(node.func)
        args = self.eval_seq(node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            value = self.eval(kw.value)
            if kw.arg is None:
                if isinstance(value, dict):
                    kwargs.update(value)
                else:
                    kwargs["**"] = Unknown(f"**{ast.unparse(kw.value)}")
            else:
                kwargs[kw.arg] = value
        return self.invoke(func, args, kwargs, node)

    def invoke(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        where = f"{self.module}:{node.lineno}"
        if isinstance(func, _Method):
            return self.call_method(func, args, kwargs, node)
        if isinstance(func, ExtRef):
            return self.call_external(func.qualname, args, kwargs, where)
        if isinstance(func, FuncRef):
            return self.call_vllm_function(func, None, args, kwargs, where)
        if isinstance(func, BoundMethod):
            return self.call_vllm_function(func.func, func.bound, args, kwargs, where)
        if any(isinstance(a, ParserObj) for a in [*args, *kwargs.values()]):
            self.ex.warn(f"{where}: parser passed to unresolved {ast.unparse(node.func)}")
        if isinstance(func, ClassRef):
            if func.name == "LazyLoader" and len(args) >= 3 and isinstance(args[2], str):
                # me_quant = LazyLoader("model_executor", globals(), "vllm.model_executor...")
                return ModRef(args[2]) if self.ex.tree.is_module(args[2]) else Unknown(args[2])
            return Unknown(f"instance of {func.name}")
        return Unknown(f"call {ast.unparse(node.func)}")

    def call_method(self, method: _Method, args: list[Any], kwargs: dict[str, Any], node: ast.Call) -> Any:
        obj, name = method.obj, method.name
        if isinstance(obj, ParserObj):
            if name in ("add_argument_group", "add_mutually_exclusive_group"):
                return obj
            if name == "add_argument":
                strings = [a for a in args if isinstance(a, str)]
                if len(strings) != len(args):
                    self.ex.warn(f"{self.module}:{node.lineno}: non-constant option strings {args}")
                obj.actions.append(RecordedAction(strings, kwargs, f"{self.module}:{node.lineno}"))
                return Unknown("action")
            return Unknown(f"parser.{name}")
        allowed = (
            SAFE_STR_METHODS if isinstance(obj, str)
            else SAFE_LIST_METHODS if isinstance(obj, list)
            else SAFE_DICT_METHODS if isinstance(obj, dict)
            else set()
        )  # fmt: skip
        if name not in allowed:
            return Unknown(f"method {name}")
        if isinstance(obj, str) and not (is_concrete(args) and is_concrete(kwargs)):
            return Unknown(f"str.{name} on unknown")
        try:
            result = getattr(obj, name)(*args, **kwargs)
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            self.ex.warn(f"{self.module}:{node.lineno}: {type(obj).__name__}.{name} failed: {exc!r}")
            return Unknown(f"{name} failed")
        if name in ("items", "keys", "values"):
            return list(result)
        return result

    def call_external(self, qualname: str, args: list[Any], kwargs: dict[str, Any], where: str) -> Any:
        if (
            qualname in ("list", "tuple", "sorted", "set", "frozenset")
            and args
            and isinstance(args[0], Registry)
        ):
            keys = self.ex.registry_keys(args[0])
            if isinstance(keys, Unknown):
                return keys
            args = [keys]
        if qualname in ("list", "tuple", "sorted", "set", "frozenset"):
            if len(args) == 1 and isinstance(args[0], list | tuple | set | dict):
                if not is_concrete(list(args[0])):
                    return Unknown(f"{qualname}() of unknown")
                seq = list(args[0])
                if qualname == "sorted":
                    return sorted(seq, key=lambda v: (str(type(v)), v))
                if qualname in ("set", "frozenset"):
                    return set(seq)
                return seq if qualname == "list" else tuple(seq)
            if len(args) == 1 and isinstance(args[0], ClassRef) and self.ex.is_enum(args[0]):
                values = self.ex.enum_values(args[0])
                return (
                    Unknown("enum members")
                    if isinstance(values, Unknown)
                    else [_EnumMember(v) for v in values]
                )
            return Unknown(f"{qualname}()")
        if qualname in ("typing.get_args", "typing_extensions.get_args"):
            if len(args) == 1 and isinstance(args[0], AliasRef | ExtRef | ClassRef):
                hint = self.ex._type_from_ref(args[0], "get_args")
                if hint.kind == "literal":
                    return tuple(hint.args)
                if hint.kind == "union":
                    return tuple(hint.args)
            return Unknown("get_args")
        if qualname == "itertools.permutations":
            pool: Any = args[0] if args else None
            r = kwargs.get("r", args[1] if len(args) > 1 else None)
            if isinstance(pool, list | tuple) and is_concrete(pool) and (r is None or isinstance(r, int)):
                return list(itertools.permutations(pool, r))
            return Unknown("permutations")
        if qualname == "copy.deepcopy" and args:
            return copy.deepcopy(args[0])
        if qualname == "super" and not args:
            if self.owner is not None and self.cls_binding is not None:
                return SuperRef(self.owner, self.cls_binding)
            return Unknown("super()")
        if qualname in ("str", "int", "float", "bool") and len(args) == 1 and _plain(args[0]):
            try:
                return {"str": str, "int": int, "float": float, "bool": bool}[qualname](args[0])
            except (TypeError, ValueError):
                return Unknown(qualname)
        if qualname == "dict" and not args:
            return dict(kwargs)
        if qualname == "dict" and len(args) == 1 and isinstance(args[0], dict):
            return {**args[0], **kwargs}
        return Unknown(f"{qualname}()")

    def call_vllm_function(self, func: FuncRef, bound: Any, args: list[Any], kwargs: dict[str, Any],
                           where: str) -> Any:  # fmt: skip
        name = func.name
        # Modelled helpers from vllm/engine/arg_utils.py
        if name == "get_kwargs" and func.module.startswith("vllm.engine") and args:
            return self.ex.get_kwargs(args[0])
        if name == "optional_type" and args:
            inner = to_argtype(self.ex, args[0])
            return inner
        if name == "parse_type" and args:
            return to_argtype(self.ex, args[0])
        if isinstance(func.node, ast.Lambda):
            return Unknown("lambda call")
        # Interpret functions that touch the parser or mutate the kwargs dictionaries.
        touches = any(isinstance(a, ParserObj | dict) for a in [*args, *kwargs.values()])
        if not touches:
            return Unknown(f"call {name}()")
        if self.ex._depth >= MAX_CALL_DEPTH:
            self.ex.warn(f"{where}: call depth exceeded at {name}")
            return Unknown("depth")
        node = func.node
        params = [a.arg for a in node.args.posonlyargs + node.args.args]
        local: dict[str, Any] = {}
        positional = list(args)
        if bound is not None:
            positional = [bound, *positional]
        defaults = node.args.defaults
        for i, pname in enumerate(params):
            if i < len(positional):
                local[pname] = positional[i]
            elif pname in kwargs:
                local[pname] = kwargs[pname]
            else:
                d_index = i - (len(params) - len(defaults))
                local[pname] = (
                    Interp(self.ex, func.module, {}, None).eval(defaults[d_index])
                    if d_index >= 0
                    else Unknown(f"missing arg {pname}")
                )
        for kwonly, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
            if kwonly.arg in kwargs:
                local[kwonly.arg] = kwargs[kwonly.arg]
            elif default is not None:
                local[kwonly.arg] = Interp(self.ex, func.module, {}, None).eval(default)
        cls_binding = bound if isinstance(bound, ClassRef) else func.owner
        sub = Interp(self.ex, func.module, local, func.owner, cls_binding)
        self.ex._depth += 1
        try:
            sub.run(node.body)
        except _Return as ret:
            return ret.value
        finally:
            self.ex._depth -= 1
        return None


@dataclass(frozen=True)
class _Method:
    obj: Any
    name: str


@dataclass(frozen=True)
class _EnumMember:
    value: Any


def _plain(value: Any) -> bool:
    if isinstance(value, list | tuple | set | frozenset):
        return all(_plain(v) for v in value)
    return isinstance(value, str | int | float | bool | type(None))


def to_argtype(ex: Extractor, value: Any) -> ArgType:
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
            "human_readable_int": "int",
            "human_readable_int_or_auto": "int",
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


# ---------------------------------------------------------------------------
# From recorded add_argument calls to flag records
# ---------------------------------------------------------------------------

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
        if isinstance(choices_raw, list | tuple | set) and all(_plain(c) for c in choices_raw):
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


# ---------------------------------------------------------------------------
# Top level: serve flags and SpeculativeConfig facts
# ---------------------------------------------------------------------------


def find_make_arg_parser(ex: Extractor) -> FuncRef:
    serve = "vllm.entrypoints.cli.serve"
    ref = ex.lookup(serve, "make_arg_parser")
    if not isinstance(ref, FuncRef):
        raise RuntimeError(f"{ex.version}: make_arg_parser not found from {serve}: {ref}")
    return ref


def extract_serve_flags(ex: Extractor) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    make = find_make_arg_parser(ex)
    parser = ParserObj()
    Interp(ex, make.module, {}, None).call_vllm_function(make, None, [parser], {}, "entry")
    stats = {"unknown_choices": 0, "unknown_type": 0, "unknown_action": 0}
    flags: dict[str, dict[str, Any]] = {}
    seen_opts: dict[str, str] = {}
    for rec in parser.actions:
        flag = action_to_flag(ex, rec, stats)
        if flag is None:
            continue
        for opt in [flag["name"], *flag["aliases"]]:
            if opt in seen_opts:
                ex.warn(f"{rec.where}: option {opt} registered twice (argparse would refuse)")
            seen_opts[opt] = flag["name"]
        flags[flag["name"]] = flag
    meta = {"frontend_module": make.module, **stats}
    return sorted(flags.values(), key=lambda f: f["name"]), meta


def find_speculative_config(ex: Extractor) -> ClassRef:
    for module in ("vllm.config.speculative", "vllm.config"):
        ref = ex.lookup(module, "SpeculativeConfig")
        if isinstance(ref, ClassRef):
            return ref
    raise RuntimeError(f"{ex.version}: SpeculativeConfig not found")


def extract_speculative(ex: Extractor) -> dict[str, Any]:
    cls = find_speculative_config(ex)
    fields = ex.dataclass_fields(cls)
    names = sorted(name for name, _ in fields)
    method_hint = dict(fields).get("method")
    methods: list[str] = []
    if method_hint is not None:
        for h in flatten_hints(method_hint):
            if h.kind == "literal":
                methods.extend(str(v) for v in h.args if isinstance(v, str))
    return {
        "fields": names,
        "methods": sorted(set(methods)),
        "eagle3_target_allowlist": eagle3_allowlist(cls),
        "unknown_keys": unknown_key_policy(ex, cls),
    }


def eagle3_allowlist(cls: ClassRef) -> list[str] | None:
    """Model-type substrings an EAGLE3 target must contain, or None without a check.

    Looks for an ``if`` that tests ``method == "eagle3"`` (or ``method in (...)`` with
    eagle3) together with the target's ``model_type`` and raises: the substrings are
    either a list assigned to the name iterated in ``any(... for x in NAME)`` in the
    same function, or string constants tested with ``in``/``not in`` ``...model_type``.
    """
    found: list[str] | None = None
    for func in [n for n in ast.walk(cls.node) if isinstance(n, ast.FunctionDef)]:
        lists: dict[str, list[str]] = {}
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.List | ast.Tuple)
                and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.value.elts)
            ):
                lists[node.targets[0].id] = [e.value for e in node.value.elts]  # type: ignore[attr-defined]
        for node in ast.walk(func):
            if not isinstance(node, ast.If):
                continue
            test = ast.unparse(node.test)
            if "eagle3" not in test or "model_type" not in test:
                continue
            if not any(isinstance(n, ast.Raise) for n in ast.walk(node)):
                continue
            values: list[str] = []
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.comprehension) and isinstance(sub.iter, ast.Name):
                    values.extend(lists.get(sub.iter.id, []))
                if (
                    isinstance(sub, ast.Compare)
                    and isinstance(sub.left, ast.Constant)
                    and isinstance(sub.left.value, str)
                    and any(isinstance(op, ast.In | ast.NotIn) for op in sub.ops)
                    and "model_type" in ast.unparse(sub.comparators[0])
                ):
                    values.append(sub.left.value)
            if values:
                found = (found or []) + [v for v in values if v not in (found or [])]
    return found


def unknown_key_policy(ex: Extractor, cls: ClassRef) -> str:
    """'rejected' when the pydantic dataclass forbids extra keys, else 'dropped'.

    vLLM builds the config with ``SpeculativeConfig(**json_dict)``. Pydantic dataclasses
    ignore unknown keyword arguments unless ``extra="forbid"``; vLLM's ``@config``
    decorator sets ``ConfigDict(extra="forbid")`` from 0.16.0.
    """
    for ref, dec in ex._decorator_names(cls):
        explicit = _extra_from_call(dec)
        if explicit is not None:
            return "rejected" if explicit == "forbid" else "dropped"
        if isinstance(ref, ExtRef) and ref.qualname == "dataclasses.dataclass":
            return "rejected"  # a stdlib dataclass raises TypeError on unexpected kwargs
        if isinstance(ref, FuncRef):
            for node in ast.walk(ref.node):
                if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("ConfigDict"):
                    extra = _extra_from_call(node)
                    if extra is not None:
                        return "rejected" if extra == "forbid" else "dropped"
    for stmt in cls.node.body:
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("model_config", "__pydantic_config__") for t in stmt.targets
        ):
            src = ast.unparse(stmt.value)
            if "forbid" in src:
                return "rejected"
    return "dropped"


def _extra_from_call(node: ast.expr) -> str | None:
    if not isinstance(node, ast.Call):
        return None
    for kw in node.keywords:
        if kw.arg == "extra" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
        if kw.arg == "config" and isinstance(kw.value, ast.Call):
            inner = _extra_from_call(kw.value)
            if inner is not None:
                return inner
        if kw.arg == "config" and isinstance(kw.value, ast.Dict):
            for k, v in zip(kw.value.keys, kw.value.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "extra" and isinstance(v, ast.Constant):
                    return str(v.value)
    return None


# ---------------------------------------------------------------------------
# Release records
# ---------------------------------------------------------------------------

PUBLIC_FLAG_KEYS = ("name", "dest", "takes_value", "boolean", "negatable", "negations", "nargs", "choices",
                    "value_type", "aliases", "deprecated")  # fmt: skip


def extract_release(
    tree: SourceTree, version: str, wheel_name: str, sha256: str
) -> tuple[dict[str, Any], Extractor]:
    ex = Extractor(tree, version)
    flags, meta = extract_serve_flags(ex)
    spec = extract_speculative(ex)
    record = {
        "vllm_version": version,
        "source": {
            "wheel": wheel_name,
            "sha256": sha256,
            "extracted_by": EXTRACTED_BY,
            "confidence": "verified",
            "frontend_module": meta["frontend_module"],
        },
        "serve_flags": [{k: f[k] for k in PUBLIC_FLAG_KEYS} for f in flags],
        "speculative": spec,
    }
    ex.stats = meta
    return record, ex


def dump_json(record: Mapping[str, Any]) -> str:
    return json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_wheel(version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", f"vllm=={version}", "-d", str(dest)]  # fmt: skip
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"pip download vllm=={version} failed ({proc.returncode}): {tail}")
    wheels = sorted(dest.glob(f"vllm-{version}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download produced no wheel for vllm=={version} in {dest}")
    return wheels[0]


def process_version(
    version: str, cache_dir: Path, out_dir: Path, keep_wheels: bool
) -> tuple[str, dict[str, Any]]:
    started = time.monotonic()
    wheel_dir = cache_dir / version
    existing = sorted(wheel_dir.glob(f"vllm-{version}-*.whl")) if wheel_dir.exists() else []
    wheel = existing[0] if existing else download_wheel(version, wheel_dir)
    downloaded = time.monotonic()
    digest = sha256_file(wheel)
    with zipfile.ZipFile(wheel) as zf:
        record, ex = extract_release(SourceTree.from_zip(zf), version, wheel.name, digest)
    (out_dir / f"{version}.json").write_text(dump_json(record), encoding="utf-8")
    if not keep_wheels:
        shutil.rmtree(wheel_dir, ignore_errors=True)
    info = {
        "flags": len(record["serve_flags"]),
        "download_s": round(downloaded - started, 1),
        "total_s": round(time.monotonic() - started, 1),
        "warnings": ex.warnings,
        **ex.stats,
    }
    return version, info


# ---------------------------------------------------------------------------
# Summary table
# ---------------------------------------------------------------------------


def load_records(out_dir: Path) -> list[dict[str, Any]]:
    records = [json.loads(p.read_text(encoding="utf-8")) for p in out_dir.glob("*.json")]
    return sorted(records, key=lambda r: version_key(r["vllm_version"]))


def long_option_count(flags: Iterable[Mapping[str, Any]]) -> int:
    """``vllm serve`` long options, not counting ``--no-``/``--disable-`` negations or ``--help``."""
    return len({o for f in flags for o in [f["name"], *f["aliases"]] if o.startswith("--")})


def release_table(records: Iterable[Mapping[str, Any]]) -> str:
    """Markdown table: one row per release with flag counts and speculative facts."""
    lines = [
        "| vLLM | long options | flag entries | boolean | negatable | choices | value type unknown | "
        "spec fields | methods | EAGLE3 allow-list | unknown spec keys | front-end args module |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for rec in records:
        flags = rec["serve_flags"]
        spec = rec["speculative"]
        allow = spec["eagle3_target_allowlist"]
        cells = [
            rec["vllm_version"],
            str(long_option_count(flags)),
            str(len(flags)),
            str(sum(f["boolean"] for f in flags)),
            str(sum(f["negatable"] for f in flags)),
            str(sum(f["choices"] is not None for f in flags)),
            str(sum(f["value_type"] == "unknown" for f in flags)),
            str(len(spec["fields"])),
            str(len(spec["methods"])),
            "none" if allow is None else ", ".join(allow),
            spec["unknown_keys"],
            f"`{rec['source'].get('frontend_module', '?')}`",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def methods_table(records: Iterable[Mapping[str, Any]]) -> str:
    """Markdown list of the speculative methods each release adds or removes."""
    lines = []
    prev: set[str] | None = None
    for rec in records:
        methods = set(rec["speculative"]["methods"])
        if prev is None:
            lines.append(f"- {rec['vllm_version']}: {', '.join(sorted(methods))}")
        else:
            added, removed = sorted(methods - prev), sorted(prev - methods)
            if added or removed:
                parts = []
                if added:
                    parts.append("adds " + ", ".join(added))
                if removed:
                    parts.append("removes " + ", ".join(removed))
                lines.append(f"- {rec['vllm_version']}: {'; '.join(parts)}")
        prev = methods
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--versions", nargs="+", metavar="X.Y.Z", help="vLLM versions to extract")
    group.add_argument("--all", action="store_true", help="every default release 0.10.0 .. 0.33.0")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory for <version>.json")
    parser.add_argument("--cache-dir", type=Path, default=None, help="where wheels go (default: a temp dir)")
    parser.add_argument("--keep-wheels", action="store_true", help="do not delete wheels after extraction")
    parser.add_argument("--jobs", type=int, default=3, help="versions processed in parallel (default 3)")
    parser.add_argument("--print-table", action="store_true", help="print the per-release summary table")
    parser.add_argument("--verbose", action="store_true", help="print every extraction warning")
    args = parser.parse_args(argv)

    versions: list[str] = list(DEFAULT_VERSIONS) if args.all else list(args.versions or [])
    if not versions and not args.print_table:
        parser.error("give --versions, --all or --print-table")

    out_dir: Path = args.out
    if versions:
        out_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            if args.cache_dir is None:
                cache_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vllm-wheels-")))
            else:
                cache_dir = args.cache_dir
                cache_dir.mkdir(parents=True, exist_ok=True)
            failures = 0
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                futures = {
                    pool.submit(process_version, v, cache_dir, out_dir, args.keep_wheels): v for v in versions
                }
                results: dict[str, dict[str, Any]] = {}
                for fut in concurrent.futures.as_completed(futures):
                    version = futures[fut]
                    try:
                        _, info = fut.result()
                    except Exception as exc:
                        failures += 1
                        print(f"{version}: FAILED: {exc!r}", file=sys.stderr)
                        continue
                    results[version] = info
                    print(
                        f"{version}: {info['flags']} serve flags "
                        f"(download {info['download_s']}s, total {info['total_s']}s, "
                        f"{len(info['warnings'])} warnings, unknown types {info['unknown_type']}, "
                        f"unknown choices {info['unknown_choices']})",
                        file=sys.stderr,
                    )
                    if args.verbose:
                        for w in info["warnings"]:
                            print(f"  warning: {w}", file=sys.stderr)
        elapsed = time.monotonic() - started
        print(f"extracted {len(results)} release(s) in {elapsed:.1f}s into {out_dir}", file=sys.stderr)
        if failures:
            return 1
    if args.print_table:
        records = load_records(out_dir)
        print(release_table(records))
        print()
        print(methods_table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = [
    "DEFAULT_VERSIONS",
    "Extractor",
    "SourceTree",
    "compute_field_kwargs",
    "extract_release",
    "extract_serve_flags",
    "extract_speculative",
    "long_option_count",
    "main",
    "methods_table",
    "release_table",
    "version_key",
]
