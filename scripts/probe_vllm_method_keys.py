#!/usr/bin/env python3
"""Find, in each vLLM release's wheel, where the method-specific speculative keys are read, and write the
golden table tests/golden/vllm_method_keys.json.

    .venv/bin/python scripts/probe_vllm_method_keys.py                    # every default release
    .venv/bin/python scripts/probe_vllm_method_keys.py --versions 0.24.0  # some

The keys are SpeculativeConfig's fields named prompt_lookup_* or suffix_decoding_* (read from the
release's own definition of the class). For every module of the wheel the probe walks the syntax tree and
records each read of one of those attributes (`x.prompt_lookup_max` in a load context): the module, the
enclosing function, and the tests of the `if` / `elif` branches around it that compare `method` (in
speculative.py itself, also the branches around each call of that function, one level up). From 0.18.0
__post_init__ also overwrites the ngram keys for other methods (`self.prompt_lookup_max = 0`); writes are
recorded apart. The test reads it as: a key is read only by the methods its module or its branch names.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.records import (
    find_or_download,
    run_release_probe,
    sha256_file,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_method_keys.json"
# Where SpeculativeConfig is defined: its own module from 0.11.0, the config package before, one file in 0.10.0.
CONFIG_MODULES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
PREFIXES = ("prompt_lookup_", "suffix_decoding_")


def _fields(tree: ast.Module) -> list[str]:
    config = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "SpeculativeConfig"), None
    )
    body = config.body if config is not None else []
    return sorted(
        n.target.id
        for n in body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and n.target.id.startswith(PREFIXES)
    )


def _mentions_method(test: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr == "method")
        or (isinstance(n, ast.Name) and n.id == "method")
        for n in ast.walk(test)
    )


class _Reads(ast.NodeVisitor):
    """Reads and writes of the keys in one module, with the method branches around each."""

    def __init__(self, keys: set[str]) -> None:
        self.keys = keys
        self.function: list[str] = []
        self.branches: list[str] = []
        self.reads: list[dict[str, Any]] = []
        self.writes: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []  # calls of self.<function>, with their branches

    def _scope(self, node: ast.AST) -> None:
        self.function.append(getattr(node, "name", "?"))
        self.generic_visit(node)
        self.function.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        method = _mentions_method(node.test)
        test = ast.unparse(node.test)
        if method:
            self.branches.append(test)
        for child in node.body:
            self.visit(child)
        if method:
            self.branches.pop()
            self.branches.append(f"not ({test})")
        for child in node.orelse:
            self.visit(child)
        if method:
            self.branches.pop()

    def visit_Attribute(self, node: ast.Attribute) -> None:
        where = {"function": ".".join(self.function), "branches": list(self.branches)}
        if node.attr in self.keys:
            (self.writes if isinstance(node.ctx, ast.Store) else self.reads).append(
                {"key": node.attr, **where}
            )
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            self.calls.append(
                {"callee": func.attr, "function": ".".join(self.function), "branches": list(self.branches)}
            )
        self.generic_visit(node)


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    record: dict[str, Any] = {"wheel": wheel.name, "sha256": sha256_file(wheel), "modules": {}}
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        config_module = next(m for m in CONFIG_MODULES if m in names)
        keys = _fields(ast.parse(archive.read(config_module)))
        record["config_module"] = config_module
        record["keys"] = keys
        for name in sorted(names):
            if not (name.startswith("vllm/") and name.endswith(".py")):
                continue
            text = archive.read(name)
            if not any(k.encode() in text for k in keys):
                continue
            visitor = _Reads(set(keys))
            visitor.visit(ast.parse(text))
            entry: dict[str, Any] = {"reads": visitor.reads, "writes": visitor.writes}
            if name == config_module:
                readers = {r["function"].split(".")[-1] for r in visitor.reads}
                entry["calls"] = [c for c in visitor.calls if c["callee"] in readers]
            if visitor.reads or visitor.writes:
                record["modules"][name] = entry
    record["summary"] = sorted(record["modules"])
    return record


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "summary", "scripts/probe_vllm_method_keys.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
