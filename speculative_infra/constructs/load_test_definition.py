"""The state machine of EndpointLoadTest, as Amazon States Language (a plain dict: no CDK here).

    Plan -> PlanAccepted? -> Workers (Distributed Map over every (wave, worker) item)
         -> WaitForMetrics -> Merge -> AnyWorkerReported? -> Done

Each item's child execution waits (a Wait state: Step Functions' own timer, no Lambda waits) until its
wave's launch time, then invokes the worker for at most one wave. Every item is started at once, so a
wave's workers start on the schedule, not when the previous wave's happen to finish; a child whose wait
ends more than a minute after its launch time is skipped and reported by the merge. ``${...}`` names are
filled by CloudFormation's DefinitionSubstitutions.
"""

from __future__ import annotations

from typing import Any

MAX_CONCURRENT_ITEMS = 10_000
"""Child executions a Distributed Map runs at once (the most Step Functions allows)."""
WORKER_TASK_TIMEOUT_S = 960
"""The worker's 15 minutes plus the invocation's own overhead."""
EXECUTION_TIMEOUT_S = 8 * 86_400
"""An execution ends within 8 days whatever happens (a week's test and a day to spare)."""
SUBSTITUTIONS = ("PlanFunctionArn", "WorkerFunctionArn", "MergeFunctionArn", "ResultsBucket")


def _invoke(function: str, payload: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": "${" + function + "}", "Payload": payload},
        "ResultSelector": result,
        "Retry": [
            {
                # Throttled before it ran: retrying cannot send the slice twice.
                "ErrorEquals": ["Lambda.TooManyRequestsException"],
                "IntervalSeconds": 1,
                "MaxAttempts": 5,
                "BackoffRate": 2,
            }
        ],
    }


def load_test_definition(
    *, defaults: dict[str, Any], target: dict[str, Any], results_prefix: str
) -> dict[str, Any]:
    """The definition; ``defaults`` is the construct's test (an execution may pass its own ``config``)."""
    worker = {
        **_invoke(
            "WorkerFunctionArn",
            {"plan.$": "$.plan", "item.$": "$.item"},
            {"wave.$": "$.Payload.wave", "worker.$": "$.Payload.worker", "status.$": "$.Payload.status"},
        ),
        "TimeoutSeconds": WORKER_TASK_TIMEOUT_S,
        "End": True,
    }
    children = {
        "StartAt": "WaitForLaunch",
        "States": {
            "WaitForLaunch": {"Type": "Wait", "TimestampPath": "$.item.launch_at", "Next": "Launched"},
            # When the wait ended (a child the Map started late ends it late): checked before the worker runs.
            "Launched": {
                "Type": "Pass",
                "Parameters": {"plan.$": "$.plan", "item.$": "$.item", "launched.$": "$$.State.EnteredTime"},
                "Next": "OnSchedule",
            },
            "OnSchedule": {
                "Type": "Choice",
                "Choices": [
                    {
                        "Variable": "$.launched",
                        "TimestampGreaterThanPath": "$.item.latest_launch",
                        "Next": "TooLate",
                    }
                ],
                "Default": "RunWorker",
            },
            "TooLate": {
                "Type": "Pass",
                "Parameters": {"wave.$": "$.item.wave", "worker.$": "$.item.worker", "status": "skipped"},
                "End": True,
            },
            "RunWorker": worker,
        },
        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
    }
    plan = {
        **_invoke(
            "PlanFunctionArn",
            {
                "input.$": "$",
                "defaults": defaults,
                "bucket": "${ResultsBucket}",
                "prefix": results_prefix,
                "execution.$": "$$.Execution.Name",
            },
            {"plan.$": "$.Payload"},
        ),
        "Next": "PlanAccepted",
    }
    merge = {
        **_invoke("MergeFunctionArn", {"plan.$": "$.plan", "target": target}, {"merged.$": "$.Payload"}),
        "ResultPath": "$.result",
        "Next": "AnyWorkerReported",
    }
    return {
        "Comment": "speculative-infra EndpointLoadTest: a stepped load test across Lambda workers",
        # The longest test the plan accepts (a week), its last drain, the metrics' wait and the merge.
        "TimeoutSeconds": EXECUTION_TIMEOUT_S,
        "StartAt": "Plan",
        "States": {
            "Plan": plan,
            "PlanAccepted": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.plan.ok", "BooleanEquals": False, "Next": "PlanRefused"}],
                "Default": "Workers",
            },
            "PlanRefused": {"Type": "Fail", "Error": "LoadTestConfigInvalid", "CausePath": "$.plan.error"},
            "Workers": {
                "Type": "Map",
                "ItemReader": {
                    "Resource": "arn:aws:states:::s3:getObject",
                    "ReaderConfig": {"InputType": "JSON"},
                    "Parameters": {"Bucket.$": "$.plan.bucket", "Key.$": "$.plan.items_key"},
                },
                "ItemSelector": {"plan.$": "$.plan", "item.$": "$$.Map.Item.Value"},
                "ItemProcessor": children,
                "MaxConcurrency": MAX_CONCURRENT_ITEMS,
                # A failed worker is the merge's to report, never a reason to drop the others' results.
                "ToleratedFailurePercentage": 100,
                "ResultWriter": {
                    "Resource": "arn:aws:states:::s3:putObject",
                    "Parameters": {"Bucket.$": "$.plan.bucket", "Prefix.$": "$.plan.map_results_prefix"},
                },
                "ResultPath": "$.map",
                "Next": "WaitForMetrics",
            },
            # CloudWatch publishes the endpoint's last minutes a few minutes late.
            "WaitForMetrics": {"Type": "Wait", "TimestampPath": "$.plan.merge_at", "Next": "Merge"},
            "Merge": merge,
            "AnyWorkerReported": {
                "Type": "Choice",
                "Choices": [
                    {"Variable": "$.result.merged.reported", "NumericEquals": 0, "Next": "NoWorkerReported"}
                ],
                "Default": "Done",
            },
            "NoWorkerReported": {
                "Type": "Fail",
                "Error": "NoWorkerReported",
                "Cause": "No worker wrote its output; see the run's folder and the workers' logs.",
            },
            "Done": {"Type": "Pass", "OutputPath": "$.result.merged", "End": True},
        },
    }
