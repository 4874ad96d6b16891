"""The per-release index of modules, classes and functions the interpreter resolves names in."""

from __future__ import annotations

import ast
import builtins
import copy
from typing import TYPE_CHECKING, Any

from .dataclass_fields import compute_field_kwargs
from .interpreter import Interp
from .values import (
    BUILTIN_TYPES,
    TYPING_GENERIC_ALIASES,
    AliasRef,
    BoundMethod,
    ClassRef,
    ExtRef,
    FuncRef,
    ModRef,
    Registry,
    TypeHint,
    Unknown,
    is_concrete,
    is_plain,
    typing_name,
)

if TYPE_CHECKING:
    from .source_tree import SourceTree


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
        self._human_readable: dict[str, str] | None = None
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
            tname = typing_name(origin)
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
            tname = typing_name(ref)
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
        if is_plain(value) or (isinstance(value, dict) and is_concrete(value) and is_plain(list(value))):
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

    def human_readable_fields(self) -> dict[str, str]:
        """Integer fields that arg_utils parses with human_readable_int ("16k", "16K") by name, as
        ``if name == "max_model_len": kwargs[name]["type"] = human_readable_int_or_auto``: field -> the
        value type ("human_int" or "human_int_or_auto")."""
        if self._human_readable is None:
            self._human_readable = {}
            tree = self.tree.module_ast("vllm.engine.arg_utils")
            kinds = {"human_readable_int": "human_int", "human_readable_int_or_auto": "human_int_or_auto"}
            # 0.11-0.13 name the fields in a local set first: human_readable_ints = {"max_model_len", ...}
            named_sets = {
                node.targets[0].id: _string_elements(node.value)
                for node in (ast.walk(tree) if tree is not None else ())
                if isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, (ast.Set, ast.Tuple, ast.List))
            }
            for node in ast.walk(tree) if tree is not None else ():
                if not isinstance(node, ast.If):
                    continue
                parser = next(
                    (
                        kinds[stmt.value.id]
                        for stmt in node.body
                        if isinstance(stmt, ast.Assign)
                        and isinstance(stmt.value, ast.Name)
                        and stmt.value.id in kinds
                    ),
                    None,
                )
                if parser is None:
                    continue
                for name in _names_compared_to_name(node.test, named_sets):
                    self._human_readable[name] = parser
        return self._human_readable

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


def _string_elements(node: ast.expr) -> list[str]:
    elements = node.elts if isinstance(node, (ast.Set, ast.Tuple, ast.List)) else []
    return [e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def _names_compared_to_name(test: ast.expr, named_sets: dict[str, list[str]]) -> list[str]:
    """The strings a test compares the variable ``name`` with: ``name == "a"``, ``name in ("a", "b")``, or
    ``name in some_set`` where ``some_set = {"a", "b"}`` is assigned in the module."""
    if not (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "name"):
        return []
    if len(test.ops) != 1 or len(test.comparators) != 1:
        return []
    op, right = test.ops[0], test.comparators[0]
    if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
        return [right.value]
    if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
        return _string_elements(right)
    if isinstance(op, ast.In) and isinstance(right, ast.Name):
        return named_sets.get(right.id, [])
    return []
