#!/usr/bin/env python3
"""Run each vLLM release's own code that sizes an unset max_num_batched_tokens for `vllm serve`, on a grid of
GPUs and settings, and write the golden table tests/golden/vllm_batch_defaults.json.

    .venv/bin/python scripts/probe_vllm_batch_defaults.py                    # every default release
    .venv/bin/python scripts/probe_vllm_batch_defaults.py --versions 0.33.0  # some

The functions are read out of vllm/engine/arg_utils.py with ast and executed alone on a stand-in EngineArgs:
EngineArgs.get_batch_defaults (0.11.1 on) and the method that applies it,
`_set_default_max_num_seqs_and_batched_tokens_args` (0.12.0 on), `_set_default_args` (0.11.0-0.11.2) or
`_set_default_args_v1` (0.10.x), with usage context OPENAI_API_SERVER. The GPU is a stand-in platform
(total memory in bytes, device name, compute capability); SchedulerConfig's DEFAULT_* class constants and
GiB_bytes are read from the same wheel. What the method leaves in max_num_batched_tokens, max_num_seqs and
enable_chunked_prefill is recorded. Results equal across releases are stored once (`result_sets`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import types
import zipfile
from enum import Enum
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import version_key
from scripts.vllm_release_extractor.records import find_or_download, sha256_file, wheel_probe_parser

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_batch_defaults.json"
SETTERS = (
    "_set_default_max_num_seqs_and_batched_tokens_args",
    "_set_default_args",
    "_set_default_args_v1",
)
HELPERS = ("get_batch_defaults",)
MIB = 1 << 20

# What torch reports as a device's total memory and vLLM's device name; the synthetic ones sit on the
# memory tiers' edges (70 GiB and 160 GiB, a MiB either side) and on GB10's compute capability.
GPUS = [
    {"id": "L4", "name": "NVIDIA L4", "memory_bytes": 23_580_639_232, "capability": [8, 9]},
    {"id": "A10G", "name": "NVIDIA A10G", "memory_bytes": 23_609_475_072, "capability": [8, 6]},
    {"id": "L40S", "name": "NVIDIA L40S", "memory_bytes": 48_305_799_168, "capability": [8, 9]},
    {"id": "A100-80GB", "name": "NVIDIA A100-SXM4-80GB", "memory_bytes": 85_097_971_712, "capability": [8, 0]},
    {"id": "H100", "name": "NVIDIA H100 80GB HBM3", "memory_bytes": 85_520_809_984, "capability": [9, 0]},
    {"id": "RTX-PRO-6000-Blackwell-Server", "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
     "memory_bytes": 102_015_680_512, "capability": [12, 0]},
    {"id": "H200", "name": "NVIDIA H200", "memory_bytes": 150_754_820_096, "capability": [9, 0]},
    {"id": "B200", "name": "NVIDIA B200", "memory_bytes": 192_265_846_784, "capability": [10, 0]},
    {"id": "GB10", "name": "NVIDIA GB10", "memory_bytes": 128_526_278_656, "capability": [12, 1]},
    {"id": "edge-70GiB-less-1MiB", "name": "NVIDIA edge", "memory_bytes": 70 * 1024 * MIB - MIB, "capability": [9, 0]},
    {"id": "edge-70GiB", "name": "NVIDIA edge", "memory_bytes": 70 * 1024 * MIB, "capability": [9, 0]},
    {"id": "edge-160GiB-less-1MiB", "name": "NVIDIA edge", "memory_bytes": 160 * 1024 * MIB - MIB, "capability": [10, 0]},
    {"id": "edge-160GiB", "name": "NVIDIA edge", "memory_bytes": 160 * 1024 * MIB, "capability": [10, 0]},
]  # fmt: skip

# max_model_len straddles each default (2048, 8192, 16384) and its double under performance_mode throughput;
# max_num_seqs 1 and 2 make the max_num_seqs x max_model_len cap bite.
MODEL_LENS = (1000, 2048, 4095, 4096, 4097, 8192, 16384, 16385, 32768, 32769)
SEQS = (1, 2, 256)
MODES = ("balanced", "throughput", "interactivity")


def grid() -> list[dict[str, Any]]:
    rows = []
    for gpu in GPUS:
        for max_model_len in MODEL_LENS:
            for max_num_seqs in SEQS:
                for chunked in (True, False):
                    for mode in MODES:
                        for batched in (None, 3000):
                            rows.append(
                                {
                                    "gpu": gpu["id"],
                                    "max_model_len": max_model_len,
                                    "max_num_seqs": max_num_seqs,
                                    "enable_chunked_prefill": chunked,
                                    "performance_mode": mode,
                                    "max_num_batched_tokens": batched,
                                }
                            )
    return rows


class UsageContext(Enum):  # vllm.usage.usage_lib.UsageContext's members the functions name
    UNKNOWN_CONTEXT = "UNKNOWN_CONTEXT"
    LLM_CLASS = "LLM_CLASS"
    API_SERVER = "API_SERVER"
    OPENAI_API_SERVER = "OPENAI_API_SERVER"
    OPENAI_BATCH_RUNNER = "OPENAI_BATCH_RUNNER"
    ENGINE_CONTEXT = "ENGINE_CONTEXT"


def install_usage_module() -> None:
    """The functions import UsageContext from vllm.usage.usage_lib inside their bodies."""
    for name in ("vllm", "vllm.usage"):
        sys.modules.setdefault(name, types.ModuleType(name))
    usage_lib = types.ModuleType("vllm.usage.usage_lib")
    usage_lib.UsageContext = UsageContext  # type: ignore[attr-defined]
    sys.modules["vllm.usage.usage_lib"] = usage_lib


class _Logger:
    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None


def class_constants(source: str, class_name: str) -> dict[str, Any]:
    """A class's DEFAULT_* constants with literal values."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            found = {}
            for item in node.body:
                target = item.target if isinstance(item, ast.AnnAssign) else None
                if isinstance(item, ast.Assign) and len(item.targets) == 1:
                    target = item.targets[0]
                if isinstance(target, ast.Name) and target.id.startswith("DEFAULT_") and item.value:
                    try:
                        found[target.id] = ast.literal_eval(item.value)
                    except ValueError:
                        continue
            return found
    return {}


