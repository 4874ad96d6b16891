"""The container environment of a resolved deployment, whichever the framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

from speculative_infra.render.lmi_env import render_lmi_environment
from speculative_infra.render.vllm_env import render_vllm_environment

if TYPE_CHECKING:
    from speculative_infra.resolve import ResolvedDeployment


def render_environment(
    deployment: ResolvedDeployment, model_location: str | None = None
) -> dict[str, str] | None:
    """None when the container is unknown (the rules say why). model_location overrides the HF id."""
    container = deployment.container
    if container is None:
        return None
    model = model_location or deployment.model_id
    if container.framework == "vllm":
        return render_vllm_environment(
            model=model,
            engine=deployment.engine,
            speculative=deployment.speculative,
            container=container,
            release=deployment.vllm_release,
            extra=deployment.spec.environment,
        )
    return render_lmi_environment(
        model=model,
        engine=deployment.engine,
        speculative=deployment.speculative,
        extra=deployment.spec.environment,
    )
