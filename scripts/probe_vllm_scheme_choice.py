#!/usr/bin/env python3
"""Run each vLLM release's own choice of a compressed-tensors scheme on a grid of checkpoint quantizations x
GPUs, and write the golden table tests/golden/vllm_scheme_choice.json.

    .venv/bin/python scripts/probe_vllm_scheme_choice.py                    # every default release
    .venv/bin/python scripts/probe_vllm_scheme_choice.py --versions 0.15.1  # some

From vllm/model_executor/layers/quantization/compressed_tensors/compressed_tensors.py the probe takes, with
ast, every method of CompressedTensorsConfig and executes `_get_scheme_from_parts` (which `get_scheme` calls
for each layer when the engine loads the model), with the class's own predicates (`_is_fp8_w8a8`,
`_is_nvfp4_format`, ...) and `_check_scheme_supported`, and `is_activation_quantization_format` from
compressed_tensors/utils.py. Stand-ins: compressed-tensors' enums (values as compressed-tensors defines them),
its QuantizationArgs (its field defaults), torch's dtypes as names, a CUDA platform of the probe's compute capability, vLLM's envs at
their defaults (VLLM_USE_NVFP4_CT_EMULATIONS off), `cutlass_fp4_supported` as vLLM's C++
cutlass_scaled_mm_supports_fp4 decides it (compute capability >= 10.0; every DLC image links CUDA >= 12.8),
and a recorder for each scheme class. Recorded per release and probe (quantization | compute capability): the
scheme class vLLM picks, and that class's own get_min_capability() run from schemes/ (get_scheme then refuses
a GPU below it).
"""

from __future__ import annotations

import ast
import enum
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

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_scheme_choice.json"
CT_DIR = "vllm/model_executor/layers/quantization/compressed_tensors/"
CONFIG_MODULE = f"{CT_DIR}compressed_tensors.py"
UTILS_MODULE = f"{CT_DIR}utils.py"
SCHEMES_DIR = f"{CT_DIR}schemes/"

# The GPUs of the catalog's instance families, by compute capability.
COMPUTE_CAPABILITIES = ("7.0", "7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0")


def _args(kind: str, bits: int, strategy: str, dynamic: bool = False, group_size: int | None = None) -> dict:
    return {
        "type": kind,
        "num_bits": bits,
        "strategy": strategy,
        "dynamic": dynamic,
        "group_size": group_size,
    }


_NVFP4 = _args("float", 4, "tensor_group", group_size=16)
# (checkpoint format, weights, input_activations) of a config group, as compressed-tensors writes them, by the
# name the library's compressed_tensors_scheme() gives them.
QUANTIZATION: dict[str, tuple[str, dict[str, Any], dict[str, Any] | None]] = {
    "w8a8_fp8": ("float-quantized", _args("float", 8, "channel"), _args("float", 8, "token", True)),
    "w8a16_fp8": ("float-quantized", _args("float", 8, "channel"), None),
    "w8a8_int8": ("int-quantized", _args("int", 8, "channel"), _args("int", 8, "token", True)),
    "w4a16": ("pack-quantized", _args("int", 4, "group", group_size=128), None),
    "w8a16": ("pack-quantized", _args("int", 8, "channel"), None),
    "w4a16_nvfp4": ("nvfp4-pack-quantized", _NVFP4, None),
    "w4a4_nvfp4": ("nvfp4-pack-quantized", _NVFP4, {**_NVFP4, "dynamic": "local"}),
    "w4a16_sparse24": ("marlin-24", _args("int", 4, "group", group_size=128), None),
}


class CompressionFormat(enum.Enum):  # compressed_tensors.config.CompressionFormat
    dense = "dense"
    sparse_bitmask = "sparse-bitmask"
    sparse_24_bitmask = "sparse-24-bitmask"
    int_quantized = "int-quantized"
    float_quantized = "float-quantized"
    naive_quantized = "naive-quantized"
    pack_quantized = "pack-quantized"
    marlin_24 = "marlin-24"
    mixed_precision = "mixed-precision"
    nvfp4_pack_quantized = "nvfp4-pack-quantized"
    mxfp4_pack_quantized = "mxfp4-pack-quantized"