def gib_bytes(archive: zipfile.ZipFile) -> int:
    for name in archive.namelist():
        if name.startswith("vllm/utils") and name.endswith(".py"):
            for node in ast.parse(archive.read(name)).body:
                if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "GiB_bytes":
                    return int(eval(compile(ast.Expression(node.value), name, "eval"), {}))  # a literal shift
    raise LookupError("GiB_bytes not found under vllm/utils")


def scheduler_source(archive: zipfile.ZipFile) -> str:
    names = set(archive.namelist())
    path = "vllm/config/scheduler.py" if "vllm/config/scheduler.py" in names else "vllm/config.py"
    return archive.read(path).decode()


def load_engine_args(source: str, namespace: dict[str, Any]) -> tuple[type, str]:
    """A stand-in EngineArgs class carrying the release's own setter and get_batch_defaults, alone."""
    functions: dict[str, ast.FunctionDef] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == "EngineArgs":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name in (*SETTERS, *HELPERS):
                    functions[item.name] = item
    setter = next(name for name in SETTERS if name in functions)
    for function in functions.values():
        function.decorator_list = [d for d in function.decorator_list if ast.unparse(d) == "classmethod"]
        function.returns = None  # annotations name vLLM types the stand-in does not have
        for arg in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs):
            arg.annotation = None
    body: list[ast.stmt] = [
        ast.parse("scheduler_cls = 'vllm.core.scheduler.Scheduler'").body[0],
        # 0.11.x asks for the model's chunked-prefill default first; it is used only where the setting is
        # unset, and the probe always sets it.
        ast.parse("def get_chunked_prefill_prefix_caching_defaults(self, model_config):\n"
                  "    return True, True").body[0],
        *functions.values(),
    ]  # fmt: skip
    cls = ast.ClassDef(name="EngineArgs", bases=[], keywords=[], body=body, decorator_list=[], type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[cls], type_ignores=[]))
    exec(compile(module, "<vllm/engine/arg_utils.py>", "exec"), namespace)  # the wheel's own functions
    return namespace["EngineArgs"], setter


def platform(gpu: dict[str, Any]) -> SimpleNamespace:
    capability = tuple(gpu["capability"])

    def is_device_capability(wanted: Any, device_id: int = 0) -> bool:
        return (tuple(wanted) if isinstance(wanted, tuple) else divmod(int(wanted), 10)) == capability

    return SimpleNamespace(
        get_device_total_memory=lambda device_id=0: gpu["memory_bytes"],
        get_device_name=lambda device_id=0: gpu["name"],
        is_device_capability=is_device_capability,
        is_tpu=lambda: False,
        is_cpu=lambda: False,
    )


