#!/usr/bin/env python3
"""Read, in each vLLM release's wheel, whether SpeculativeConfig raises an EAGLE draft's
max_position_embeddings to the target's max_model_len, run that function on stand-in configs, and write the
golden table tests/golden/vllm_draft_rope_cache.json.

    .venv/bin/python scripts/probe_vllm_draft_rope_cache.py                    # every default release
    .venv/bin/python scripts/probe_vllm_draft_rope_cache.py --versions 0.27.0  # some

An EAGLE draft's rotary cos_sin_cache has as many rows as its own config's max_position_embeddings (the
Llama decoder layer an EAGLE-3 head is built of calls get_rope with it), while the proposer feeds the draft
the target's positions, up to the target's max_model_len: a draft config shorter than that gathers past
the cache (vllm-project/vllm issue #48894, fixed by PR #49343). Recorded per release:

- `raised_when`: the `if` tests under which SpeculativeConfig calls
  `_maybe_override_draft_max_position_embeddings`; empty where the release has no such call;
- `probes`: that function, taken out of the wheel and run on (draft max_position_embeddings, target
  max_model_len) pairs, and the max_position_embeddings it leaves (absent where the release has none);
- `llama_rope_max_position`: the max_position argument of get_rope in vllm/model_executor/models/llama.py,
  and where that value comes from in the layer (`max_position_embeddings = ...`).

Stubs: the logger, the config's type annotation, and transformers' ALLOWED_LAYER_TYPES (the stand-in
scripts/probe_vllm_max_model_len.py uses). Not executed: the rotary embedding itself (a GPU kernel, or a Triton gather under torch.compile) and the
proposer's positions; the issue's trace (v0.24.0) is the source for those.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts import probe_vllm_max_model_len as derivation
from scripts.probe_vllm_draft_max_model_len import guards_of
from scripts.vllm_release_extractor.records import run_release_probe, wheel_reader

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_draft_rope_cache.json"
FUNCTION = "_maybe_override_draft_max_position_embeddings"
CONFIG_FILES = ("vllm/config.py", "vllm/config/__init__.py", "vllm/config/speculative.py")
LLAMA = "vllm/model_executor/models/llama.py"
# (the draft config's max_position_embeddings, the target's max_model_len, its RoPE type): either side of
# equality, the 2048-token head vLLM's docstring names, a head longer than the target, a config without the
# key, and RoPE types whose max_position_embeddings does more than size the cache (or only that).
PAIRS: tuple[tuple[int | None, int, str | None], ...] = (
    (2047, 2048, None), (2048, 2048, None), (2048, 2049, None), (2048, 8192, None), (40960, 8192, None),
    (None, 8192, None), (2048, 8192, "llama3"), (2048, 8192, "linear"), (2048, 8192, "yarn"),
)  # fmt: skip


def class_in_wheel(archive: zipfile.ZipFile, files: tuple[str, ...], name: str) -> tuple[str, ast.ClassDef]:
    """The class `name` in the first of `files` the wheel has that defines it, with that file's path."""
    names = set(archive.namelist())
    for path in files:
        if path in names:
            for node in ast.walk(ast.parse(archive.read(path))):
                if isinstance(node, ast.ClassDef) and node.name == name:
                    return path, node
    raise LookupError(f"no {name} in the wheel")


def raised_when(cls: ast.ClassDef) -> list[str]:
    """The `if` tests (joined with `and`) enclosing each call of FUNCTION in the class."""
    return guards_of(
        cls, lambda node: isinstance(node, ast.Call) and ast.unparse(node.func).endswith(FUNCTION)
    )


def _module_name_to_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def _resolve(archive: zipfile.ZipFile, path: str, name: str, namespace: dict[str, Any]) -> None:
    """Compile `name` out of the wheel's module at `path` into `namespace`, with what it needs: top-level
    functions and constants of that module, and names it imports from other vllm modules (followed the
    same way). Builtins, and names defined nowhere the probe can follow, are left to fail loudly."""
    if name in namespace:
        return
    tree = ast.parse(archive.read(path))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            _compile(archive, path, tree, node, namespace)
            return
        if isinstance(node, ast.Assign) and any(ast.unparse(t) == name for t in node.targets):
            _compile(archive, path, tree, node, namespace)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vllm"):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    target = _module_name_to_path(node.module)
                    if target in archive.namelist():
                        _resolve(archive, target, alias.name, namespace)
                        namespace[name] = namespace[alias.name]
                    return


def _compile(
    archive: zipfile.ZipFile, path: str, tree: ast.Module, node: ast.stmt, namespace: dict[str, Any]
) -> None:
    module = ast.Module(body=[node], type_ignores=[])
    for used in {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}:
        _resolve(archive, path, used, namespace)
    exec(compile(ast.fix_missing_locations(module), path, "exec"), namespace)


def _function(archive: zipfile.ZipFile, path: str, cls: ast.ClassDef) -> Any:
    """FUNCTION compiled out of the wheel's source (a staticmethod), with what it calls in its module, and
    a logger that records nothing."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == FUNCTION:
            node.decorator_list = []
            namespace: dict[str, Any] = {
                "logger": SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None),
                "PretrainedConfig": object,
                "PreTrainedConfig": object,
                # transformers' constant, which the wheel's RoPE helpers read: the max_model_len probe's stand-in
                "ALLOWED_LAYER_TYPES": derivation.ALLOWED_LAYER_TYPES,
            }
            _compile(archive, path, ast.parse(archive.read(path)), node, namespace)
            return namespace[FUNCTION]
    return None


def llama_rope_max_position(archive: zipfile.ZipFile) -> dict[str, list[str]]:
    tree = ast.parse(archive.read(LLAMA))
    arguments = sorted(
        {
            ast.unparse(k.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("get_rope")
            for k in node.keywords
            if k.arg == "max_position"
        }
    )
    assigned = sorted(
        {
            ast.unparse(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            and any(ast.unparse(t) == "max_position_embeddings" for t in node.targets)
        }
    )
    return {"max_position": arguments, "max_position_embeddings": assigned}


def read_release(archive: zipfile.ZipFile) -> dict[str, Any]:
    path, cls = class_in_wheel(archive, CONFIG_FILES, "SpeculativeConfig")
    function = _function(archive, path, cls)
    probes = []
    for draft, target, rope in PAIRS:
        probe: dict[str, Any] = {"draft_max_position_embeddings": draft, "target_max_model_len": target}
        if rope is not None:
            probe["rope_type"] = rope
        if function is not None:
            config = SimpleNamespace() if draft is None else SimpleNamespace(max_position_embeddings=draft)
            if rope is not None:
                config.rope_parameters = {"rope_type": rope, "factor": 4.0}
            function(config, target)
            probe["left"] = getattr(config, "max_position_embeddings", None)
        probes.append(probe)
    return {
        "speculative_config": path,
        "raised_when": raised_when(cls),
        "probes": probes,
        "llama_rope_max_position": llama_rope_max_position(archive),
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "",
        OUT,
        wheel_reader(read_release),
        "raised_when",
        "scripts/probe_vllm_draft_rope_cache.py",
    )


if __name__ == "__main__":
    raise SystemExit(main())
