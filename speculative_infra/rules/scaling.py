"""Auto-scaling bounds."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI600",
    name="scaling-bounds",
    severity=Severity.ERROR,
    title="Auto-scaling bounds are consistent",
    rationale="Application Auto Scaling rejects min > max or a max of 0 only at deploy time.",
)
def scaling_bounds(d: ResolvedDeployment) -> Iterator[Violation]:
    s = d.spec.scaling
    if s is None:
        return
    # Components and asynchronous endpoints scale to zero; a real-time variant keeps one instance.
    floor = 0 if d.endpoint_kind in ("inference_component", "async") else 1
    if s.max_capacity < 1:
        yield Violation(
            message=f"scaling.max_capacity is {s.max_capacity}; allowed: 1 or more",
            fix="set scaling.max_capacity to at least 1",
            field="scaling.max_capacity",
        )
    if s.min_capacity < floor:
        what = (
            "inference components and asynchronous endpoints"
            if floor == 0
            else "a real-time endpoint variant (scale to zero needs an inference component or serving: async)"
        )
        yield Violation(
            message=f"scaling.min_capacity is {s.min_capacity}; allowed for {what}: {floor} or more",
            fix=f"set scaling.min_capacity to {floor} or more",
            field="scaling.min_capacity",
        )
    if s.min_capacity > s.max_capacity:
        yield Violation(
            message=f"scaling.min_capacity {s.min_capacity} is greater than scaling.max_capacity {s.max_capacity}",
            fix="make min_capacity <= max_capacity",
            field="scaling.min_capacity",
        )
    for i, sched in enumerate(s.schedules):
        if (
            sched.min_capacity is not None
            and sched.max_capacity is not None
            and sched.min_capacity > sched.max_capacity
        ):
            yield Violation(
                message=f"scaling.schedules[{i}] ({sched.name}): min_capacity {sched.min_capacity} > "
                f"max_capacity {sched.max_capacity}",
                fix="make min_capacity <= max_capacity",
                field=f"scaling.schedules[{i}]",
            )
        if (
            sched.max_capacity is None
            and sched.min_capacity is not None
            and sched.min_capacity > s.max_capacity
        ):
            # A schedule that sets only the minimum keeps scaling.max_capacity as the maximum.
            yield Violation(
                message=f"scaling.schedules[{i}] ({sched.name}): min_capacity {sched.min_capacity} > "
                f"scaling.max_capacity {s.max_capacity}, the maximum the schedule leaves in place",
                fix=f"set the schedule's max_capacity too, or a min_capacity of at most {s.max_capacity}",
                field=f"scaling.schedules[{i}].min_capacity",
            )
        if not sched.schedule.startswith(("cron(", "rate(", "at(")):
            yield Violation(
                message=f"scaling.schedules[{i}].schedule is {sched.schedule!r}; allowed: cron(...), rate(...) or at(...)",
                fix="e.g. cron(0 20 * * ? *)",
                field=f"scaling.schedules[{i}].schedule",
            )
    if s.scale_in_cooldown_seconds < 0 or s.scale_out_cooldown_seconds < 0:
        yield Violation(
            message="scaling cooldowns must be >= 0 seconds",
            fix="set scale_in_cooldown_seconds and scale_out_cooldown_seconds to 0 or more",
            field="scaling",
        )


@rule(
    code="SI601",
    name="scaling-target",
    severity=Severity.ERROR,
    title="Auto-scaling target is positive and known",
    rationale="Target tracking needs a positive target; invocations per instance has no safe default.",
)
def scaling_target(d: ResolvedDeployment) -> Iterator[Violation]:
    s = d.spec.scaling
    if s is None:
        return
    if s.target_value is not None and s.target_value <= 0:
        yield Violation(
            message=f"scaling.target_value is {s.target_value}; allowed: a number > 0",
            fix="set a positive target per instance (or copy)",
            field="scaling.target_value",
        )
    if s.target_value is None and s.metric == "invocations" and d.endpoint_kind != "async":
        yield Violation(
            message="scaling.target_value is required when scaling.metric is invocations",
            fix="set scaling.target_value (invocations per instance per minute), or use metric: concurrent_requests",
            field="scaling.target_value",
        )


@rule(
    code="SI602",
    name="serving-kind",
    severity=Severity.ERROR,
    title="Asynchronous serving is built for the vLLM DLC, batch without auto-scaling",
    rationale="This library builds asynchronous endpoints (an AsyncInferenceConfig on the endpoint config, "
    "https://docs.aws.amazon.com/sagemaker/latest/dg/async-inference.html) for the vLLM DLC only; it deploys "
    "LMI models as inference components on real-time endpoints, or as the model of a batch transform job, so "
    "an asynchronous LMI spec would be deployed as something else than it says. A transform job has a fixed "
    "instance count.",
)
def serving_kind(d: ResolvedDeployment) -> Iterator[Violation]:
    framework = d.container.framework if d.container is not None else d.spec.container.framework
    if d.spec.serving == "async" and framework == "lmi":
        yield Violation(
            message="serving is async with the LMI container, which this library deploys as an inference "
            "component on a real-time endpoint or as a batch transform job; it builds asynchronous endpoints "
            "for the vLLM DLC only",
            fix="serve the model with the vLLM DLC (container.framework: vllm) for serving: async, or use "
            "serving: real_time or batch",
            field="serving",
        )
    if d.spec.serving == "batch" and d.spec.scaling is not None:
        yield Violation(
            message="scaling is set for serving: batch; a batch transform job runs on instance_count instances "
            "and does not scale",
            fix="remove scaling (size the job with instance_count)",
            field="scaling",
        )
