"""OPTION_* environment for DJL LMI in vLLM async mode.

LMI passes `OPTION_<ENGINE ARG>` through to vLLM with true/false booleans. The async-mode options
come from the LMI user guide (djl-serving serving/docs/lmi, vLLM async mode); OPTION_SPECULATIVE_DRAFT_MODEL belonged to the removed lmi-dist backend and is
never emitted.
"""

from __future__ import annotations

from typing import Any

from speculative_infra.render.values import compact_json, scalar_text

ASYNC_MODE_OPTIONS = {
    "OPTION_ASYNC_MODE": "true",
    "OPTION_ROLLING_BATCH": "disable",
    "OPTION_ENTRYPOINT": "djl_python.lmi_vllm.vllm_async_service",
}
# Engine args whose LMI option name differs from the vLLM name.
RENAMED = {
    "tensor_parallel_size": "OPTION_TENSOR_PARALLEL_DEGREE",
    "max_num_seqs": "OPTION_MAX_ROLLING_BATCH_SIZE",
}
RESERVED_ENGINE_KEYS = frozenset({"model", "port", "host", "speculative_config"})


def option_key(dest: str) -> str:
    return RENAMED.get(dest, "OPTION_" + dest.upper())


def render_lmi_environment(
    *,
    model: str,
    engine: dict[str, Any],
    speculative: dict[str, Any] | None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    env: dict[str, str] = {"HF_MODEL_ID": model, **ASYNC_MODE_OPTIONS}
    for dest, value in engine.items():
        if dest in RESERVED_ENGINE_KEYS or value is None:
            continue
        env[option_key(dest)] = (
            ("true" if value else "false") if isinstance(value, bool) else scalar_text(value)
        )
    if speculative:
        env["OPTION_SPECULATIVE_CONFIG"] = compact_json(speculative)
    env.update(extra or {})
    return env
