"""SM_VLLM_* environment for the SageMaker vLLM DLC.

The DLC entrypoint turns `SM_VLLM_FOO_BAR=value` into `--foo-bar value`. Up to 0.17.x it appends the
value only when it is non-empty, so a true boolean must be an empty string (a literal "true" lands
in vLLM's positional model_tag, and "false" would turn the flag ON). From 0.18.0 "true" is a bare
flag. A false boolean is never written as "false": it is left out, or, for a flag vLLM can negate
(`--no-enable-prefix-caching`), written as the negation so that a default-on feature really goes off.
"""

from __future__ import annotations

from typing import Any

from speculative_infra.catalog.models import ContainerImage
from speculative_infra.catalog.vllm_release import VllmRelease
from speculative_infra.render.values import compact_json, scalar_text

PREFIX = "SM_VLLM_"
# Set by the entrypoint itself or by dedicated spec fields, never through `engine`.
RESERVED_ENGINE_KEYS = frozenset({"model", "port", "host", "speculative_config", "served_model_name_env"})


def env_key(dest: str) -> str:
    return PREFIX + dest.upper()


def _true_value(container: ContainerImage) -> str:
    return "true" if container.boolean_env == "true_false" else ""


def _boolean_env(
    dest: str, value: bool, container: ContainerImage, release: VllmRelease | None
) -> dict[str, str]:
    if value:
        return {env_key(dest): _true_value(container)}
    flag = release.flag_by_dest(dest) if release is not None else None
    if flag is not None and flag.negations:
        negation = flag.negations[0].removeprefix("--").replace("-", "_")
        return {env_key(negation): _true_value(container)}
    return {}  # a store_true flag that is off is simply absent


def render_vllm_environment(
    *,
    model: str,
    engine: dict[str, Any],
    speculative: dict[str, Any] | None,
    container: ContainerImage,
    release: VllmRelease | None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """Environment for the vLLM DLC, in a stable order (model, engine args, speculative, extra)."""
    env: dict[str, str] = {env_key("model"): model}
    for dest, value in engine.items():
        if dest in RESERVED_ENGINE_KEYS or value is None:
            continue
        if isinstance(value, bool):
            env.update(_boolean_env(dest, value, container, release))
        else:
            env[env_key(dest)] = scalar_text(value)
    if speculative:
        env[env_key("speculative_config")] = compact_json(speculative)
    env.update(extra or {})
    return env
