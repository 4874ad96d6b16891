"""Walking argparse definitions: a small symbolic interpreter over vLLM's parser-building code."""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .argtypes import to_argtype
from .constants import MAX_CALL_DEPTH, SAFE_STR_METHODS, SIMULATED_ARGV, SIMULATED_PY
from .release_index import ReleaseIndex
from .values import (
    AliasRef,
    BoundMethod,
    ClassRef,
    ExtRef,
    FuncRef,
    ModRef,
    ParserObj,
    RecordedAction,
    Registry,
    SuperRef,
    Unknown,
    is_concrete,
    is_plain,
)


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


SAFE_LIST_METHODS = {"append", "extend", "remove", "insert", "copy", "index", "count", "pop", "sort"}


SAFE_DICT_METHODS = {"items", "keys", "values", "get", "pop", "update", "copy", "setdefault"}


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

    def __init__(self, ex: ReleaseIndex, module: str, local: dict[str, Any], owner: ClassRef | None,
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
            if isinstance(op, ast.In | ast.NotIn) and isinstance(right, dict) and is_plain(left):
                right = list(right.keys())
            if not (is_concrete(left) and is_concrete(right)) or not is_plain(left) or not is_plain(right):
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
        if qualname in ("str", "int", "float", "bool") and len(args) == 1 and is_plain(args[0]):
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