class QuantizationStrategy(enum.StrEnum):  # compressed_tensors.quantization.QuantizationStrategy
    TENSOR = "tensor"
    CHANNEL = "channel"
    GROUP = "group"
    BLOCK = "block"
    TOKEN = "token"
    TENSOR_GROUP = "tensor_group"
    ATTN_HEAD = "attn_head"


class QuantizationType(enum.StrEnum):  # compressed_tensors.quantization.QuantizationType
    INT = "int"
    FLOAT = "float"


class ActivationOrdering(enum.StrEnum):
    GROUP = "group"
    WEIGHT = "weight"
    DYNAMIC = "dynamic"
    STATIC = "static"


def _quantization_args(value: dict[str, Any] | None) -> SimpleNamespace | None:
    # compressed_tensors.quantization.QuantizationArgs' fields and defaults.
    defaults = {
        "num_bits": 8,
        "type": "int",
        "symmetric": True,
        "group_size": None,
        "strategy": None,
        "block_structure": None,
        "dynamic": False,
        "actorder": None,
        "observer": None,
        "observer_kwargs": {},
        "scale_dtype": None,
        "zp_dtype": None,
    }
    return None if value is None else SimpleNamespace(**{**defaults, **value})


class _Capability(tuple):
    def to_int(self) -> int:
        return self[0] * 10 + self[1]

    @property
    def major(self) -> int:
        return self[0]

    @property
    def minor(self) -> int:
        return self[1]


class _Platform:
    """vllm.platforms.current_platform on a CUDA GPU of this compute capability."""

    def __init__(self, cc: str) -> None:
        major, minor = (int(p) for p in cc.split("."))
        self.capability = _Capability((major, minor))

    def get_device_capability(self, device_id: int = 0) -> _Capability:
        return self.capability

    def has_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        wanted = capability if isinstance(capability, int) else capability[0] * 10 + capability[1]
        return self.capability.to_int() >= wanted

    def is_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        wanted = capability if isinstance(capability, int) else capability[0] * 10 + capability[1]
        return self.capability.to_int() == wanted

    def is_device_capability_family(self, capability: int, device_id: int = 0) -> bool:
        return self.capability.to_int() // 10 == capability // 10

    def is_cuda(self) -> bool:
        return True

    def is_rocm(self) -> bool:
        return False

    def is_cpu(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False

    def is_cuda_alike(self) -> bool:
        return True


class _Envs:
    """vllm.envs at the defaults a SageMaker container starts with."""

    VLLM_USE_NVFP4_CT_EMULATIONS = False
    VLLM_USE_FLASHINFER_MOE_FP4 = False
    VLLM_USE_MARLIN_FP4 = False

    def __getattr__(self, name: str) -> Any:
        return False


class _Logger:
    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _strip(function: ast.FunctionDef, keep: tuple[str, ...] = ("staticmethod", "classmethod")) -> None:
    """Annotations and decorators other than staticmethod / classmethod dropped (they name torch types)."""
    function.decorator_list = [d for d in function.decorator_list if isinstance(d, ast.Name) and d.id in keep]
    function.returns = None
    for arg in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]:
        arg.annotation = None
    for arg in (function.args.vararg, function.args.kwarg):
        if arg is not None:
            arg.annotation = None
    body: list[ast.stmt] = []
    for node in function.body:
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                continue
            node = ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)
        body.append(node)
    function.body = body


def _exec(nodes: list[ast.stmt], namespace: dict[str, Any]) -> None:
    code = ast.fix_missing_locations(ast.Module(body=nodes, type_ignores=[]))
    exec(compile(code, "<vllm>", "exec"), namespace)  # the wheel's own code, on stand-ins


def _scheme_floors(archive: zipfile.ZipFile, platform: _Platform) -> dict[str, Any]:
    """Each scheme class's get_min_capability(), run from its own module (or what it raises)."""
    floors: dict[str, Any] = {}
    for name in sorted(archive.namelist()):
        if not (name.startswith(SCHEMES_DIR) and name.endswith(".py")):
            continue
        tree = ast.parse(archive.read(name))
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            method = next(
                (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "get_min_capability"),
                None,
            )
            if method is None:
                continue
            _strip(method, keep=())
            namespace: dict[str, Any] = {"envs": _Envs(), "current_platform": platform}
            try:
                _exec([method], namespace)
                floors[node.name] = {"returns": namespace["get_min_capability"](None)}
            except Exception as exc:  # what the wheel's code does is the observation
                floors[node.name] = {"raises": type(exc).__name__, "message": str(exc)}
    return floors


