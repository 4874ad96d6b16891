"""The container environment of a resolved deployment, whichever the framework."""

from __future__ import annotations

from typing import TYPE_CHECKING

from speculative_infra.render.lmi_env import render_lmi_environment
from speculative_infra.render.vllm_env import render_vllm_environment

if TYPE_CHECKING:
    from speculative_infra.resolve import ResolvedDeployment


# The variable huggingface_hub (and so vLLM) reads a token from, and the older names it also reads.
HF_TOKEN_ENV = "HF_TOKEN"
TOKEN_VARIABLES = (HF_TOKEN_ENV, "HUGGING_FACE_HUB_TOKEN", "HUGGINGFACE_HUB_TOKEN")
_DYNAMIC_REFERENCE = "{{resolve:"


def secret_reference(secret: str) -> str:
    """A CloudFormation dynamic reference to a secret's whole value: resolved at deploy time, never stored."""
    return _DYNAMIC_REFERENCE + "secretsmanager:" + secret + ":SecretString:::}}"


def is_dynamic_reference(value: str) -> bool:
    """A value CloudFormation resolves at deploy time (a secret stays out of the template)."""
    return value.startswith(_DYNAMIC_REFERENCE)


def render_environment(
    deployment: ResolvedDeployment, model_location: str | None = None
) -> dict[str, str] | None:
    """None when the container is unknown (the rules say why). model_location overrides the HF id."""
    container = deployment.container
    if container is None:
        return None
    model = model_location or deployment.model_id
    extra = dict(deployment.spec.environment)
    if deployment.spec.hf_token_secret is not None:
        extra[HF_TOKEN_ENV] = secret_reference(deployment.spec.hf_token_secret)
    if container.framework == "vllm":
        return render_vllm_environment(
            model=model,
            engine=deployment.engine,
            speculative=deployment.speculative,
            container=container,
            release=deployment.vllm_release,
            extra=extra,
        )
    return render_lmi_environment(
        model=model,
        engine=deployment.engine,
        speculative=deployment.speculative,
        extra=extra,
    )
