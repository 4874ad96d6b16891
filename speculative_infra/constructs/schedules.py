"""An EventBridge Scheduler schedule that starts a Step Functions state machine (batch runs, retraining
cycles), with a role that may start that state machine only."""

from __future__ import annotations

from aws_cdk import Aws
from aws_cdk import aws_iam as iam
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

EXPRESSION_PREFIXES = ("cron(", "rate(", "at(")


def schedule_state_machine(
    scope: Construct, machine: sfn.StateMachine, expression: str, description: str
) -> scheduler.CfnSchedule:
    """`Schedule` and `ScheduleRole` under `scope`; a malformed expression is a ValueError naming it."""
    if not isinstance(expression, str):
        raise TypeError(
            f"{scope.node.path}: schedule must be a string (cron(...), rate(...) or at(...)), got "
            f"{type(expression).__name__} {expression!r}"
        )
    if not expression.startswith(EXPRESSION_PREFIXES) or not expression.endswith(")"):
        raise ValueError(
            f"{scope.node.path}: schedule is {expression!r}; allowed: cron(...), rate(...) or at(...)"
        )
    role = iam.Role(
        scope,
        "ScheduleRole",
        assumed_by=iam.ServicePrincipal(
            "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        ),
        description=description,
    )
    machine.grant_start_execution(role)
    schedule = scheduler.CfnSchedule(
        scope,
        "Schedule",
        schedule_expression=expression,
        flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
        target=scheduler.CfnSchedule.TargetProperty(
            arn=machine.state_machine_arn, role_arn=role.role_arn, input="{}"
        ),
    )
    schedule.node.add_dependency(role)
    return schedule
