#!/usr/bin/env python3
"""Run each vLLM release's own SpeculativeConfig._maybe_override_draft_max_model_len on a grid of lengths and
write the golden table tests/golden/vllm_speculative_max_len.json (which speculative.max_model_len values
vLLM refuses against the target's and the draft's max_model_len, and its words for it).

    .venv/bin/python scripts/probe_vllm_speculative_max_len.py                    # every default release
    .venv/bin/python scripts/probe_vllm_speculative_max_len.py --versions 0.20.0  # some

The static method is read out of the wheel's config module (vllm/config.py, vllm/config/__init__.py or
vllm/config/speculative.py) with ast and executed alone, with a stub logger. The `if` tests that guard its
call in SpeculativeConfig.__post_init__ are recorded too ("reached_when": the methods that skip it).
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

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_speculative_max_len.json"
FUNCTION = "_maybe_override_draft_max_model_len"
SPECULATIVE = (None, 1, 2047, 2048, 2049, 4095, 4096, 4097, 32768, 32769)
DRAFT = (2048, 32768, 131072)
TARGET = (4096, 32768)


class _Logger:
    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None


def find_source(archive: zipfile.ZipFile) -> tuple[str, ast.Module]:
    for name in sorted(n for n in archive.namelist() if n.startswith("vllm/config") and n.endswith(".py")):
        source = archive.read(name)
        if f"def {FUNCTION}".encode() in source:
            return name, ast.parse(source)
    raise LookupError(f"{FUNCTION} not found under vllm/config")


def guards(tree: ast.Module) -> list[str]:
    """The `if` tests on the way from SpeculativeConfig.__post_init__ to the call ("not ..." for an else)."""

    def walk(node: ast.AST, path: list[str]) -> list[str] | None:
        for child in ast.iter_child_nodes(node):
            step = path
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                step = [*path, test if child in node.body else f"not ({test})"]
            if isinstance(child, ast.Call) and FUNCTION in ast.unparse(child.func):
                return step
            found = walk(child, step)
            if found is not None:
                return found
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
            init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__post_init__")
            return walk(init, []) or []
    return []


def load_function(tree: ast.Module) -> Any:
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == FUNCTION)
    node.decorator_list = []
    node.returns = None
    for arg in node.args.args:
        arg.annotation = None
    namespace: dict[str, Any] = {"logger": _Logger()}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "<vllm>", "exec"), namespace)  # the wheel's own
    return namespace[FUNCTION]


def run(function: Any, speculative: int | None, draft: int, target: int) -> Any:
    try:
        return {"max_model_len": function(speculative, draft, target)}
    except ValueError as exc:
        return {"error": "ValueError", "message": str(exc)}


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        path, tree = find_source(archive)
    function = load_function(tree)
    return {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "function": f"{path}:SpeculativeConfig.{FUNCTION}",
        "reached_when": guards(tree),
        "probes": [
            {
                "inputs": {"speculative": s, "draft": d, "target": t},
                "verdict": run(function, s, d, t),
            }
            for s in SPECULATIVE
            for d in DRAFT
            for t in TARGET
        ],
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "function", "scripts/probe_vllm_speculative_max_len.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
