"""The promotion's states: a blue/green update of the served endpoint to the candidate's config, its
bounded polling, and the parameter update that makes the new head the served one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_stepfunctions as sfn

from speculative_infra.constructs.retraining_loop.context import CycleContext
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead


@dataclass(frozen=True)
class PromotionSteps:
    promote: sfn.TaskStateBase
    polls_promote: sfn.Pass
    wait_promote: sfn.Wait
    describe_promote: sfn.TaskStateBase
    count_promote: sfn.Pass
    put_head: sfn.TaskStateBase


def promotion_steps(
    ctx: CycleContext, *, head: ServedEagleHead, rollback_alarms: Sequence[cloudwatch.IAlarm]
) -> PromotionSteps:
    scope, sm = ctx.scope, "sagemaker"
    deployment: dict[str, Any] = {
        "BlueGreenUpdatePolicy": {
            "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 300},
            "TerminationWaitInSeconds": 300,
        }
    }
    if rollback_alarms:
        deployment["AutoRollbackConfiguration"] = {
            "Alarms": [{"AlarmName": a.alarm_name} for a in rollback_alarms]
        }
    promote = ctx.call(
        "Promote",
        sm,
        "updateEndpoint",
        {
            "EndpointName": ctx.endpoint_name,
            "EndpointConfigName.$": ctx.candidate_name,
            "DeploymentConfig": deployment,
        },
        [ctx.arn("endpoint", "*"), ctx.arn("endpoint-config", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
    )
    polls_promote = sfn.Pass(scope, "PromotePolls", parameters={"count": 0}, result_path="$.polls")
    wait_promote = sfn.Wait(scope, "WaitForPromotion", time=sfn.WaitTime.duration(Duration.minutes(1)))
    describe_promote = ctx.call(
        "DescribePromotion",
        sm,
        "describeEndpoint",
        {"EndpointName": ctx.endpoint_name},
        [ctx.arn("endpoint", "*")],
        result_selector={
            "status.$": "$.EndpointStatus",
            "config.$": "$.EndpointConfigName",
            "describe.$": "$",
        },
        result_path="$.promotion",
    )
    count_promote = sfn.Pass(
        scope,
        "CountPromotePoll",
        parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
        result_path="$.polls",
    )
    put_head = ctx.call(
        "ServeNewHead",
        "ssm",
        "putParameter",
        {"Name": head.parameter_name, "Value.$": ctx.new_head_uri, "Overwrite": True, "Type": "String"},
        [head.parameter.parameter_arn],
        result_path=sfn.JsonPath.DISCARD,
    )
    return PromotionSteps(
        promote=promote,
        polls_promote=polls_promote,
        wait_promote=wait_promote,
        describe_promote=describe_promote,
        count_promote=count_promote,
        put_head=put_head,
    )