class _Recorder:
    """A scheme class stand-in: constructing it records which class vLLM chose."""

    chosen: str = ""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def _config_class(tree: ast.Module, utils: ast.Module, platform: _Platform, floors: dict[str, Any]) -> Any:
    config = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "CompressedTensorsConfig")
    methods = [n for n in config.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"]
    for method in methods:
        _strip(method)
    used = {n.id for m in methods for n in ast.walk(m) if isinstance(n, ast.Name)}
    namespace: dict[str, Any] = {
        "CompressionFormat": CompressionFormat,
        "QuantizationStrategy": QuantizationStrategy,
        "QuantizationType": QuantizationType,
        "ActivationOrdering": ActivationOrdering,
        "current_platform": platform,
        "envs": _Envs(),
        "logger": _Logger(),
        # vLLM's C++ cutlass_scaled_mm_supports_fp4: compute capability >= 100 (and CUDA >= 12.8).
        "cutlass_fp4_supported": lambda: platform.capability.to_int() >= 100,
        # dtypes as names: the predicates only compare QuantizationArgs.scale_dtype with them.
        "torch": SimpleNamespace(
            **{t: f"torch.{t}" for t in ("uint8", "int8", "float32", "float16", "bfloat16", "float8_e4m3fn")}
        ),
        "WNA16_SUPPORTED_BITS": [4, 8],
        "W4A16SPARSE24_SUPPORTED_BITS": [4],
    }
    for name in used:
        if name.startswith("CompressedTensors") and name != "CompressedTensorsConfig":
            floor = floors.get(name, {}).get("returns")
            namespace[name] = type(
                name,
                (_Recorder,),
                {"get_min_capability": classmethod(lambda cls, f=floor: f), "chosen": name},
            )
    helper = next(
        n
        for n in utils.body
        if isinstance(n, ast.FunctionDef) and n.name == "is_activation_quantization_format"
    )
    _strip(helper)
    _exec([helper], namespace)
    class_def = ast.ClassDef(
        name="CompressedTensorsConfig", bases=[], keywords=[], body=methods, decorator_list=[], type_params=[]
    )
    _exec([class_def], namespace)
    return namespace["CompressedTensorsConfig"]


def _choice(config_class: Any, quant_format: str, weights: Any, inputs: Any) -> dict[str, Any]:
    instance = config_class.__new__(config_class)
    instance.quant_format = quant_format
    try:
        scheme = instance._get_scheme_from_parts(
            _quantization_args(weights), _quantization_args(inputs), format=quant_format
        )
    except TypeError:  # releases whose _get_scheme_from_parts takes no format
        try:
            scheme = instance._get_scheme_from_parts(_quantization_args(weights), _quantization_args(inputs))
        except Exception as exc:
            return {"raises": type(exc).__name__, "message": str(exc)}
    except Exception as exc:
        return {"raises": type(exc).__name__, "message": str(exc)}
    return {"returns": type(scheme).chosen}


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    record: dict[str, Any] = {"wheel": wheel.name, "sha256": sha256_file(wheel), "choice": {}}
    with zipfile.ZipFile(wheel) as archive:
        utils = ast.parse(archive.read(UTILS_MODULE))
        for cc in COMPUTE_CAPABILITIES:
            platform = _Platform(cc)
            floors = _scheme_floors(archive, platform)
            config_class = _config_class(ast.parse(archive.read(CONFIG_MODULE)), utils, platform, floors)
            for name, (quant_format, weights, inputs) in QUANTIZATION.items():
                choice = _choice(config_class, quant_format, weights, inputs)
                if "returns" in choice:  # the chosen class's own floor, which get_scheme holds the GPU to
                    choice["min_capability"] = floors.get(choice["returns"], {"absent": True})
                record["choice"][f"{name} | {cc}"] = choice
    record["summary"] = {
        k: v.get("returns", v.get("raises"))
        for k, v in record["choice"].items()
        if k.startswith("w4a4_nvfp4")
    }
    return record


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "summary", "scripts/probe_vllm_scheme_choice.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
