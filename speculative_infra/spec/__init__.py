"""The deployment spec: what a user asks for, shared by the constructs and the CLI."""

from speculative_infra.spec.loader import SpecError, load_spec, parse_spec
from speculative_infra.spec.models import (
    ContainerSpec,
    DeploymentSpec,
    EngineArgs,
    ModelSpec,
    ScalingOptions,
    ScheduledCapacity,
    SpeculativeConfig,
)

__all__ = [
    "ContainerSpec",
    "DeploymentSpec",
    "EngineArgs",
    "ModelSpec",
    "ScalingOptions",
    "ScheduledCapacity",
    "SpecError",
    "SpeculativeConfig",
    "load_spec",
    "parse_spec",
]
