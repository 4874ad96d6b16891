"""Helpers for construct props: typed model or mapping, durations in the API's allowed ranges."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Annotations, CfnOutput, Duration
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct
from pydantic import BaseModel

from speculative_infra.cost import CostEstimate
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.sizing import dtype_bytes, weights_mib

TIMEOUT_RANGE = (60, 3600)  # ContainerStartupHealthCheckTimeoutInSeconds, ModelDataDownloadTimeoutInSeconds


def as_mapping(value: BaseModel | Mapping[str, Any] | None) -> dict[str, Any]:
    """Props that carry structure accept the pydantic model or a plain mapping with the same keys."""
    if value is None:
        return {}
    if isinstance(value, BaseModel):
        return value.model_dump(exclude_none=True)
    return dict(value)


def timeout_seconds(value: Duration | None, field: str, default: int) -> int:
    if value is None:
        return default
    seconds = int(value.to_seconds())
    low, high = TIMEOUT_RANGE
    if not low <= seconds <= high:
        raise ValueError(f"{field}: {seconds} seconds is outside the allowed {low} to {high} seconds")
    return seconds


def default_timeouts(deployment: ResolvedDeployment) -> tuple[int, int]:
    """(download, startup) seconds sized to the weights: ~20 s and ~15 s per GB, at least 10 minutes."""
    if deployment.model is None:
        return 900, 900
    gb = weights_mib(deployment.model, dtype_bytes(deployment.engine.get("dtype"))) * 2**20 / 1e9
    return _clamp_timeout(gb * 20), _clamp_timeout(gb * 15)


def _clamp_timeout(seconds: float) -> int:
    return int(min(TIMEOUT_RANGE[1], max(600, seconds)))


def secret_id(secret: secretsmanager.ISecret | None) -> str | None:
    """What a dynamic reference names the secret by: its full ARN where known, else its name (as CDK does)."""
    if secret is None:
        return None
    return secret.secret_full_arn or secret.secret_name


def publish_cost(scope: Construct, estimate: CostEstimate) -> None:
    """The on-demand cost as a synth-time annotation and a stack output (`cdk deploy` prints it)."""
    Annotations.of(scope).add_info(estimate.summary())
    low, high = estimate.hourly(estimate.min_instances), estimate.hourly(estimate.max_instances)
    fallback = estimate.fallback_usd_per_hour
    if (low is None or high is None) and fallback is not None:  # name the other region's price shown
        span = {fallback * estimate.min_instances, fallback * estimate.max_instances}
        value = (
            f"unknown ({estimate.fallback_region} list price {'-'.join(f'{v:.2f}' for v in sorted(span))})"
        )
    elif low is None or high is None:
        value = "unknown"
    else:
        value = f"{low:.2f}" if low == high else f"{low:.2f}-{high:.2f}"
    CfnOutput(scope, "OnDemandUsdPerHour", value=value, description=estimate.summary()[:1000])