def run(cls: type, setter: str, namespace: dict[str, Any], row: dict[str, Any]) -> list[Any]:
    namespace["current_platform"] = platform(next(g for g in GPUS if g["id"] == row["gpu"]))
    this = cls.__new__(cls)
    this.__dict__.update(
        max_num_batched_tokens=row["max_num_batched_tokens"],
        max_num_seqs=None if row["max_num_seqs"] is None else row["max_num_seqs"],
        enable_chunked_prefill=row["enable_chunked_prefill"],
        enable_prefix_caching=True,
        enable_prompt_embeds=False,
        performance_mode=row["performance_mode"],
        pipeline_parallel_size=1,
        tensor_parallel_size=1,
    )
    model_config = SimpleNamespace(
        max_model_len=row["max_model_len"],
        runner_type="generate",
        is_multimodal_model=False,
        is_mm_prefix_lm=False,
        model="probe",
    )
    method = getattr(this, setter)
    arguments = method.__code__.co_varnames[1 : method.__code__.co_argcount]
    extra = {"parallel_config": SimpleNamespace(use_batched_dp_moe=False)}
    method(UsageContext.OPENAI_API_SERVER, model_config, **{k: v for k, v in extra.items() if k in arguments})
    return [this.max_num_batched_tokens, this.max_num_seqs, this.enable_chunked_prefill]


def probe_release(version: str, wheels_dir: Path, rows: list[dict[str, Any]]) -> tuple[dict, list]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        source = archive.read("vllm/engine/arg_utils.py").decode()
        constants = class_constants(scheduler_source(archive), "SchedulerConfig")
        namespace: dict[str, Any] = {
            "GiB_bytes": gib_bytes(archive),
            "SchedulerConfig": SimpleNamespace(**constants),
            "UsageContext": UsageContext,
            "logger": _Logger(),
            "sys": sys,
        }
    cls, setter = load_engine_args(source, namespace)
    namespace["EngineArgs"] = cls
    results = [run(cls, setter, namespace, row) for row in rows]
    record = {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "function": f"vllm/engine/arg_utils.py:EngineArgs.{setter}",
        "scheduler_constants": constants,
        "reads_performance_mode": "performance_mode" in ast.unparse(
            next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == setter)
        ),
    }  # fmt: skip
    return record, results


def dump(table: dict[str, Any]) -> str:
    """JSON with one line per GPU, grid row and result: small diffs when a release is added."""

    def rows(values: list[Any], indent: str) -> str:
        return "[\n" + ",\n".join(indent + json.dumps(v) for v in values) + "\n" + indent[:-1] + "]"

    parts = [
        f' "probed_by": {json.dumps(table["probed_by"])}',
        f' "columns": {json.dumps(table["columns"])}',
        f' "gpus": {rows(table["gpus"], "  ")}',
        f' "grid": {rows(table["grid"], "  ")}',
        f' "releases": {json.dumps(table["releases"], indent=1).replace(chr(10), chr(10) + " ")}',
        ' "result_sets": {\n'
        + ",\n".join(f"  {json.dumps(k)}: {rows(v, '   ')}" for k, v in table["result_sets"].items())
        + "\n }",
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main() -> int:
    args = wheel_probe_parser(__doc__, OUT).parse_args()
    install_usage_module()
    rows = grid()
    table = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    releases: dict[str, Any] = table.get("releases", {})
    sets: dict[str, Any] = table.get("result_sets", {})
    if table.get("grid") not in (None, rows):
        releases, sets = {}, {}  # a new grid: the old results answer other questions
    for version in args.versions:
        record, results = probe_release(version, args.wheels_dir, rows)
        key = hashlib.sha256(json.dumps(results).encode()).hexdigest()[:12]
        sets[key] = results
        releases[version] = {**record, "results": key}
        print(version, record["function"], key, flush=True)
    used = {r["results"] for r in releases.values()}
    out = {
        "probed_by": "scripts/probe_vllm_batch_defaults.py",
        "columns": ["max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill"],
        "gpus": GPUS,
        "grid": rows,
        "releases": dict(sorted(releases.items(), key=lambda kv: version_key(kv[0]))),
        "result_sets": {k: v for k, v in sorted(sets.items()) if k in used},
    }
    args.out.write_text(dump(out), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
