#!/usr/bin/env python3
"""Read, in each vLLM release's wheel, which values of model_impl the engine knows and what it does with
another, and write the golden table tests/golden/vllm_model_impl.json.

    .venv/bin/python scripts/probe_vllm_model_impl.py                    # every default release
    .venv/bin/python scripts/probe_vllm_model_impl.py --versions 0.15.1  # some

Recorded per release: the values of ModelImpl (an enum up to 0.10.x, a Literal from 0.11.0), the annotation
of ModelConfig's model_impl field (`str | ModelImpl` accepts any string), and every comparison of an
expression ending in `model_impl` with a constant anywhere in the wheel (module, operator, constant). The
test reads it as: a value none of those comparisons names takes the branches "vllm" takes, except where a
comparison names "vllm" itself. The command line's choices are in the release records the extractor
writes (catalog/data/vllm/<release>.json).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.records import run_release_probe, wheel_reader

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_model_impl.json"


def _constant(node: ast.expr) -> str | None:
    """A string constant, or an enum member of ModelImpl (ModelImpl.VLLM, ModelImpl.VLLM.value) by name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    text = ast.unparse(node)
    if text.startswith("ModelImpl."):
        return text.split(".")[1].lower()
    return None


def read_release(archive: zipfile.ZipFile) -> dict[str, Any]:
    values: list[str] | None = None
    annotation = None
    comparisons: set[tuple[str, str, str]] = set()
    for name in sorted(archive.namelist()):
        if not (name.startswith("vllm/") and name.endswith(".py")):
            continue
        source = archive.read(name)
        if b"model_impl" not in source and b"ModelImpl" not in source:
            continue
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "ModelImpl":
                values = [
                    str(stmt.value.value)
                    for stmt in node.body
                    if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
                ]
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ModelImpl" for t in node.targets
            ):
                values = [
                    n.value
                    for n in ast.walk(node.value)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str)
                ]
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == "model_impl"
                and name.startswith("vllm/config")
            ):
                annotation = ast.unparse(node.annotation)
            elif isinstance(node, ast.Compare):
                parts = [node.left, *node.comparators]
                if any(ast.unparse(p).endswith("model_impl") for p in parts):
                    op = type(node.ops[0]).__name__
                    for p in parts:
                        if (c := _constant(p)) is not None:
                            comparisons.add((name, op, c))
    return {
        "values": values,
        "field_annotation": annotation,
        "comparisons": [list(c) for c in sorted(comparisons)],
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, wheel_reader(read_release), "values", "scripts/probe_vllm_model_impl.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
