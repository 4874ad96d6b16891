"""A cycle's first states: its id, the one-cycle-at-a-time guard, the capture window and the dataset."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from speculative_infra.constructs.retraining_loop.arns import state_machine_arn
from speculative_infra.constructs.retraining_loop.context import CycleContext


@dataclass(frozen=True)
class DatasetSteps:
    start: sfn.Pass
    running: sfn.TaskStateBase
    already: sfn.Fail
    window: sfn.TaskStateBase
    dataset: sfn.TaskStateBase


def dataset_steps(
    ctx: CycleContext,
    *,
    state_machine_name: str,
    last_cycle: ssm.StringParameter,
    dataset_fn: lambda_.IFunction,
    capture_uri: str,
    min_conversations: int,
    max_chars: int,
) -> DatasetSteps:
    scope = ctx.scope
    start = sfn.Pass(
        scope,
        "Cycle",
        parameters={
            "id.$": "States.ArrayGetItem(States.StringSplit(States.UUID(), '-'), 0)",
            "started.$": "$$.Execution.StartTime",
        },
        result_path="$.cycle",
    )
    running = ctx.call(
        "ListRunning",
        "sfn",
        "listExecutions",
        {"StateMachineArn.$": "$$.StateMachine.Id", "StatusFilter": "RUNNING"},
        [state_machine_arn(scope, state_machine_name)],
        result_selector={"count.$": "States.ArrayLength($.Executions)"},
        result_path="$.running",
    )
    already = sfn.Fail(
        scope, "AlreadyRunning", error="CycleAlreadyRunning", cause="another cycle of this loop is running"
    )
    window = ctx.call(
        "ReadLastCycle",
        "ssm",
        "getParameter",
        {"Name": last_cycle.parameter_name},
        [last_cycle.parameter_arn],
        result_selector={"since.$": "$.Parameter.Value"},
        result_path="$.window",
    )
    dataset = tasks.LambdaInvoke(
        scope,
        "BuildDataset",
        lambda_function=dataset_fn,
        payload=sfn.TaskInput.from_object(
            {
                "capture_s3_uri": capture_uri,
                "since": sfn.JsonPath.string_at("$.window.since"),
                "until": sfn.JsonPath.string_at("$.cycle.started"),
                "output_s3_uri": sfn.JsonPath.format(
                    ctx.cycle_dir + "dataset/", sfn.JsonPath.string_at("$.cycle.id")
                ),
                "min_conversations": min_conversations,
                "max_chars": max_chars,
            }
        ),
        result_selector={
            "skip.$": "$.Payload.skip",
            "conversations.$": "$.Payload.conversations",
            "uri.$": "$.Payload.dataset_s3_uri",
        },
        result_path="$.dataset",
    )
    return DatasetSteps(start=start, running=running, already=already, window=window, dataset=dataset)
