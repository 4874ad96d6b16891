"""EagleRetrainingLoop: the public construct. It checks the endpoint and the settings, then creates the
job's role, the last-cycle parameter, the two functions, the state machine and what starts it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Duration, Names
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from speculative_infra.constructs.batch_inference import MAX_RUN_SECONDS
from speculative_infra.constructs.eagle_job import MAX_RUNTIME_S
from speculative_infra.constructs.prop_checks import (
    ALARM,
    construct_path,
    finite_number,
    require_duration,
    require_instance,
    require_int,
    require_jsii,
    require_jsii_sequence,
    require_str,
)
from speculative_infra.constructs.retraining_loop.arns import sagemaker_arn
from speculative_infra.constructs.retraining_loop.context import CycleContext
from speculative_infra.constructs.retraining_loop.functions import (
    acknowledge_function_wildcards,
    dataset_function,
    evaluate_function,
)
from speculative_infra.constructs.retraining_loop.roles import complete_machine_permissions, job_role
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead
from speculative_infra.constructs.retraining_loop.state_machine import (
    cycle_definition,
    retraining_state_machine,
)
from speculative_infra.constructs.schedules import schedule_state_machine
from speculative_infra.constructs.vllm_endpoint import MAX_ROLLBACK_ALARMS
from speculative_infra.s3_uri import parse_s3_uri

EPOCH = "1970-01-01T00:00:00Z"


class EagleRetrainingLoop(Construct):
    """One Step Functions state machine per endpoint (see docs/constructs/eagle-retraining-loop.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        endpoint: Any,
        head: ServedEagleHead,
        model_s3_uri: str,
        schedule: str | None = "rate(7 days)",
        start_on_alarm: cloudwatch.IAlarm | None = None,
        min_conversations: int = 200,
        max_chars: int = 32000,
        job_max_runtime: Duration | None = None,
        job_poll_interval: Duration | None = None,
        evaluation_concurrency: int = 8,
        evaluation_requests: int = 64,
        evaluation_output_tokens: int = 256,
        margin: float = 0.05,
        rollback_alarms: Sequence[cloudwatch.IAlarm] = (),
        timeout: Duration | None = None,
    ) -> None:
        """
        :param endpoint: a SpeculativeVllmEndpoint with ``data_capture`` whose ``speculative`` is
            ``head.speculative_config(...)``.
        :param head: the served head (ServedEagleHead).
        :param model_s3_uri: the target's weights in S3 (the optimization job's source model).
        :param schedule: EventBridge Scheduler expression; None: on demand only. Default: weekly.
        :param start_on_alarm: also start a cycle when this alarm goes to ALARM (e.g. the acceptance alarm of
            add_slo_alarms). Default: none.
        :param min_conversations: skip a cycle with fewer captured conversations. Default: 200.
        :param max_chars: drop longer conversations. Default: 32,000.
        :param job_max_runtime: the optimization job's limit. Default: 8 hours.
        :param job_poll_interval: between job status checks. Default: 10 minutes.
        :param evaluation_concurrency: streams per endpoint in the measurement. Default: 8.
        :param evaluation_requests: measured requests per endpoint. Default: 64.
        :param evaluation_output_tokens: tokens per request. Default: 256.
        :param margin: how much more output throughput the candidate must measure. Default: 0.05.
        :param rollback_alarms: alarms that roll the blue/green promotion back. Default: none.
        :param timeout: a cycle's limit. Default: 24 hours.
        """
        where = construct_path(scope, construct_id)
        require_instance(head, ServedEagleHead, "head", where, optional=False)
        require_str(model_s3_uri, "model_s3_uri", where, optional=False)
        require_str(schedule, "schedule", where)
        require_jsii(start_on_alarm, ALARM, "start_on_alarm", where)
        require_int(min_conversations, "min_conversations", where)
        require_int(max_chars, "max_chars", where, low=1)
        require_duration(job_max_runtime, "job_max_runtime", where, low_seconds=1, high_seconds=MAX_RUNTIME_S)
        # Step Functions Wait state: Seconds, a positive integer (one year at most, an execution's limit).
        require_duration(
            job_poll_interval, "job_poll_interval", where, low_seconds=1, high_seconds=MAX_RUN_SECONDS
        )
        require_int(evaluation_concurrency, "evaluation_concurrency", where, low=1)
        require_int(evaluation_requests, "evaluation_requests", where, low=1)
        require_int(evaluation_output_tokens, "evaluation_output_tokens", where, low=1)
        finite_number(margin, "margin", where, low=0, high=1, low_open=True, high_open=True)
        require_jsii_sequence(rollback_alarms, ALARM, "rollback_alarms", where)
        if len(rollback_alarms) > MAX_ROLLBACK_ALARMS:
            raise ValueError(
                f"{where}: rollback_alarms has {len(rollback_alarms)} alarms; allowed: at most {MAX_ROLLBACK_ALARMS}"
            )
        require_duration(timeout, "timeout", where, low_seconds=1, high_seconds=MAX_RUN_SECONDS)
        super().__init__(scope, construct_id)
        capture = getattr(endpoint, "capture_destination", None)
        if capture is None:
            raise ValueError(
                f"{self.node.path}: the endpoint needs data_capture=DataCaptureOptions(...): the loop trains on captured traffic"
            )
        if getattr(endpoint, "async_inference", None) is not None:
            raise ValueError(
                f"{self.node.path}: the loop measures streamed answers; an asynchronous endpoint has none"
            )
        draft = getattr(endpoint, "_trained_draft", None)
        if draft is None or draft.location != head.speculative_config(num_speculative_tokens=1).location:
            raise ValueError(
                f"{self.node.path}: the endpoint must serve the head's parameter: "
                "speculative=head.speculative_config(num_speculative_tokens=...)"
            )
        target = parse_s3_uri(model_s3_uri, "model_s3_uri")
        if not 0 < margin < 1:
            raise ValueError(f"{self.node.path}: margin is {margin}; allowed: more than 0, less than 1")
        if min_conversations < 1:
            raise ValueError(
                f"{self.node.path}: min_conversations is {min_conversations}; allowed: 1 or more"
            )
        poll = job_poll_interval or Duration.minutes(10)
        runtime = job_max_runtime or Duration.hours(8)
        run_timeout = timeout or Duration.hours(24)
        if getattr(endpoint, "security_groups", None) or getattr(
            endpoint.model, "enable_network_isolation", None
        ):
            raise ValueError(
                f"{self.node.path}: the loop's candidate and control endpoints copy the served model's image, "
                "environment and role, not its VPC or network isolation; an endpoint with either is not supported"
            )
        # The job, then two endpoints to start (up to 90 minutes), the measurement and a blue/green update
        # (up to 3 hours): a cycle must not time out in the middle of a promotion.
        if run_timeout.to_seconds() < runtime.to_seconds() + 5 * 3600:
            raise ValueError(
                f"{self.node.path}: timeout must be at least job_max_runtime + 5 hours "
                f"({int((runtime.to_seconds() + 5 * 3600) // 3600)} h), got {run_timeout.to_seconds() / 3600:g} h"
            )
        self.endpoint_name: str = endpoint.endpoint_name
        self.state_machine_name = f"speculative-infra-{Names.unique_id(self)}"[:80]
        self.head = head
        self.prefix = Names.unique_id(self).lower()[-24:].strip("-") or "eagle-loop"
        bucket, root = head.heads_bucket, head.heads_prefix
        work = f"{root}retraining/"

        self.job_role = job_role(self, head=head, target=target, bucket=bucket, work=work)
        self.last_cycle = ssm.StringParameter(
            self,
            "LastCycle",
            parameter_name=f"/speculative-infra/{Names.unique_id(self)}/last-cycle",
            string_value=EPOCH,
            description="When the last retraining cycle that built a dataset started",
        )
        dataset_fn = dataset_function(self, capture=capture, bucket=bucket, work=work)
        endpoints = sagemaker_arn(self, "endpoint", f"{self.prefix}-*")
        evaluate_fn = evaluate_function(
            self,
            served_endpoint_arn=endpoint.endpoint_arn,
            candidate_endpoints=endpoints,
            bucket=bucket,
            work=work,
        )
        functions = (dataset_fn, evaluate_fn)
        acknowledge_function_wildcards(
            functions, bucket=bucket, work=work, capture=capture, candidate_endpoints=endpoints
        )

        definition = cycle_definition(
            CycleContext(
                scope=self, prefix=self.prefix, endpoint_name=self.endpoint_name, bucket=bucket, work=work
            ),
            state_machine_name=self.state_machine_name,
            head=head,
            last_cycle=self.last_cycle,
            job_role=self.job_role,
            dataset_fn=dataset_fn,
            evaluate_fn=evaluate_fn,
            capture_uri=f"{capture.location.uri}{endpoint.endpoint_name}/",  # this endpoint's captures only
            target=target,
            instance_type=endpoint.resolved.spec.instance_type,
            endpoint_role_arn=endpoint.role.role_arn,
            poll=poll,
            runtime=runtime,
            evaluation={
                "concurrency": evaluation_concurrency,
                "requests": evaluation_requests,
                "output_tokens": evaluation_output_tokens,
                "margin": margin,
            },
            rollback_alarms=rollback_alarms,
            min_conversations=min_conversations,
            max_chars=max_chars,
        )
        self.state_machine = retraining_state_machine(
            self,
            definition,
            name=self.state_machine_name,
            timeout=run_timeout,
            comment=f"speculative-infra EAGLE retraining for {endpoint.node.path}",
        )
        complete_machine_permissions(
            self.state_machine,
            endpoint=endpoint,
            prefix=self.prefix,
            bucket=bucket,
            work=work,
            functions=functions,
        )
        if schedule is not None:
            self._add_schedule(schedule)
        if start_on_alarm is not None:
            rule = events.Rule(
                self,
                "OnAcceptanceDrop",
                event_pattern=events.EventPattern(
                    source=["aws.cloudwatch"],
                    detail_type=["CloudWatch Alarm State Change"],
                    resources=[start_on_alarm.alarm_arn],
                    detail={"state": {"value": ["ALARM"]}},
                ),
            )
            rule.add_target(targets.SfnStateMachine(self.state_machine))
        CfnOutput(self, "StateMachineArn", value=self.state_machine.state_machine_arn)

    def _add_schedule(self, expression: str) -> None:
        self.schedule = schedule_state_machine(
            self, self.state_machine, expression, "speculative-infra EAGLE retraining schedule"
        )
