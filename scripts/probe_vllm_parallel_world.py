#!/usr/bin/env python3
"""Run each vLLM release's own code that sizes the parallel world and picks the executor, on a grid of
parallel sizes and GPU counts, and write the golden table tests/golden/vllm_parallel_world.json.

    .venv/bin/python scripts/probe_vllm_parallel_world.py                    # every default release
    .venv/bin/python scripts/probe_vllm_parallel_world.py --versions 0.20.0  # some

From ParallelConfig.__post_init__ (vllm/config.py or vllm/config/parallel.py) the probe takes, with ast,
the statement that sets self.world_size and the block that picks a distributed executor when none is
given and the world is larger than one GPU, and executes them alone on a stand-in ParallelConfig: a CUDA
platform with a given GPU count (cuda_device_count_stateless), with and without Ray installed. What it
records per probe: the world size, and the executor chosen or the ValueError raised. From
vllm/v1/engine/utils.py it records the expression of the devices a data-parallel rank takes (the range
that follows `local_dp_rank * world_size`); from vllm/distributed/utils.py it runs get_pp_indices, the
layers each pipeline stage gets, on layer counts x pipeline sizes; and from the Ray utilities the placement group's wait timeout
and the error raised when it expires (the path 0.10.0-0.11.0 take when the world outgrows the GPUs); and
from the EAGLE proposer's load_model (and the V2 model runner's EAGLE utilities) the test under which the head
shares the target's input embedding.
"""

from __future__ import annotations

import ast
import sys
import types
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

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_parallel_world.json"
TENSOR = (1, 2, 4, 8)
PIPELINE = (1, 2, 4)
PREFILL_CONTEXT = (1, 2)
GPUS = (1, 4, 8)
LAYERS = (1, 28, 32, 36, 40, 61, 64, 80, 94)
STAGES = (1, 2, 3, 4, 8)
RAY_IMPORT_ERROR = "No module named 'ray'"


class _Logger:
    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None


class _CudaPlatform:
    """A CUDA platform with `gpus` devices: is_cuda() true, every other is_*() false."""

    def __init__(self, gpus: int) -> None:
        self.device_count = lambda: gpus

    def __getattr__(self, name: str) -> Any:
        if name.startswith("is_"):
            return lambda *args, **kwargs: name == "is_cuda"
        raise AttributeError(name)


class _StandInParallelConfig:
    """The ParallelConfig fields the block reads; no data parallelism (it does not enter the device test)."""

    def __init__(self, **sizes: int) -> None:
        self.distributed_executor_backend: str | None = None
        self.data_parallel_backend = "mp"
        self.data_parallel_size = 1
        self.placement_group = None
        self.nnodes = 1
        self.world_size = 0
        self.__dict__.update(sizes)

    @property
    def world_size_across_dp(self) -> int:
        return self.world_size * self.data_parallel_size


def parallel_source(archive: zipfile.ZipFile) -> tuple[str, ast.Module]:
    names = set(archive.namelist())
    path = "vllm/config/parallel.py" if "vllm/config/parallel.py" in names else "vllm/config.py"
    return path, ast.parse(archive.read(path))


def post_init(tree: ast.Module) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "ParallelConfig":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__post_init__":
                    return item
    raise LookupError("ParallelConfig.__post_init__ not found")


def world_assignment(function: ast.FunctionDef) -> ast.Assign:
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "self.world_size":
            return node
    raise LookupError("self.world_size = ... not found")


def executor_block(function: ast.FunctionDef) -> ast.If:
    """`if self.distributed_executor_backend is None and self.world_size > 1:` and its body."""
    for node in ast.walk(function):
        if isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "distributed_executor_backend is None" in test and (
                "world_size > 1" in test or "world_size_across_dp > 1" in test
            ):
                return node
    raise LookupError("the executor-choosing block not found")


def device_count_branch(block: ast.If) -> dict[str, Any]:
    """The branch taken when cuda_device_count_stateless() < self.world_size: its test and what it does."""
    for node in ast.walk(block):
        test = ast.unparse(node.test) if isinstance(node, ast.If) else ""
        if "< self.world_size" in test and (
            "cuda_device_count_stateless()" in test or "device_count()" in test
        ):
            raises = [ast.unparse(n.exc) for n in node.body if isinstance(n, ast.Raise) and n.exc is not None]
            nested = [ast.unparse(n.test) for n in node.body if isinstance(n, ast.If)]
            return {"test": ast.unparse(node.test), "raises": raises, "nested_tests": nested}
    raise LookupError("the device-count branch not found")


