"""The measurement, and the deletion of the candidate and control endpoints after it or after a failure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks

from speculative_infra.constructs.retraining_loop.context import CycleContext


@dataclass(frozen=True)
class EvaluationSteps:
    evaluate: sfn.TaskStateBase
    delete_candidate: sfn.TaskStateBase
    delete_control: sfn.TaskStateBase
    cleanup: sfn.TaskStateBase  # the clean-up's entry: a failure once the endpoints exist goes here
    not_in_service: sfn.Pass


def evaluation_steps(
    ctx: CycleContext, *, evaluate_fn: lambda_.IFunction, evaluation: dict[str, Any]
) -> EvaluationSteps:
    scope = ctx.scope
    evaluate = tasks.LambdaInvoke(
        scope,
        "Evaluate",
        lambda_function=evaluate_fn,
        payload=sfn.TaskInput.from_object(
            {
                "served": sfn.JsonPath.format(f"{ctx.prefix}-b-{{}}", sfn.JsonPath.string_at("$.cycle.id")),
                "candidate": sfn.JsonPath.format(
                    f"{ctx.prefix}-c-{{}}", sfn.JsonPath.string_at("$.cycle.id")
                ),
                "container": "vllm",
                "dataset_s3_uri": sfn.JsonPath.string_at("$.dataset.uri"),
                **evaluation,
            }
        ),
        result_selector={
            "served.$": "$.Payload.served",
            "candidate.$": "$.Payload.candidate",
            "required_output_throughput.$": "$.Payload.required_output_throughput",
        },
        result_path="$.evaluation",
    )

    def delete_endpoint(id_: str, name: str) -> tasks.CallAwsService:
        return ctx.call(
            id_,
            "sagemaker",
            "deleteEndpoint",
            {"EndpointName.$": name},
            [ctx.arn("endpoint", f"{ctx.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
        )

    # After the evaluation, and (as the clean-up) after any failure once the endpoints exist.
    delete_candidate = delete_endpoint("DeleteCandidateEndpoint", ctx.candidate_name)
    delete_control = delete_endpoint("DeleteControlEndpoint", ctx.control_name)
    cleanup = delete_endpoint("CleanUpCandidate", ctx.candidate_name)
    cleanup_control = delete_endpoint("CleanUpControl", ctx.control_name)
    cycle_failed = sfn.Fail(scope, "CycleFailed", error="CycleFailed", cause_path="$.error.Cause")
    # Each deletion is tried (with retries) whatever the other did; the cycle then fails with its cause.
    cleanup.add_catch(cleanup_control, errors=["States.ALL"], result_path="$.cleanupError")
    cleanup_control.add_catch(cycle_failed, errors=["States.ALL"], result_path="$.cleanupError")
    cleanup.next(cleanup_control).next(cycle_failed)
    not_in_service = sfn.Pass(
        scope,
        "CandidateOrControlNotInService",
        parameters={
            "Error": "EndpointNotInService",
            "Cause": "the candidate or control endpoint failed or did not reach InService within 90 minutes",
        },
        result_path="$.error",
    )
    not_in_service.next(cleanup)
    return EvaluationSteps(
        evaluate=evaluate,
        delete_candidate=delete_candidate,
        delete_control=delete_control,
        cleanup=cleanup,
        not_in_service=not_in_service,
    )
