"""EagleRetrainingLoop: captured traffic -> a retrained EAGLE head -> promoted only if it measures faster.

AWS Step Functions runs each cycle (docs/decisions/0005-eagle-retraining-loop.md); every AWS call is a
Step Functions AWS SDK integration, every wait a Wait state in a bounded loop. Two Lambda functions do
work, never wait: the dataset step (lambda/retraining_dataset) and the measurement
(lambda/retraining_evaluate, the benchmark engine).

The endpoint serves the head named by an SSM parameter (`ServedEagleHead`), through a CloudFormation
dynamic reference, so a later `cdk deploy` keeps what the loop promoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import ArnFormat, Aws, CfnOutput, Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from speculative_infra.constructs.custom_resource import handler_code, handler_function, stage_engine_handler
from speculative_infra.constructs.eagle_job import EagleOptimizationJob, TrainedDraft, mounted_draft_config
from speculative_infra.constructs.execution_role import (
    acknowledge_execution_permissions,
    add_execution_permissions,
)
from speculative_infra.constructs.image import image_uri, newest_lmi_container, repository_arn
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import (
    INVOKE_ACTIONS,
    read_prefix_statements,
    sagemaker_log_group_arn,
    write_logs_statement,
)
from speculative_infra.constructs.schedules import schedule_state_machine
from speculative_infra.s3_uri import S3Location, parse_s3_uri

EAGLE_CHANNEL = "eagle_model"
METRIC_NAMESPACE = "SpeculativeInfra/EagleRetraining"
EPOCH = "1970-01-01T00:00:00Z"


class ServedEagleHead(Construct):
    """The EAGLE head an endpoint serves, named by an SSM parameter the loop updates on promotion."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        heads_bucket: s3.IBucket,
        heads_prefix: str,
        initial_s3_uri: str,
        initial_ready: bool = True,
    ) -> None:
        """
        :param heads_bucket: where the heads live (the initial one and those the loop trains).
        :param heads_prefix: the prefix under which every head lives (the endpoint's role reads it).
        :param initial_s3_uri: the head served before the first promotion.
        :param initial_ready: whether that head exists when the endpoint deploys (false: a job that does
            not wait; the endpoint then warns, as with a TrainedDraft). Default: true.
        """
        super().__init__(scope, construct_id)
        self.heads_bucket = heads_bucket
        self.initial_ready = initial_ready
        self.heads_prefix = heads_prefix if heads_prefix.endswith("/") else heads_prefix + "/"
        # A literal name: a CloudFormation dynamic reference must name the parameter as written.
        self.parameter_name = f"/speculative-infra/{Names.unique_id(self)}/served-head"
        self.parameter = ssm.StringParameter(
            self,
            "Parameter",
            parameter_name=self.parameter_name,
            string_value=initial_s3_uri,
            description="The EAGLE head the endpoint serves (updated by its retraining loop)",
        )

    @classmethod
    def from_job(cls, scope: Construct, construct_id: str, job: EagleOptimizationJob) -> ServedEagleHead:
        """Start from an EagleOptimizationJob's head; the loop keeps its heads in the same bucket and prefix."""
        head = cls(
            scope,
            construct_id,
            heads_bucket=job.output_bucket,
            heads_prefix=job.output_root,
            initial_s3_uri=job.draft_s3_uri,
            initial_ready=job.wait,
        )
        head.node.add_dependency(job.resource)
        return head

    def speculative_config(
        self, *, num_speculative_tokens: int, method: str = "eagle3", **extra: Any
    ) -> TrainedDraft:
        """For SpeculativeVllmEndpoint(speculative=...): the head mounted at /opt/ml/model from wherever the
        parameter points when CloudFormation deploys the model."""
        return TrainedDraft(
            config=mounted_draft_config(method, num_speculative_tokens, extra),
            bucket=self.heads_bucket,
            key_prefix=self.heads_prefix,
            job=self.parameter,
            waits_for_completion=self.initial_ready,
            location=f"{{{{resolve:ssm:{self.parameter_name}}}}}",
        )


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
        self._endpoint_instance_type: str = endpoint.resolved.spec.instance_type
        self._endpoint_role_arn: str = endpoint.role.role_arn
        self.state_machine_name = f"speculative-infra-{Names.unique_id(self)}"[:80]
        self.head = head
        self.prefix = Names.unique_id(self).lower()[-24:].strip("-") or "eagle-loop"
        bucket, root = head.heads_bucket, head.heads_prefix
        work = f"{root}retraining/"

        self.job_role = self._job_role(target, bucket, work, capture)
        self.last_cycle = ssm.StringParameter(
            self,
            "LastCycle",
            parameter_name=f"/speculative-infra/{Names.unique_id(self)}/last-cycle",
            string_value=EPOCH,
            description="When the last retraining cycle that built a dataset started",
        )
        dataset_fn = handler_function(
            self,
            "DatasetFunction",
            handler="retraining_dataset.handler.handler",
            description="EAGLE retraining dataset",
            timeout=Duration.minutes(15),
            memory_size=1024,
            code=handler_code("retraining_dataset"),
        )
        capture_bucket = capture.location
        for statement in read_prefix_statements(capture_bucket):
            dataset_fn.add_to_role_policy(statement)
        dataset_fn.add_to_role_policy(
            iam.PolicyStatement(actions=["kms:Decrypt"], resources=[capture.kms_key.key_arn])
        )
        dataset_fn.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{work}*")])
        )
        evaluate_fn = handler_function(
            self,
            "EvaluateFunction",
            handler="retraining_evaluate.handler.handler",
            description="EAGLE retraining evaluation",
            timeout=Duration.minutes(15),
            memory_size=1769,
            code=lambda_.Code.from_asset(stage_engine_handler("retraining_evaluate")),
        )
        stack = Stack.of(self)
        endpoints = stack.format_arn(
            service="sagemaker", resource="endpoint", resource_name=f"{self.prefix}-*"
        )
        evaluate_fn.add_to_role_policy(
            iam.PolicyStatement(actions=INVOKE_ACTIONS, resources=[endpoint.endpoint_arn, endpoints])
        )
        work_location = S3Location(bucket=bucket.bucket_name, key=work)
        for statement in read_prefix_statements(work_location):
            evaluate_fn.add_to_role_policy(statement)
        assert evaluate_fn.role is not None
        acknowledge(
            evaluate_fn.role,
            "IAM5",
            "The cycles' datasets, under the loop's prefix only.",
            resource=work_location.object_arn_pattern(Aws.PARTITION),
        )
        for fn in (dataset_fn, evaluate_fn):
            assert fn.role is not None
            for resource in (
                bucket.arn_for_objects(f"{work}*"),
                capture_bucket.object_arn_pattern(Aws.PARTITION),
                endpoints,
            ):
                acknowledge(
                    fn.role,
                    "IAM5",
                    "One cycle's objects under the loop's prefixes, and its candidate endpoints (named per cycle).",
                    resource=resource,
                )

        definition = self._definition(
            dataset_fn=dataset_fn,
            evaluate_fn=evaluate_fn,
            capture_uri=f"{capture_bucket.uri}{endpoint.endpoint_name}/",  # this endpoint's captures only
            bucket=bucket,
            work=work,
            target=target,
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
        log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=self.state_machine_name,
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            timeout=run_timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
            comment=f"speculative-infra EAGLE retraining for {endpoint.node.path}",
        )
        self._grant_machine(self.state_machine.role, endpoint, bucket, work)
        # Keys: the endpoint's volume key is used again by the candidate and control endpoints (their config
        # copies it); a KMS-encrypted heads bucket is read and written by both functions and the job.
        if getattr(endpoint, "kms_key", None) is not None:
            endpoint.kms_key.grant(self.state_machine, "kms:CreateGrant", "kms:DescribeKey")
        if bucket.encryption_key is not None:
            for fn in (dataset_fn, evaluate_fn):
                bucket.encryption_key.grant(fn, "kms:Decrypt", "kms:GenerateDataKey")
        for fn in (dataset_fn, evaluate_fn):
            acknowledge(
                self.state_machine,
                "IAM5",
                "aws-cdk-lib's Lambda task may invoke any version of its own function (`<function arn>:*`).",
                resource=f"{fn.function_arn}:*",
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

    # --- the state machine ----------------------------------------------------------------------

    def _definition(self, **kw: Any) -> sfn.IChainable:
        bucket: s3.IBucket = kw["bucket"]
        work: str = kw["work"]
        target: S3Location = kw["target"]
        name = f"States.Format('{self.prefix}-{{}}', $.cycle.id)"
        candidate = f"States.Format('{self.prefix}-c-{{}}', $.cycle.id)"
        source = f"States.Format('{self.prefix}-s-{{}}', $.cycle.id)"
        cycle_dir = f"s3://{bucket.bucket_name}/{work}{{}}/"
        heads = f"States.Format('{cycle_dir}', $.cycle.id)"
        new_head = f"States.Format('{cycle_dir}draft/', $.cycle.id)"
        sm = "sagemaker"

        def call(
            id_: str, service: str, action: str, params: dict[str, Any], resources: list[str], **more: Any
        ) -> tasks.CallAwsService:
            task = tasks.CallAwsService(
                self, id_, service=service, action=action, parameters=params, iam_resources=resources, **more
            )
            # Throttling and transient service errors: three tries with backoff before any Catch applies.
            task.add_retry(
                errors=["States.TaskFailed"], max_attempts=3, interval=Duration.seconds(5), backoff_rate=3
            )
            return task

        start = sfn.Pass(
            self,
            "Cycle",
            parameters={
                "id.$": "States.ArrayGetItem(States.StringSplit(States.UUID(), '-'), 0)",
                "started.$": "$$.Execution.StartTime",
            },
            result_path="$.cycle",
        )
        running = call(
            "ListRunning",
            "sfn",
            "listExecutions",
            {"StateMachineArn.$": "$$.StateMachine.Id", "StatusFilter": "RUNNING"},
            [self._machine_arn()],
            result_selector={"count.$": "States.ArrayLength($.Executions)"},
            result_path="$.running",
        )
        already = sfn.Fail(
            self, "AlreadyRunning", error="CycleAlreadyRunning", cause="another cycle of this loop is running"
        )
        window = call(
            "ReadLastCycle",
            "ssm",
            "getParameter",
            {"Name": self.last_cycle.parameter_name},
            [self.last_cycle.parameter_arn],
            result_selector={"since.$": "$.Parameter.Value"},
            result_path="$.window",
        )
        dataset = tasks.LambdaInvoke(
            self,
            "BuildDataset",
            lambda_function=kw["dataset_fn"],
            payload=sfn.TaskInput.from_object(
                {
                    "capture_s3_uri": kw["capture_uri"],
                    "since": sfn.JsonPath.string_at("$.window.since"),
                    "until": sfn.JsonPath.string_at("$.cycle.started"),
                    "output_s3_uri": sfn.JsonPath.format(
                        cycle_dir + "dataset/", sfn.JsonPath.string_at("$.cycle.id")
                    ),
                    "min_conversations": kw["min_conversations"],
                    "max_chars": kw["max_chars"],
                }
            ),
            result_selector={
                "skip.$": "$.Payload.skip",
                "conversations.$": "$.Payload.conversations",
                "uri.$": "$.Payload.dataset_s3_uri",
            },
            result_path="$.dataset",
        )
        served_head = call(
            "ServedHead",
            "ssm",
            "getParameter",
            {"Name": self.head.parameter_name},
            [self.head.parameter.parameter_arn],
            result_selector={"uri.$": "$.Parameter.Value"},
            result_path="$.head",
        )
        lmi = newest_lmi_container()
        source_model = call(
            "RegisterSourceModel",
            sm,
            "createModel",
            {
                "ModelName.$": source,
                "ExecutionRoleArn": self.job_role.role_arn,
                "PrimaryContainer": {
                    "Image": image_uri(self, lmi),
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri": target.uri if target.uri.endswith("/") else target.uri + "/",
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        }
                    },
                    "AdditionalModelDataSources": [
                        {
                            "ChannelName": EAGLE_CHANNEL,
                            "S3DataSource": {
                                "S3Uri.$": "$.head.uri",
                                "S3DataType": "S3Prefix",
                                "CompressionType": "None",
                            },
                        }
                    ],
                },
            },
            [self._arn("model", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
            additional_iam_statements=[self._pass_role(self.job_role.role_arn)],
        )
        start_job = call(
            "StartJob",
            sm,
            "createOptimizationJob",
            {
                "OptimizationJobName.$": name,
                "RoleArn": self.job_role.role_arn,
                "ModelSource": {"SageMakerModel": {"ModelName.$": source}},
                "DeploymentInstanceType": self._endpoint_instance_type,
                "OptimizationConfigs": [
                    {
                        "ModelSpeculativeDecodingConfig": {
                            "Technique": "EAGLE",
                            "TrainingDataSource": {"S3Uri.$": "$.dataset.uri", "S3DataType": "S3Prefix"},
                        }
                    }
                ],
                "OutputConfig": {"S3OutputLocation.$": heads},
                "StoppingCondition": {"MaxRuntimeInSeconds": int(kw["runtime"].to_seconds())},
            },
            [self._arn("optimization-job", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
            additional_iam_statements=[self._pass_role(self.job_role.role_arn)],
        )
        polls_job = sfn.Pass(self, "JobPolls", parameters={"count": 0}, result_path="$.polls")
        wait_job = sfn.Wait(self, "WaitForJob", time=sfn.WaitTime.duration(kw["poll"]))
        describe_job = call(
            "DescribeJob",
            sm,
            "describeOptimizationJob",
            {"OptimizationJobName.$": name},
            [self._arn("optimization-job", f"{self.prefix}-*")],
            result_selector={"status.$": "$.OptimizationJobStatus"},
            result_path="$.job",
        )
        count_job = sfn.Pass(
            self,
            "CountJobPoll",
            parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
            result_path="$.polls",
        )
        max_job_polls = int(kw["runtime"].to_seconds() // kw["poll"].to_seconds()) + 2
        job_failed = sfn.Fail(
            self,
            "JobFailed",
            error="OptimizationJobFailed",
            cause="the optimization job failed, stopped or outlived its polls; the served head is unchanged",
        )

        served = call(
            "DescribeServedEndpoint",
            sm,
            "describeEndpoint",
            {"EndpointName": self.endpoint_name},
            [self._endpoint_arn()],
            result_selector={"config.$": "$.EndpointConfigName"},
            result_path="$.served",
        )
        served_config = call(
            "DescribeServedConfig",
            sm,
            "describeEndpointConfig",
            {"EndpointConfigName.$": "$.served.config"},
            [self._arn("endpoint-config", "*")],
            result_selector={
                "variant.$": "$.ProductionVariants[0]",
                "capture.$": "$.DataCaptureConfig",
                "config.$": "$",
            },
            result_path="$.servedConfig",
        )
        served_model = call(
            "DescribeServedModel",
            sm,
            "describeModel",
            {"ModelName.$": "$.servedConfig.variant.ModelName"},
            [self._arn("model", "*")],
            result_selector={
                "role.$": "$.ExecutionRoleArn",
                "image.$": "$.PrimaryContainer.Image",
                "env.$": "$.PrimaryContainer.Environment",
            },
            result_path="$.servedModel",
        )
        candidate_model = call(
            "CreateCandidateModel",
            sm,
            "createModel",
            {
                "ModelName.$": candidate,
                "ExecutionRoleArn.$": "$.servedModel.role",
                "PrimaryContainer": {
                    "Image.$": "$.servedModel.image",
                    "Environment.$": "$.servedModel.env",
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri.$": new_head,
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        }
                    },
                },
            },
            [self._arn("model", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
            additional_iam_statements=[self._pass_role(self._endpoint_role_arn)],
        )
        patch = sfn.Pass(
            self, "CandidateVariant", parameters={"ModelName.$": candidate}, result_path="$.candidatePatch"
        )
        config_name = sfn.Pass(
            self, "CandidateConfigName", parameters={"name.$": candidate}, result_path="$.candidateConfig"
        )
        merged = sfn.Pass(
            self,
            "MergeVariant",
            parameters={"variant.$": "States.JsonMerge($.servedConfig.variant, $.candidatePatch, false)"},
            result_path="$.candidate",
        )
        # The served config's capture and key go with the candidate: a promotion keeps both.
        config_with_key = call(
            "CreateCandidateConfigWithKey",
            sm,
            "createEndpointConfig",
            {
                "EndpointConfigName.$": candidate,
                "ProductionVariants.$": "States.Array($.candidate.variant)",
                "DataCaptureConfig.$": "$.servedConfig.capture",
                "KmsKeyId.$": "$.servedConfig.config.KmsKeyId",
            },
            [self._arn("endpoint-config", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        config_without_key = call(
            "CreateCandidateConfig",
            sm,
            "createEndpointConfig",
            {
                "EndpointConfigName.$": candidate,
                "ProductionVariants.$": "States.Array($.candidate.variant)",
                "DataCaptureConfig.$": "$.servedConfig.capture",
            },
            [self._arn("endpoint-config", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        create_candidate = call(
            "CreateCandidateEndpoint",
            sm,
            "createEndpoint",
            {"EndpointName.$": candidate, "EndpointConfigName.$": candidate},
            [self._arn("endpoint", f"{self.prefix}-*"), self._arn("endpoint-config", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        # A control endpoint on the served config: both measured idle, side by side, so production traffic on
        # the served endpoint does not make the candidate look faster than it is.
        control = f"States.Format('{self.prefix}-b-{{}}', $.cycle.id)"
        create_control = call(
            "CreateControlEndpoint",
            sm,
            "createEndpoint",
            {"EndpointName.$": control, "EndpointConfigName.$": "$.served.config"},
            [self._arn("endpoint", f"{self.prefix}-*"), self._arn("endpoint-config", "*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        describe_control = call(
            "DescribeControl",
            sm,
            "describeEndpoint",
            {"EndpointName.$": control},
            [self._arn("endpoint", f"{self.prefix}-*")],
            result_selector={"status.$": "$.EndpointStatus"},
            result_path="$.controlStatus",
        )
        polls_candidate = sfn.Pass(self, "CandidatePolls", parameters={"count": 0}, result_path="$.polls")
        wait_candidate = sfn.Wait(self, "WaitForCandidate", time=sfn.WaitTime.duration(Duration.minutes(1)))
        describe_candidate = call(
            "DescribeCandidate",
            sm,
            "describeEndpoint",
            {"EndpointName.$": candidate},
            [self._arn("endpoint", f"{self.prefix}-*")],
            result_selector={"status.$": "$.EndpointStatus"},
            result_path="$.candidateStatus",
        )
        count_candidate = sfn.Pass(
            self,
            "CountCandidatePoll",
            parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
            result_path="$.polls",
        )
        evaluate = tasks.LambdaInvoke(
            self,
            "Evaluate",
            lambda_function=kw["evaluate_fn"],
            payload=sfn.TaskInput.from_object(
                {
                    "served": sfn.JsonPath.format(
                        f"{self.prefix}-b-{{}}", sfn.JsonPath.string_at("$.cycle.id")
                    ),
                    "candidate": sfn.JsonPath.format(
                        f"{self.prefix}-c-{{}}", sfn.JsonPath.string_at("$.cycle.id")
                    ),
                    "container": "vllm",
                    "dataset_s3_uri": sfn.JsonPath.string_at("$.dataset.uri"),
                    **kw["evaluation"],
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
            return call(
                id_,
                sm,
                "deleteEndpoint",
                {"EndpointName.$": name},
                [self._arn("endpoint", f"{self.prefix}-*")],
                result_path=sfn.JsonPath.DISCARD,
            )

        # After the evaluation, and (as the clean-up) after any failure once the endpoints exist.
        delete_candidate = delete_endpoint("DeleteCandidateEndpoint", candidate)
        delete_control = delete_endpoint("DeleteControlEndpoint", control)
        cleanup = delete_endpoint("CleanUpCandidate", candidate)
        cleanup_control = delete_endpoint("CleanUpControl", control)
        cycle_failed = sfn.Fail(self, "CycleFailed", error="CycleFailed", cause_path="$.error.Cause")
        # Each deletion is tried (with retries) whatever the other did; the cycle then fails with its cause.
        cleanup.add_catch(cleanup_control, errors=["States.ALL"], result_path="$.cleanupError")
        cleanup_control.add_catch(cycle_failed, errors=["States.ALL"], result_path="$.cleanupError")
        cleanup.next(cleanup_control).next(cycle_failed)
        not_in_service = sfn.Pass(
            self,
            "CandidateOrControlNotInService",
            parameters={
                "Error": "EndpointNotInService",
                "Cause": "the candidate or control endpoint failed or did not reach InService within 90 minutes",
            },
            result_path="$.error",
        )
        not_in_service.next(cleanup)

        deployment: dict[str, Any] = {
            "BlueGreenUpdatePolicy": {
                "TrafficRoutingConfiguration": {"Type": "ALL_AT_ONCE", "WaitIntervalInSeconds": 300},
                "TerminationWaitInSeconds": 300,
            }
        }
        if kw["rollback_alarms"]:
            deployment["AutoRollbackConfiguration"] = {
                "Alarms": [{"AlarmName": a.alarm_name} for a in kw["rollback_alarms"]]
            }
        promote = call(
            "Promote",
            sm,
            "updateEndpoint",
            {
                "EndpointName": self.endpoint_name,
                "EndpointConfigName.$": candidate,
                "DeploymentConfig": deployment,
            },
            [self._endpoint_arn(), self._arn("endpoint-config", f"{self.prefix}-*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        polls_promote = sfn.Pass(self, "PromotePolls", parameters={"count": 0}, result_path="$.polls")
        wait_promote = sfn.Wait(self, "WaitForPromotion", time=sfn.WaitTime.duration(Duration.minutes(1)))
        describe_promote = call(
            "DescribePromotion",
            sm,
            "describeEndpoint",
            {"EndpointName": self.endpoint_name},
            [self._endpoint_arn()],
            result_selector={
                "status.$": "$.EndpointStatus",
                "config.$": "$.EndpointConfigName",
                "describe.$": "$",
            },
            result_path="$.promotion",
        )
        count_promote = sfn.Pass(
            self,
            "CountPromotePoll",
            parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
            result_path="$.polls",
        )
        put_head = call(
            "ServeNewHead",
            "ssm",
            "putParameter",
            {"Name": self.head.parameter_name, "Value.$": new_head, "Overwrite": True, "Type": "String"},
            [self.head.parameter.parameter_arn],
            result_path=sfn.JsonPath.DISCARD,
        )

        def record(id_: str, decision: str) -> sfn.IChainable:
            body = sfn.Pass(self, f"{id_}Decision", parameters={"value": decision}, result_path="$.decision")
            put = call(
                f"{id_}Record",
                "s3",
                "putObject",
                {
                    "Bucket": bucket.bucket_name,
                    "Key.$": f"States.Format('{work}{{}}/cycle.json', $.cycle.id)",
                    "Body.$": "States.JsonToString($)",
                    "ContentType": "application/json",
                    "ServerSideEncryption": "AES256",
                },
                [bucket.arn_for_objects(f"{work}*")],
                result_path=sfn.JsonPath.DISCARD,
            )
            metric = call(
                f"{id_}Metric",
                "cloudwatch",
                "putMetricData",
                {
                    "Namespace": METRIC_NAMESPACE,
                    "MetricData": [
                        {
                            "MetricName": "Promoted",
                            "Value": 1 if decision == "promoted" else 0,
                            "Unit": "Count",
                            "Dimensions": [{"Name": "Endpoint", "Value": self.endpoint_name}],
                        },
                        {
                            "MetricName": "Cycles",
                            "Value": 1,
                            "Unit": "Count",
                            "Dimensions": [
                                {"Name": "Endpoint", "Value": self.endpoint_name},
                                {"Name": "Decision", "Value": decision},
                            ],
                        },
                    ],
                },
                ["*"],
                result_path=sfn.JsonPath.DISCARD,
                additional_iam_statements=[],
            )
            chain = sfn.Chain.start(body).next(put).next(metric)
            if decision != "skipped":
                since = call(
                    f"{id_}Window",
                    "ssm",
                    "putParameter",
                    {
                        "Name": self.last_cycle.parameter_name,
                        "Value.$": "$.cycle.started",
                        "Overwrite": True,
                        "Type": "String",
                    },
                    [self.last_cycle.parameter_arn],
                    result_path=sfn.JsonPath.DISCARD,
                )
                chain = chain.next(since)
            return chain.next(sfn.Succeed(self, f"{id_}Done"))

        promoted = record("Promoted", "promoted")
        kept = record("Kept", "kept")
        rolled_back = record("RolledBack", "rolled_back")
        skipped = record("Skipped", "skipped")

        # Failures after the candidate exists go through its deletion; before it, straight to a Fail.
        for state in (candidate_model, config_with_key, config_without_key):
            state.add_catch(
                sfn.Fail(self, f"{state.node.id}Failed", error="CycleFailed", cause_path="$.error.Cause"),
                result_path="$.error",
            )
        after_candidate: list[sfn.TaskStateBase] = [
            create_candidate,
            create_control,
            describe_candidate,
            describe_control,
            evaluate,
            delete_candidate,
            delete_control,
        ]
        for task in after_candidate:
            task.add_catch(cleanup, result_path="$.error")
        before_candidate: list[sfn.TaskStateBase] = [
            window,
            dataset,
            served_head,
            source_model,
            start_job,
            describe_job,
            served,
            served_config,
            served_model,
        ]
        for early in before_candidate:
            early.add_catch(
                sfn.Fail(self, f"{early.node.id}Failed", error="CycleFailed", cause_path="$.error.Cause"),
                result_path="$.error",
            )

        decide = (
            sfn.Choice(self, "FasterThanServed")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.number_greater_than_json_path(
                        "$.evaluation.candidate.output_throughput", "$.evaluation.required_output_throughput"
                    ),
                    sfn.Condition.number_greater_than_equals_json_path(
                        "$.evaluation.candidate.tokens_per_chunk", "$.evaluation.served.tokens_per_chunk"
                    ),
                ),
                promote.next(polls_promote)
                .next(wait_promote)
                .next(describe_promote)
                .next(
                    sfn.Choice(self, "PromotionDone")
                    .when(
                        sfn.Condition.and_(
                            sfn.Condition.string_equals("$.promotion.status", "InService"),
                            sfn.Condition.string_equals_json_path(
                                "$.promotion.config", "$.candidateConfig.name"
                            ),
                        ),
                        put_head.next(promoted),
                    )
                    # Rolled back (the alarms fired): in service on the old config.
                    .when(sfn.Condition.string_equals("$.promotion.status", "InService"), rolled_back)
                    .when(
                        sfn.Condition.number_greater_than("$.polls.count", 180),
                        sfn.Fail(
                            self,
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
                            self,
                            "PromotionFailed",
                            error="PromotionFailed",
                            cause="UpdateEndpoint failed and the endpoint is not in service: see its FailureReason",
                        ),
                    )
                    .otherwise(count_promote.next(wait_promote))
                ),
            )
            .otherwise(kept)
        )
        candidate_ready = (
            sfn.Choice(self, "CandidateInService")
            .when(
                sfn.Condition.and_(
                    sfn.Condition.string_equals("$.candidateStatus.status", "InService"),
                    sfn.Condition.string_equals("$.controlStatus.status", "InService"),
                ),
                evaluate.next(delete_candidate).next(delete_control).next(decide),
            )
            .when(
                sfn.Condition.or_(
                    sfn.Condition.string_equals("$.candidateStatus.status", "Failed"),
                    sfn.Condition.string_equals("$.controlStatus.status", "Failed"),
                ),
                not_in_service,
            )
            .when(sfn.Condition.number_greater_than("$.polls.count", 90), not_in_service)
            .otherwise(count_candidate.next(wait_candidate))
        )
        key_choice = (
            sfn.Choice(self, "ServedConfigHasKey")
            .when(sfn.Condition.is_present("$.servedConfig.config.KmsKeyId"), config_with_key)
            .otherwise(config_without_key)
        )
        after_config = (
            create_candidate.next(create_control)
            .next(polls_candidate)
            .next(wait_candidate)
            .next(describe_candidate)
            .next(describe_control)
            .next(candidate_ready)
        )
        config_with_key.next(after_config)
        config_without_key.next(after_config)
        job_done = (
            sfn.Choice(self, "JobDone")
            .when(
                sfn.Condition.string_equals("$.job.status", "COMPLETED"),
                served.next(served_config)
                .next(served_model)
                .next(candidate_model)
                .next(patch)
                .next(config_name)
                .next(merged)
                .next(key_choice),
            )
            .when(
                sfn.Condition.or_(
                    sfn.Condition.string_equals("$.job.status", "FAILED"),
                    sfn.Condition.string_equals("$.job.status", "STOPPED"),
                ),
                job_failed,
            )
            .when(sfn.Condition.number_greater_than("$.polls.count", max_job_polls), job_failed)
            .otherwise(count_job.next(wait_job))
        )
        enough = (
            sfn.Choice(self, "EnoughConversations")
            .when(sfn.Condition.boolean_equals("$.dataset.skip", True), skipped)
            .otherwise(
                served_head.next(source_model)
                .next(start_job)
                .next(polls_job)
                .next(wait_job)
                .next(describe_job)
                .next(job_done)
            )
        )
        alone = (
            sfn.Choice(self, "Alone")
            .when(sfn.Condition.number_greater_than("$.running.count", 1), already)
            .otherwise(window.next(dataset).next(enough))
        )
        return sfn.Chain.start(start).next(running).next(alone)

    # --- permissions and triggers -----------------------------------------------------------------

    def _arn(self, resource: str, name: str) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource=resource, resource_name=name)

    def _endpoint_arn(self) -> str:
        return Stack.of(self).format_arn(service="sagemaker", resource="endpoint", resource_name="*")

    def _machine_arn(self) -> str:
        return Stack.of(self).format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.state_machine_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def _pass_role(self, role_arn: str) -> iam.PolicyStatement:
        return iam.PolicyStatement(
            actions=["iam:PassRole"],
            resources=[role_arn],
            conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
        )

    def _job_role(self, target: S3Location, bucket: s3.IBucket, work: str, capture: Any) -> iam.Role:
        """The optimization job's role: the target's weights, the heads, the cycle's dataset and output."""
        role = iam.Role(
            self,
            "JobRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="speculative-infra EAGLE retraining job role",
        )
        lmi = newest_lmi_container()
        heads = S3Location(bucket=bucket.bucket_name, key=self.head.heads_prefix)
        add_execution_permissions(
            role, image_repository_arns=[repository_arn(self, lmi)], model_data=[target, heads]
        )
        acknowledge_execution_permissions(role, [target, heads])
        role.add_to_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[bucket.arn_for_objects(f"{work}*")])
        )
        role.add_to_policy(write_logs_statement([sagemaker_log_group_arn("*")]))
        acknowledge(
            role,
            "IAM5",
            "SageMaker names the job's log streams at run time under /aws/sagemaker/.",
            resource=sagemaker_log_group_arn("*"),
        )
        if bucket.encryption_key is not None:
            bucket.encryption_key.grant(role, "kms:Decrypt", "kms:GenerateDataKey")
        acknowledge(
            role,
            "IAM5",
            "The cycles' heads and datasets, under the loop's prefix only.",
            resource=bucket.arn_for_objects(f"{work}*"),
        )
        return role

    def _grant_machine(self, role: iam.IRole, endpoint: Any, bucket: s3.IBucket, work: str) -> None:
        reason = (
            "Each cycle names its job, models, endpoint config and candidate endpoint after the loop's prefix and "
            "a cycle id; the served endpoint's config and model are named by CloudFormation (or an earlier "
            "cycle), so they are read by pattern; logging, X-Ray and PutMetricData accept no resource."
        )
        for resource in (
            self._arn("model", f"{self.prefix}-*"),
            self._arn("model", "*"),
            self._arn("endpoint-config", f"{self.prefix}-*"),
            self._arn("endpoint-config", "*"),
            self._arn("endpoint", f"{self.prefix}-*"),
            self._arn("endpoint", "*"),
            self._arn("optimization-job", f"{self.prefix}-*"),
            bucket.arn_for_objects(f"{work}*"),
            "*",
        ):
            acknowledge(self.state_machine, "IAM5", reason, resource=resource)

    def _add_schedule(self, expression: str) -> None:
        self.schedule = schedule_state_machine(
            self, self.state_machine, expression, "speculative-infra EAGLE retraining schedule"
        )