def install_ray_utils(ray_found: bool) -> None:
    """The executor block imports ray_utils from vllm.executor (0.10.x) or vllm.v1.executor."""
    ray_utils = types.ModuleType("ray_utils")
    ray_utils.ray_is_available = lambda: ray_found  # type: ignore[attr-defined]
    ray_utils.ray_import_err = None if ray_found else RAY_IMPORT_ERROR  # type: ignore[attr-defined]
    for package in ("vllm", "vllm.executor", "vllm.v1", "vllm.v1.executor"):
        module = sys.modules.setdefault(package, types.ModuleType(package))
        module.__path__ = []  # type: ignore[attr-defined]
    for package in ("vllm.executor", "vllm.v1.executor"):
        sys.modules[package].ray_utils = ray_utils  # type: ignore[attr-defined]
        sys.modules[f"{package}.ray_utils"] = ray_utils
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False  # type: ignore[attr-defined]
    sys.modules["ray"] = ray


def load_probe(assign: ast.Assign, block: ast.If) -> Any:
    """def probe(self): the wheel's world_size statement and executor block, returning the executor."""
    body = [assign, block, ast.parse("return self.distributed_executor_backend").body[0]]
    function = ast.FunctionDef(
        name="probe",
        args=ast.arguments(
            posonlyargs=[], args=[ast.arg("self")], kwonlyargs=[], kw_defaults=[], defaults=[]
        ),
        body=body,
        decorator_list=[],
        type_params=[],
    )
    module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    return module


def run(module: ast.Module, gpus: int, ray_found: bool, sizes: dict[str, int]) -> dict[str, Any]:
    install_ray_utils(ray_found)
    namespace: dict[str, Any] = {
        "current_platform": _CudaPlatform(gpus),
        "cuda_device_count_stateless": lambda: gpus,
        "envs": SimpleNamespace(VLLM_XLA_USE_SPMD=False),
        "logger": _Logger(),
    }
    exec(compile(module, "<vllm ParallelConfig.__post_init__>", "exec"), namespace)  # the wheel's own code
    this = _StandInParallelConfig(**sizes)
    try:
        backend = namespace["probe"](this)
    except ValueError as exc:
        return {"world_size": this.world_size, "error": "ValueError", "message": str(exc)}
    return {"world_size": this.world_size, "executor": backend or "uni"}


def data_parallel_devices(archive: zipfile.ZipFile) -> dict[str, Any]:
    """The range of device ids data-parallel rank `local_dp_rank` takes, as vllm/v1/engine/utils.py writes it."""
    tree = ast.parse(archive.read("vllm/v1/engine/utils.py"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "range" and len(node.args) == 2:
            start = ast.unparse(node.args[0])
            if start in ("local_dp_rank * world_size", "start"):
                function = next(
                    f.name
                    for f in ast.walk(tree)
                    if isinstance(f, ast.FunctionDef) and any(n is node for n in ast.walk(f))
                )
                return {"function": f"vllm/v1/engine/utils.py:{function}", "range": ast.unparse(node)}
    raise LookupError("the data-parallel device range not found")


def ray_placement_timeout(archive: zipfile.ZipFile) -> dict[str, Any] | None:
    """PG_WAIT_TIMEOUT and the error raised when the placement group is not ready in time."""
    for path in ("vllm/executor/ray_utils.py", "vllm/v1/executor/ray_utils.py"):
        if path not in archive.namelist():
            continue
        tree = ast.parse(archive.read(path))
        timeout = next(
            (
                ast.literal_eval(n.value)
                for n in tree.body
                if isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "PG_WAIT_TIMEOUT"
            ),
            None,
        )
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "_wait_until_pg_ready":
                raises = [ast.unparse(n.exc) for n in ast.walk(node) if isinstance(n, ast.Raise) and n.exc]
                return {"file": path, "pg_wait_timeout_s": timeout, "raises": raises}
    return None


def pipeline_stages(archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    """get_pp_indices run for every stage of each (layers, pipeline size): the layers per stage."""
    tree = ast.parse(archive.read("vllm/distributed/utils.py"))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "get_pp_indices")
    node.decorator_list, node.returns = [], None
    for arg in node.args.args:
        arg.annotation = None
    namespace: dict[str, Any] = {"envs": SimpleNamespace(VLLM_PP_LAYER_PARTITION=None), "logger": _Logger()}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "<vllm/distributed/utils.py>", "exec"), namespace)
    function = namespace["get_pp_indices"]
    rows = []
    for layers in LAYERS:
        for stages in STAGES:
            spans = [function(layers, rank, stages) for rank in range(stages)]
            rows.append(
                {"layers": layers, "pipeline_parallel_size": stages, "per_stage": [b - a for a, b in spans]}
            )
    return rows


