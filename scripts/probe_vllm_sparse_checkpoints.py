#!/usr/bin/env python3
"""Run each vLLM release's own code that reads a compressed-tensors checkpoint's `sparsity_config` on a grid of
sparsity and quantization settings, and write the golden table tests/golden/vllm_sparse_checkpoints.json.

    .venv/bin/python scripts/probe_vllm_sparse_checkpoints.py                    # every default release
    .venv/bin/python scripts/probe_vllm_sparse_checkpoints.py --versions 0.24.0  # some

From vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py the probe takes, with
ast, `CompressedTensorsConfig._parse_sparsity_config` (which `from_config` calls when the engine reads the
checkpoint's config) and `supports_cutlass_24` (which `get_scheme` asks, before any other scheme, whether a
layer runs on the 2:4 sparse kernel), and executes them alone on stand-ins for compressed-tensors'
SparsityCompressionConfig and QuantizationArgs (field defaults and enum values as compressed-tensors 0.10.2
and 0.17.0 define them). From schemes/compressed_tensors_24.py it runs CompressedTensors24.get_min_capability,
the GPU floor of that kernel's scheme (or what it raises). Recorded per release: whether from_config and
get_scheme make those calls, what _parse_sparsity_config returns or raises per sparsity config, what
supports_cutlass_24 says per sparsity x quantization probe, and the scheme's floor.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.records import (
    find_or_download,
    run_release_probe,
    sha256_file,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_sparse_checkpoints.json"
CT_DIR = "vllm/model_executor/layers/quantization/compressed_tensors/"
CONFIG_MODULE = f"{CT_DIR}compressed_tensors.py"
SCHEME_MODULE = f"{CT_DIR}schemes/compressed_tensors_24.py"

# Sparsity configs as checkpoints write them (quantization_config.sparsity_config); None: no such key.
SPARSITY: dict[str, dict[str, Any] | None] = {
    "none": None,
    "2:4 sparse-24-bitmask": {
        "format": "sparse-24-bitmask",
        "sparsity_structure": "2:4",
        "targets": ["Linear"],
        "ignore": ["lm_head"],
    },
    "2:4 dense": {"format": "dense", "sparsity_structure": "2:4", "targets": ["Linear"], "ignore": []},
    "2:4 sparse-bitmask": {"format": "sparse-bitmask", "sparsity_structure": "2:4", "targets": ["Linear"]},
    "unstructured dense": {"format": "dense", "sparsity_structure": "unstructured", "targets": ["Linear"]},
    "unstructured dense no targets": {"format": "dense", "sparsity_structure": "unstructured", "targets": []},
    "unstructured sparse-bitmask": {
        "format": "sparse-bitmask",
        "sparsity_structure": "unstructured",
        "targets": ["Linear"],
    },
    "dense, structure unset": {"format": "dense", "targets": ["Linear"]},
}


def _args(kind: str, bits: int, strategy: str, dynamic: bool = False) -> dict[str, Any]:
    return {"type": kind, "num_bits": bits, "strategy": strategy, "dynamic": dynamic}


# A config group's (weights, input_activations), as compressed-tensors writes them.
QUANTIZATION: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = {
    "unquantized": (None, None),
    "w8a8 int8 channel/token": (_args("int", 8, "channel"), _args("int", 8, "token", True)),
    "w8a8 fp8 channel/token": (_args("float", 8, "channel"), _args("float", 8, "token", True)),
    "w8a8 fp8 tensor/tensor": (_args("float", 8, "tensor"), _args("float", 8, "tensor")),
    "w8a8 fp8 block/group": (_args("float", 8, "block"), _args("float", 8, "group", True)),
    "w8a8 fp8 channel/group": (_args("float", 8, "channel"), _args("float", 8, "group", True)),
    "w4a16 group": (_args("int", 4, "group"), None),
    "w8a16 fp8 channel": (_args("float", 8, "channel"), None),
    "w4a8 int channel/token": (_args("int", 4, "channel"), _args("int", 8, "token", True)),
}


class _Enum:
    """An enum member stand-in: `.value` is the string compressed-tensors defines."""

    def __init__(self, value: str) -> None:
        self.value = value


class _SparsityCompressionConfig:
    # compressed_tensors.config.base.SparsityCompressionConfig: format required, targets / ignore None,
    # sparsity_structure "unstructured" unless given.
    @staticmethod
    def model_validate(value: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(
            **{"targets": None, "ignore": None, "sparsity_structure": "unstructured", **value}
        )


STAND_INS: dict[str, Any] = {
    "SparsityCompressionConfig": _SparsityCompressionConfig,
    "SparsityStructure": SimpleNamespace(TWO_FOUR=_Enum("2:4"), UNSTRUCTURED=_Enum("unstructured")),
    "CompressionFormat": SimpleNamespace(
        dense=_Enum("dense"),
        sparse_bitmask=_Enum("sparse-bitmask"),
        sparse_24_bitmask=_Enum("sparse-24-bitmask"),
    ),
    "QuantizationStrategy": SimpleNamespace(
        TENSOR=_Enum("tensor"),
        CHANNEL=_Enum("channel"),
        GROUP=_Enum("group"),
        BLOCK=_Enum("block"),
        TOKEN=_Enum("token"),
    ),
}


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def _method(node: ast.ClassDef | None, name: str) -> ast.FunctionDef | None:
    body = node.body if node is not None else []
    return next((n for n in body if isinstance(n, ast.FunctionDef) and n.name == name), None)


def _calls(function: ast.FunctionDef | None, attribute: str) -> bool:
    return function is not None and any(
        isinstance(n, ast.Attribute) and n.attr == attribute for n in ast.walk(function)
    )


def _load(function: ast.FunctionDef, module: ast.Module) -> Any:
    """The wheel's own function, alone: decorators and annotations dropped, module-level string constants
    (SPARSITY_CONFIG_NAME) and the stand-ins in scope."""
    function.decorator_list = []
    function.returns = None
    for arg in [*function.args.args, *function.args.kwonlyargs]:
        arg.annotation = None
    body: list[ast.stmt] = []
    for node in function.body:
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            node = ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)
        body.append(node)
    function.body = body
    constants = {
        target.id: node.value.value
        for node in module.body
        if isinstance(node, ast.AnnAssign | ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name)
    }
    namespace: dict[str, Any] = {**STAND_INS, **constants}
    code = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    exec(compile(code, "<vllm>", "exec"), namespace)  # the wheel's own code, on stand-ins
    return namespace[function.name]


def _outcome(call: Any) -> dict[str, Any]:
    try:
        return {"returns": call()}
    except Exception as exc:  # what vLLM raises is the observation
        return {"raises": type(exc).__name__, "message": str(exc)}


def _quant_args(value: dict[str, Any] | None) -> SimpleNamespace | None:
    return None if value is None else SimpleNamespace(**value)


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        config_tree = ast.parse(archive.read(CONFIG_MODULE))
        scheme_tree = ast.parse(archive.read(SCHEME_MODULE)) if SCHEME_MODULE in names else None
    config_class = _class(config_tree, "CompressedTensorsConfig")
    parse_def = _method(config_class, "_parse_sparsity_config")
    support_def = _method(config_class, "supports_cutlass_24")
    record: dict[str, Any] = {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "from_config_parses_sparsity": _calls(_method(config_class, "from_config"), "_parse_sparsity_config"),
        "get_scheme_asks_cutlass_24": _calls(_method(config_class, "get_scheme"), "supports_cutlass_24"),
        "sparse_24_scheme": "absent",
        "parse_sparsity_config": {},
        "supports_cutlass_24": {},
    }
    if parse_def is not None:
        parse = _load(parse_def, config_tree)
        for name, sparsity in SPARSITY.items():
            config = {} if sparsity is None else {"sparsity_config": sparsity}
            result = _outcome(lambda c=config: parse(None, c))
            if "returns" in result:  # (target -> config, ignore list): what a caller sees of it
                targets, ignore = result["returns"]
                result = {"returns": {"targets": sorted(targets), "ignore": list(ignore)}}
            record["parse_sparsity_config"][name] = result
    if support_def is not None:
        supports = _load(support_def, config_tree)
        for s_name, sparsity in SPARSITY.items():
            # get_scheme passes the layer's sparsity config only where a target matches it.
            scheme = (
                None
                if not sparsity or not sparsity.get("targets")
                else _SparsityCompressionConfig.model_validate(sparsity)
            )
            for q_name, (weights, inputs) in QUANTIZATION.items():
                verdict = _outcome(
                    lambda w=weights, i=inputs, s=scheme: supports(_quant_args(w), _quant_args(i), s)
                )
                record["supports_cutlass_24"][f"{s_name} | {q_name}"] = verdict
    scheme_class = _class(scheme_tree, "CompressedTensors24") if scheme_tree is not None else None
    floor_def = _method(scheme_class, "get_min_capability")
    if floor_def is not None:
        floor = _load(floor_def, scheme_tree or ast.Module(body=[], type_ignores=[]))
        record["sparse_24_scheme"] = _outcome(lambda: floor(None))
    return record


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "sparse_24_scheme", "scripts/probe_vllm_sparse_checkpoints.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
