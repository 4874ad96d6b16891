"""Parallelism rules: tensor parallel ranks, and the whole world of ranks (pipeline, data, prefill context)
against the GPUs."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.catalog.vllm_startup_checks import ParallelWorldChecks
from speculative_infra.parallel_sizes import engine_parallel_size, engine_parallel_value
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.model_registry import later_releases_allowing, loaded_class


@rule(
    code="SI310",
    name="tensor-parallel-within-gpus",
    severity=Severity.ERROR,
    title="tensor_parallel_size is at most the instance's GPU count",
    rationale="vLLM needs one GPU per tensor-parallel rank on the instance.",
)
def tensor_parallel_within_gpus(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.instance is None or d.tensor_parallel_size <= d.instance.gpu_count:
        return
    yield Violation(
        message=f"tensor_parallel_size {d.tensor_parallel_size} exceeds the {d.instance.gpu_count} GPU(s) of "
        f"{d.instance.name}; allowed: 1 to {d.instance.gpu_count}",
        fix=f"set engine.tensor_parallel_size to at most {d.instance.gpu_count}, or pick a larger instance",
        field="engine.tensor_parallel_size",
    )


@rule(
    code="SI311",
    name="tensor-parallel-divides-heads",
    severity=Severity.ERROR,
    title="tensor_parallel_size divides the model's attention heads",
    rationale="vLLM shards attention heads evenly across ranks and refuses an uneven split.",
)
def tensor_parallel_divides_heads(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None:
        return
    heads = d.model.num_attention_heads
    tp = d.tensor_parallel_size
    if heads % tp:
        # Degrees an instance can hold: this one's GPUs, or the largest instance's in the catalog.
        most = d.instance.gpu_count if d.instance is not None else load_catalog().max_gpus_per_instance()
        allowed = [n for n in range(1, heads + 1) if heads % n == 0 and n <= most]
        yield Violation(
            message=f"tensor_parallel_size {tp} does not divide the {heads} attention heads of {d.model_id}; "
            f"allowed: {', '.join(map(str, allowed))}",
            fix="set engine.tensor_parallel_size to one of the allowed values",
            field="engine.tensor_parallel_size",
        )


@rule(
    code="SI312",
    name="tensor-parallel-uses-all-gpus",
    severity=Severity.WARNING,
    title="A single-model real-time endpoint uses all of its GPUs",
    rationale="One vLLM server per instance: GPUs beyond tensor_parallel_size are paid for and idle.",
)
def tensor_parallel_uses_all_gpus(d: ResolvedDeployment) -> Iterator[Violation]:
    # Inference components place several copies on one instance: fewer GPUs per copy is the point.
    if d.instance is None or d.gpus_used >= d.instance.gpu_count:
        return
    if d.endpoint_kind == "inference_component":
        return
    uses = f"tensor_parallel_size {d.tensor_parallel_size} uses"
    if d.gpus_used != d.tensor_parallel_size:
        uses = f"the parallel sizes ({_layout(d)}) use"
    per_tensor_group = d.gpus_used // d.tensor_parallel_size  # the other sizes' ranks
    yield Violation(
        message=f"{uses} {d.gpus_used} of the {d.instance.gpu_count} GPUs of {d.instance.name}; the others stay idle",
        fix=f"raise engine.tensor_parallel_size to {d.instance.gpu_count // per_tensor_group} if the heads "
        "allow, or pick a smaller instance",
        field="engine.tensor_parallel_size",
    )


def _layout(d: ResolvedDeployment) -> str:
    """The parallel sizes the spec sets, as `tensor 2 x pipeline 2`."""
    parts = [f"tensor {d.tensor_parallel_size}"]
    for key, label in _OTHER_SIZES:
        value = engine_parallel_size(d.engine, key)
        local = d.local_data_parallel_size if key == "data_parallel_size" else value
        if local != value:  # data_parallel_size_local: the ranks this node runs
            parts.append(f"{label} {value} ({local} on this node)")
        elif value != 1:
            parts.append(f"{label} {value}")
    return " x ".join(parts)


_OTHER_SIZES = (
    ("pipeline_parallel_size", "pipeline"),
    ("prefill_context_parallel_size", "prefill context"),
    ("data_parallel_size", "data"),
)


@rule(
    code="SI313",
    name="parallel-ranks-within-gpus",
    severity=Severity.ERROR,
    title="Tensor x pipeline x prefill-context x data parallel ranks fit the GPUs",
    rationale="vLLM runs one process per rank, one GPU each: ParallelConfig refuses a world (pipeline x tensor "
    "x prefill-context parallel ranks) larger than the node's GPUs, and each data-parallel rank takes a "
    "world of GPUs of its own.",
)
def parallel_ranks_within_gpus(d: ResolvedDeployment) -> Iterator[Violation]:
    below_one = [
        (k, v) for k in _RANK_KEYS if (v := engine_parallel_value(d.engine, k)) is not None and v < 1
    ]
    for key, value in below_one:
        yield Violation(
            message=f"engine.{key} is {value}; allowed: an integer of at least 1 (the number of such ranks)",
            fix=f"set engine.{key} to 1 or more, or leave it out",
            field=f"engine.{key}",
        )
    if below_one:
        return
    local = engine_parallel_value(d.engine, "data_parallel_size_local")
    if local is not None and local != d.data_parallel_size:
        yield _local_ranks_violation(d, local)
        return
    if d.instance is None or d.tensor_parallel_size > d.instance.gpu_count:
        return  # SI310 says it for the tensor-parallel size alone
    gpus, where = d.instance.gpu_count, f"the {d.instance.gpu_count} GPU(s) of {d.instance.name}"
    component = d.endpoint_kind == "inference_component"
    if component:
        # The component asks SageMaker for tensor_parallel_size accelerators: all its container sees.
        gpus = d.tensor_parallel_size
        where = f"the {gpus} accelerator(s) the inference component requests (its tensor_parallel_size)"
    checks = load_catalog().vllm.parallel_world_checks
    release = d.container.vllm_version if d.container is not None else None
    world = d.world_size
    if release is not None and not checks.counts_prefill_context(release):
        world = d.tensor_parallel_size * d.pipeline_parallel_size  # SI500 refuses the flag there
    ranks = d.local_data_parallel_size
    if world * ranks <= gpus:
        return
    if world > gpus:
        key = "pipeline_parallel_size" if d.pipeline_parallel_size > 1 else "prefill_context_parallel_size"
        allowed = gpus // (world // engine_parallel_size(d.engine, key) * ranks)
        fix = f"set engine.{key} to at most {allowed}"
        if allowed < 1:  # the other sizes alone fill the GPUs
            fix = (
                "set engine.pipeline_parallel_size, prefill_context_parallel_size and data_parallel_size to 1"
            )
        yield Violation(
            message=f"{_layout(d)} makes a world of {world} ranks, one GPU each, on {where}; "
            + _world_refusal(checks, release, world, gpus, d.engine.get("distributed_executor_backend")),
            fix=fix if component else f"{fix}, or lower engine.tensor_parallel_size",
            field=f"engine.{key}",
        )
        return
    key = "data_parallel_size_local" if "data_parallel_size_local" in d.engine else "data_parallel_size"
    yield Violation(
        message=f"{_layout(d)} needs {world * ranks} GPUs, {ranks} data-parallel ranks of {world} each, on "
        f"{where}; vLLM gives data-parallel rank r the GPUs r x {world} to (r + 1) x {world} - 1 "
        f"({checks.data_parallel_devices}), so rank {gpus // world}'s GPUs do not exist and its engine "
        "cannot start",
        fix=f"set engine.{key} to at most {gpus // world}",
        field=f"engine.{key}",
    )


def _local_ranks_violation(d: ResolvedDeployment, local: int) -> Violation:
    """data_parallel_size_local other than data_parallel_size: refused above it, a start-up that never
    ends below it (the other ranks would run on nodes a SageMaker endpoint instance does not have)."""
    total = d.data_parallel_size
    ranks = min(local, total)
    if d.instance is not None and d.world_size <= d.instance.gpu_count:
        ranks = min(ranks, d.instance.gpu_count // d.world_size)  # the fix must fit the GPUs too
    fix = f"set engine.data_parallel_size to {ranks} and leave engine.data_parallel_size_local out"
    if local > total:
        return Violation(
            message=f"engine.data_parallel_size_local is {local}, more than data_parallel_size {total}; vLLM "
            f"refuses at start-up ('data_parallel_size_local ({local}) must be <= data_parallel_size "
            f"({total})', ParallelConfig.__post_init__)",
            fix=fix,
            field="engine.data_parallel_size_local",
        )
    return Violation(
        message=f"engine.data_parallel_size_local {local} starts {local} of the {total} data-parallel ranks on "
        f"this instance; vLLM's front end then waits, with no time limit, for the other {total - local} to "
        "connect from other nodes (wait_for_engine_startup in vllm/v1/engine/utils.py), and a SageMaker "
        "endpoint instance has no other node: the endpoint never becomes healthy",
        fix=fix,
        field="engine.data_parallel_size_local",
    )


_RANK_KEYS = (
    "pipeline_parallel_size",
    "prefill_context_parallel_size",
    "data_parallel_size",
    "data_parallel_size_local",
)


@rule(
    code="SI314",
    name="pipeline-parallel-model-supported",
    severity=Severity.ERROR,
    title="pipeline_parallel_size above 1 only for a model class that implements vLLM's SupportsPP",
    rationale="ModelConfig.verify_with_parallel_config stops the engine when pipeline parallelism meets a "
    "model class without the SupportsPP interface. Which architectures implement it is read from each "
    "release's wheel.",
)
def pipeline_parallel_model_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.pipeline_parallel_size <= 1 or d.vllm_release is None or d.model is None:
        return
    release = d.vllm_release.vllm_version
    known = load_vllm_model_interfaces().releases
    interfaces = known.get(release)
    if interfaces is None:
        return
    arch, fallback = loaded_class(d, release)
    if interfaces.supports_pipeline_parallel(arch) is not False:
        return
    later = later_releases_allowing(d, release, lambda i, cls: bool(i.supports_pipeline_parallel(cls)))
    loads_as = (
        f"{d.model.architecture} is not registered, so {d.model_id} loads as the Transformers backend's {arch}"
        if fallback
        else f"{arch} (the class {d.model_id} loads as)"
    )
    yield Violation(
        message=f"in vLLM {release}, {loads_as} does not implement SupportsPP: with pipeline_parallel_size "
        f"{d.pipeline_parallel_size} vLLM stops at start-up with '{interfaces.pipeline_parallel_refusal}' "
        f"(read from {interfaces.wheel})",
        fix="set engine.pipeline_parallel_size to 1 and split the model with engine.tensor_parallel_size"
        + (f", or use a container with vLLM {later[0]} or newer, where it implements it" if later else ""),
        field="engine.pipeline_parallel_size",
    )


def _world_refusal(
    checks: ParallelWorldChecks, release: str | None, world: int, gpus: int, backend: object
) -> str:
    ray = (
        f"hands such a world to Ray, whose placement group waits {checks.ray_placement_wait_s} s for {world} "
        'GPUs the node does not have and then fails ("Cannot provide a placement group ...")'
    )
    if backend == "ray":  # vLLM checks the GPU count only where it picks the executor itself
        return f"with distributed_executor_backend ray, vLLM {ray}"
    if backend is not None:
        return (
            f"with distributed_executor_backend {str(backend)[:40]!r} vLLM skips its GPU-count check, and the "
            "ranks beyond the node's GPUs find no device, so the engine cannot start"
        )
    if release is None:
        return "vLLM refuses a world larger than the node's GPUs"
    refusal = checks.refusal(release)
    if refusal is not None:
        return f'vLLM {release} refuses it at start-up: "{refusal.message.format(world=world, gpus=gpus)}"'
    return f'vLLM {release} {ray}; without Ray installed it stops at once ("Unable to load Ray")'
