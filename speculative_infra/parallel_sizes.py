"""Parallel sizes as the engine reads them: pipeline, data and prefill-context ranks next to tensor parallelism.

Used by resolve (the default tensor_parallel_size, the memory model's stage split, the GPUs a deployment
occupies) and by the parallel-layout rules (SI312, SI313), so that both read a size the same way.
"""

from __future__ import annotations

from typing import Any

from speculative_infra.catalog.models import ContainerImage, InstanceType, ModelFacts
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.human_int import parses_as_int

# The sizes that, with tensor_parallel_size, decide how many GPUs a deployment spans.
OTHER_PARALLEL_KEYS = ("pipeline_parallel_size", "data_parallel_size", "prefill_context_parallel_size")


def engine_parallel_value(engine: dict[str, Any], key: str) -> int | None:
    """A parallel size as vLLM's command line reads it (int(): 2 or "2"); None where unset or unreadable
    (SI502 reports a value that is not an integer)."""
    value = engine.get(key)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and parses_as_int(value) else None


def engine_parallel_size(engine: dict[str, Any], key: str) -> int:
    """A parallel size the spec sets (pipeline, data, prefill context), 1 where unset; one below 1 is SI313's
    to report, and counts as 1 here."""
    value = engine_parallel_value(engine, key)
    return value if value is not None and value >= 1 else 1


def memory_stages(engine: dict[str, Any], model: ModelFacts, container: ContainerImage | None) -> int:
    """The pipeline size the memory model splits layers by: 1 for a multimodal architecture, whose encoders
    vLLM builds on every stage (their size is not in the facts), so the whole model is counted."""
    stages = engine_parallel_size(engine, "pipeline_parallel_size")
    release = container.vllm_version if container is not None else None
    interfaces = load_vllm_model_interfaces().releases.get(release or "")
    if stages > 1 and interfaces is not None and model.architecture in interfaces.multimodal_architectures:
        return 1
    return stages


def local_data_parallel_size(engine: dict[str, Any]) -> int:
    """Data-parallel ranks on this node: data_parallel_size_local where set, else data_parallel_size
    (vLLM's default for one node)."""
    local = engine_parallel_value(engine, "data_parallel_size_local")
    return local if local is not None and local >= 1 else engine_parallel_size(engine, "data_parallel_size")


def other_parallel_sizes(engine: dict[str, Any]) -> int:
    """The GPUs per tensor-parallel group on this node: pipeline x prefill-context parallel sizes x the
    data-parallel ranks on this node."""
    product = local_data_parallel_size(engine)
    for key in OTHER_PARALLEL_KEYS:
        if key != "data_parallel_size":
            product *= engine_parallel_size(engine, key)
    return product


def default_tensor_parallel(instance: InstanceType, model: ModelFacts | None, engine: dict[str, Any]) -> int:
    """The largest degree that divides the attention heads and, with the pipeline, data and prefill-context
    parallel sizes the spec sets, uses no more GPUs than the instance has."""
    for tp in range(max(1, instance.gpu_count // other_parallel_sizes(engine)), 0, -1):
        if model is None or model.num_attention_heads % tp == 0:
            return tp
    return 1
