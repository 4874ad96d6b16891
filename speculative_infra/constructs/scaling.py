"""Application Auto Scaling for a SageMaker variant or inference component (shared by both constructs)."""

from __future__ import annotations

from aws_cdk import Duration, TimeZone
from aws_cdk import aws_applicationautoscaling as appscaling
from constructs import Construct, IDependable

from speculative_infra.constructs.prop_checks import finite_number
from speculative_infra.spec import ScalingOptions

_CONCURRENCY = {
    "variant": appscaling.PredefinedMetric.SAGEMAKER_VARIANT_CONCURRENT_REQUESTS_PER_MODEL_HIGH_RESOLUTION,
    "inference-component": (
        appscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_CONCURRENT_REQUESTS_PER_COPY_HIGH_RESOLUTION
    ),
}
_INVOCATIONS = {
    "variant": appscaling.PredefinedMetric.SAGEMAKER_VARIANT_INVOCATIONS_PER_INSTANCE,
    "inference-component": appscaling.PredefinedMetric.SAGEMAKER_INFERENCE_COMPONENT_INVOCATIONS_PER_COPY,
}
_DIMENSION = {
    "variant": "sagemaker:variant:DesiredInstanceCount",
    "inference-component": "sagemaker:inference-component:DesiredCopyCount",
}


def default_target_value(options: ScalingOptions, max_num_seqs: int) -> float:
    """Concurrency target: 75% of what one vLLM server batches, so scale-out starts before requests queue."""
    if options.target_value is not None:
        return options.target_value
    return float(max(1, round(0.75 * max_num_seqs)))


def add_auto_scaling(
    scope: Construct,
    *,
    kind: str,
    resource_id: str,
    options: ScalingOptions,
    target_value: float,
    depends_on: IDependable | None = None,
) -> appscaling.ScalableTarget:
    """A scalable target with a target-tracking policy and the scheduled actions of `options`."""
    # NaN or infinity would stop the jsii kernel (it cannot serialize them); the spec refuses them too.
    finite_number(target_value, "scaling.target_value", scope.node.path, low=0, low_open=True)
    target = appscaling.ScalableTarget(
        scope,
        "ScalableTarget",
        service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
        resource_id=resource_id,
        scalable_dimension=_DIMENSION[kind],
        min_capacity=options.min_capacity,
        max_capacity=options.max_capacity,
    )
    if depends_on is not None:  # needed when resource_id names the resource by a literal, not a reference
        target.node.add_dependency(depends_on)
    metric = _CONCURRENCY[kind] if options.metric == "concurrent_requests" else _INVOCATIONS[kind]
    target.scale_to_track_metric(
        "TargetTracking",
        target_value=target_value,
        predefined_metric=metric,
        scale_in_cooldown=Duration.seconds(options.scale_in_cooldown_seconds),
        scale_out_cooldown=Duration.seconds(options.scale_out_cooldown_seconds),
    )
    for sched in options.schedules:
        target.scale_on_schedule(
            sched.name,
            schedule=appscaling.Schedule.expression(sched.schedule),
            min_capacity=sched.min_capacity,
            max_capacity=sched.max_capacity,
            time_zone=TimeZone.of(sched.time_zone) if sched.time_zone else None,
        )
    return target
