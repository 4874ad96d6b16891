"""The two things extracted from a release: `vllm serve` flags and SpeculativeConfig facts."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from .dataclass_fields import flatten_hints
from .flags import action_to_flag
from .interpreter import Interp
from .values import ClassRef, ExtRef, FuncRef, ParserObj

if TYPE_CHECKING:
    from .extractor import Extractor


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
        "refused_methods": refused_methods(cls),
        "unknown_keys": unknown_key_policy(ex, cls),
    }


def refused_methods(cls: ClassRef) -> list[str]:
    """Methods the release names but refuses when it builds the config.

    A block that sets ``self.method = "<m>"`` and then raises ``NotImplementedError``: how
    0.10.0 to 0.14.1 refuse a plain draft model ("Speculative decoding with draft model is not
    supported yet"), whether the method was set or guessed.
    """
    found: set[str] = set()
    for node in ast.walk(cls.node):
        for block in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(block, list):
                continue
            chosen: str | None = None
            for stmt in block:
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and ast.unparse(stmt.targets[0]) == "self.method"
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                ):
                    chosen = stmt.value.value
                elif chosen is not None and isinstance(stmt, ast.Raise) and _raises_not_implemented(stmt):
                    found.add(chosen)
    return sorted(found)


def _raises_not_implemented(stmt: ast.Raise) -> bool:
    exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


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