def draft_embedding_sharing(archive: zipfile.ZipFile) -> dict[str, Any]:
    """The test under which an EAGLE proposer's load_model gives the head the target's input embedding (the
    `if` that tests the pipeline group's world size and assigns the head's embed_tokens)."""
    for path in ("vllm/v1/spec_decode/llm_base_proposer.py", "vllm/v1/spec_decode/eagle.py"):
        if path not in archive.namelist():
            continue
        tree = ast.parse(archive.read(path))
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for method in (
                n
                for n in cls.body
                if isinstance(n, ast.FunctionDef) and n.name in ("load_model", "_maybe_share_embeddings")
            ):
                for node in ast.walk(method):
                    if (
                        isinstance(node, ast.If)
                        and "get_pp_group().world_size" in ast.unparse(node.test)
                        and "embed_tokens =" in ast.unparse(node)
                    ):
                        block = ast.unparse(node)
                        return {
                            "function": f"{path}:{cls.name}.{method.name}",
                            "test": ast.unparse(node.test),
                            # From 0.11.1 a head with an embedding of its own shares only where it equals
                            # the target's, element by element (one without an embedding always shares).
                            "own_embedding_must_equal_target": "torch.equal(" in block,
                            "v2_runner": _v2_embedding_sharing(archive),
                        }
    raise LookupError("the EAGLE head's embedding-sharing test not found")


V2_EAGLE_UTILS = "vllm/v1/worker/gpu/spec_decode/eagle/utils.py"


def _v2_embedding_sharing(archive: zipfile.ZipFile) -> dict[str, Any] | None:
    """The V2 model runner's counterpart, where the release has one: the pipeline-size test of the function
    that shares the embedding, and whether targets build an input embedding on their last stage for the
    drafter (spec_decode_needs_target_embed in vllm/model_executor/models/utils.py)."""
    if V2_EAGLE_UTILS not in archive.namelist():
        return None
    tree = ast.parse(archive.read(V2_EAGLE_UTILS))
    utils = archive.read("vllm/model_executor/models/utils.py").decode()
    record: dict[str, Any] = {
        "function": f"{V2_EAGLE_UTILS}:load_eagle_model",
        "test": None,  # early V2 runners test no pipeline size
        "target_builds_embedding_for_drafter": "def spec_decode_needs_target_embed" in utils,
    }
    for function in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        for node in ast.walk(function):
            if isinstance(node, ast.If) and "get_pp_group().world_size" in ast.unparse(node.test):
                return {
                    **record,
                    "function": f"{V2_EAGLE_UTILS}:{function.name}",
                    "test": ast.unparse(node.test),
                }
    return record


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        path, tree = parallel_source(archive)
        dp_devices = data_parallel_devices(archive)
        ray_timeout = ray_placement_timeout(archive)
        stages = pipeline_stages(archive)
        sharing = draft_embedding_sharing(archive)
    function = post_init(tree)
    assign, block = world_assignment(function), executor_block(function)
    module = load_probe(assign, block)
    uses_pcp = "prefill_context_parallel_size" in ast.unparse(assign.value)
    probes = []
    for tp in TENSOR:
        for pp in PIPELINE:
            for pcp in PREFILL_CONTEXT if uses_pcp else (1,):
                for gpus in GPUS:
                    for ray_found in (False, True):
                        sizes = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp}
                        if uses_pcp:
                            sizes["prefill_context_parallel_size"] = pcp
                        probes.append(
                            {
                                "inputs": {**sizes, "gpus": gpus, "ray_found": ray_found},
                                "verdict": run(module, gpus, ray_found, sizes),
                            }
                        )
    return {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "function": f"{path}:ParallelConfig.__post_init__",
        "world_size": ast.unparse(assign.value),
        "device_count_branch": device_count_branch(block),
        "data_parallel_devices": dp_devices,
        "ray_placement_group": ray_timeout,
        "pipeline_stages": stages,
        "draft_embedding_shared_if": sharing,
        "probes": probes,
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "world_size", "scripts/probe_vllm_parallel_world.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
