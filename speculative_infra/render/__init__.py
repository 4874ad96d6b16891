"""Rendering: a resolved deployment -> container environment (and, in constructs/, CloudFormation)."""

from speculative_infra.render.container_env import render_environment
from speculative_infra.render.lmi_env import render_lmi_environment
from speculative_infra.render.vllm_env import render_vllm_environment

__all__ = ["render_environment", "render_lmi_environment", "render_vllm_environment"]
