"""The retraining cycle as a Step Functions state machine: the states of each phase (built by the
`*_steps` modules, in the order that keeps their construct ids and the template unchanged) wired into one
definition, and the state machine that runs it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from speculative_infra.constructs.retraining_loop.candidate_steps import candidate_steps
from speculative_infra.constructs.retraining_loop.context import CycleContext
from speculative_infra.constructs.retraining_loop.dataset_steps import dataset_steps
from speculative_infra.constructs.retraining_loop.evaluation_steps import evaluation_steps
from speculative_infra.constructs.retraining_loop.outcome_steps import outcome_steps
from speculative_infra.constructs.retraining_loop.promotion_steps import promotion_steps
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead
from speculative_infra.constructs.retraining_loop.training_steps import training_steps
from speculative_infra.s3_uri import S3Location


def cycle_definition(
    ctx: CycleContext,
    *,
    state_machine_name: str,
    head: ServedEagleHead,
    last_cycle: ssm.StringParameter,
    job_role: iam.IRole,
    dataset_fn: lambda_.IFunction,
    evaluate_fn: lambda_.IFunction,
    capture_uri: str,
    target: S3Location,
    instance_type: str,
    endpoint_role_arn: str,
    poll: Duration,
    runtime: Duration,
    evaluation: dict[str, Any],
    rollback_alarms: Sequence[cloudwatch.IAlarm],
    min_conversations: int,
    max_chars: int,
) -> sfn.IChainable:
    """One cycle: dataset -> optimization job -> candidate and control endpoints -> measurement -> promotion
    if faster; every wait a bounded loop, every failure once the endpoints exist through their deletion."""
    scope = ctx.scope  # every state's scope: the loop
    opening = dataset_steps(
        ctx,
        state_machine_name=state_machine_name,
        last_cycle=last_cycle,
        dataset_fn=dataset_fn,
        capture_uri=capture_uri,
        min_conversations=min_conversations,
        max_chars=max_chars,
    )
    training = training_steps(
        ctx,
        head=head,
        job_role=job_role,
        target=target,
        instance_type=instance_type,
        poll=poll,
        runtime=runtime,
    )
    candidate = candidate_steps(ctx, endpoint_role_arn=endpoint_role_arn)
    measurement = evaluation_steps(ctx, evaluate_fn=evaluate_fn, evaluation=evaluation)
    promotion = promotion_steps(ctx, head=head, rollback_alarms=rollback_alarms)
    outcome = outcome_steps(ctx, last_cycle=last_cycle)

    # Failures after the candidate exists go through its deletion; before it, straight to a Fail.
    for state in (candidate.candidate_model, candidate.config_with_key, candidate.config_without_key):
        state.add_catch(
            sfn.Fail(scope, f"{state.node.id}Failed", error="CycleFailed", cause_path="$.error.Cause"),
            result_path="$.error",
        )
    after_candidate: list[sfn.TaskStateBase] = [
        candidate.create_candidate,
        candidate.create_control,
        candidate.describe_candidate,
        candidate.describe_control,
        measurement.evaluate,
        measurement.delete_candidate,
        measurement.delete_control,
    ]
    for task in after_candidate:
        task.add_catch(measurement.cleanup, result_path="$.error")
    before_candidate: list[sfn.TaskStateBase] = [
        opening.window,
        opening.dataset,
        training.served_head,
        training.source_model,
        training.start_job,
        training.describe_job,
        candidate.served,
        candidate.served_config,
        candidate.served_model,
    ]
    for early in before_candidate:
        early.add_catch(
            sfn.Fail(scope, f"{early.node.id}Failed", error="CycleFailed", cause_path="$.error.Cause"),
            result_path="$.error",
        )

    decide = (
        sfn.Choice(scope, "FasterThanServed")
        .when(
            sfn.Condition.and_(
                sfn.Condition.number_greater_than_json_path(
                    "$.evaluation.candidate.output_throughput", "$.evaluation.required_output_throughput"
                ),
                sfn.Condition.number_greater_than_equals_json_path(
                    "$.evaluation.candidate.tokens_per_chunk", "$.evaluation.served.tokens_per_chunk"
                ),
            ),
            promotion.promote.next(promotion.polls_promote)
            .next(promotion.wait_promote)
            .next(promotion.describe_promote)
            .next(
                sfn.Choice(scope, "PromotionDone")
                .when(
                    sfn.Condition.and_(
                        sfn.Condition.string_equals("$.promotion.status", "InService"),
                        sfn.Condition.string_equals_json_path("$.promotion.config", "$.candidateConfig.name"),
                    ),
                    promotion.put_head.next(outcome.promoted),
                )
                # Rolled back (the alarms fired): in service on the old config.
                .when(sfn.Condition.string_equals("$.promotion.status", "InService"), outcome.rolled_back)
                .when(
                    sfn.Condition.number_greater_than("$.polls.count", 180),
                    sfn.Fail(
                        scope,
                        "PromotionTimedOut",
                        error="PromotionTimedOut",
                        cause="the endpoint did not return to InService within 3 hours",
                    ),
                )
                .when(
                    sfn.Condition.or_(
                        sfn.Condition.string_equals("$.promotion.status", "Failed"),
                        sfn.Condition.string_equals("$.promotion.status", "UpdateRollbackFailed"),
                    ),
                    sfn.Fail(
                        scope,
                        "PromotionFailed",
                        error="PromotionFailed",
                        cause="UpdateEndpoint failed and the endpoint is not in service: see its FailureReason",
                    ),
                )
                .otherwise(promotion.count_promote.next(promotion.wait_promote))
            ),
        )
        .otherwise(outcome.kept)
    )
    candidate_ready = (
        sfn.Choice(scope, "CandidateInService")
        .when(
            sfn.Condition.and_(
                sfn.Condition.string_equals("$.candidateStatus.status", "InService"),
                sfn.Condition.string_equals("$.controlStatus.status", "InService"),
            ),
            measurement.evaluate.next(measurement.delete_candidate)
            .next(measurement.delete_control)
            .next(decide),
        )
        .when(
            sfn.Condition.or_(
                sfn.Condition.string_equals("$.candidateStatus.status", "Failed"),
                sfn.Condition.string_equals("$.controlStatus.status", "Failed"),
            ),
            measurement.not_in_service,
        )
        .when(sfn.Condition.number_greater_than("$.polls.count", 90), measurement.not_in_service)
        .otherwise(candidate.count_candidate.next(candidate.wait_candidate))
    )
    key_choice = (
        sfn.Choice(scope, "ServedConfigHasKey")
        .when(sfn.Condition.is_present("$.servedConfig.config.KmsKeyId"), candidate.config_with_key)
        .otherwise(candidate.config_without_key)
    )
    after_config = (
        candidate.create_candidate.next(candidate.create_control)
        .next(candidate.polls_candidate)
        .next(candidate.wait_candidate)
        .next(candidate.describe_candidate)
        .next(candidate.describe_control)
        .next(candidate_ready)
    )
    candidate.config_with_key.next(after_config)
    candidate.config_without_key.next(after_config)
    job_done = (
        sfn.Choice(scope, "JobDone")
        .when(
            sfn.Condition.string_equals("$.job.status", "COMPLETED"),
            candidate.served.next(candidate.served_config)
            .next(candidate.served_model)
            .next(candidate.candidate_model)
            .next(candidate.patch)
            .next(candidate.config_name)
            .next(candidate.merged)
            .next(key_choice),
        )
        .when(
            sfn.Condition.or_(
                sfn.Condition.string_equals("$.job.status", "FAILED"),
                sfn.Condition.string_equals("$.job.status", "STOPPED"),
            ),
            training.job_failed,
        )
        .when(sfn.Condition.number_greater_than("$.polls.count", training.max_job_polls), training.job_failed)
        .otherwise(training.count_job.next(training.wait_job))
    )
    enough = (
        sfn.Choice(scope, "EnoughConversations")
        .when(sfn.Condition.boolean_equals("$.dataset.skip", True), outcome.skipped)
        .otherwise(
            training.served_head.next(training.source_model)
            .next(training.start_job)
            .next(training.polls_job)
            .next(training.wait_job)
            .next(training.describe_job)
            .next(job_done)
        )
    )
    alone = (
        sfn.Choice(scope, "Alone")
        .when(sfn.Condition.number_greater_than("$.running.count", 1), opening.already)
        .otherwise(opening.window.next(opening.dataset).next(enough))
    )
    return sfn.Chain.start(opening.start).next(opening.running).next(alone)


def retraining_state_machine(
    scope: Construct, definition: sfn.IChainable, *, name: str, timeout: Duration, comment: str
) -> sfn.StateMachine:
    """`Logs` and `StateMachine` under `scope`: traced, every state logged for a month."""
    log_group = logs.LogGroup(
        scope, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
    )
    return sfn.StateMachine(
        scope,
        "StateMachine",
        state_machine_name=name,
        definition_body=sfn.DefinitionBody.from_chainable(definition),
        timeout=timeout,
        tracing_enabled=True,
        logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
        comment=comment,
    )
