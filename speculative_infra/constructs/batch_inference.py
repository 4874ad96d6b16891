"""BatchInference: the vLLM DLC (or DJL LMI) model over a file (or prefix) of chat requests as a SageMaker batch
transform job, run by AWS Step Functions (the `createTransformJob.sync` integration waits for the job on
AWS's side: no Lambda waits).

Started by `StartExecution` (input: optional ``{"input_s3_uri": "s3://..."}`` under the configured
input prefix), on a schedule (EventBridge Scheduler) or when an object lands under the input prefix
(EventBridge S3 events). Each run writes to ``<output_s3_uri><execution name>/``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from aws_cdk import Aws, CfnOutput, Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from speculative_infra.catalog import load_catalog
from speculative_infra.constructs.eagle_job import TrainedDraft
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import sagemaker_log_group_arn, write_logs_statement
from speculative_infra.constructs.prop_checks import (
    KEY,
    construct_path,
    require_bool,
    require_duration,
    require_int,
    require_jsii,
    require_str,
)
from speculative_infra.constructs.schedules import schedule_state_machine
from speculative_infra.constructs.vllm_model import SpeculativeVllmModel
from speculative_infra.s3_uri import parse_s3_uri
from speculative_infra.spec import EngineArgs, SpeculativeConfig

# The answer's length bounds an invocation: at most max_model_len tokens, each this long with the
# instance busy with a full batch. The slowest published pace: Qwen3-32B on ml.g5.12xlarge, 32 requests
# in flight, 600-token answers in up to 45.8 s, 76 ms a token, 27% slower than at 16 (aws-samples/
# sagemaker-genai-hosting-examples@3de810a6 07-benchmark/sagemaker-inference-benchmark-suite/results/
# backup_mar_9/qwen3-vanilla-g512xl_..._long_context_..._20260309_203530.csv); more requests in flight
# (max_num_seqs 64 here by default) are slower still. `speculative-infra bench --mode batch` measures
# the pace of a given deployment.
EXPECTED_TPOT_MS_FULL_BATCH = 100.0
TIMEOUT_MARGIN = 1.5
MIN_INVOCATION_TIMEOUT_S = 60
DEFAULT_INPUT_FILTER = "$.body"  # OpenAI Batch API lines: {"custom_id", "method", "url", "body"}
MAX_RUN_SECONDS = 365 * 24 * 3600  # Step Functions quotas: a Standard workflow execution lasts at most 1 year
_JOB_PREFIX_MAX = 26  # + "-" + a 36-character UUID = 63, the transform job name's limit


def _job_prefix(path: str) -> str:
    words = re.sub(r"[^a-zA-Z0-9]+", "-", path).strip("-")
    return (words[:_JOB_PREFIX_MAX].rstrip("-") or "batch").lower()


class BatchInference(Construct):
    """A batch transform job per Step Functions execution (see docs/constructs/batch-and-async.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        instance_type: str,
        input_s3_uri: str,
        output_s3_uri: str,
        model_id: str | None = None,
        model_data: str | None = None,
        model_facts: Mapping[str, Any] | None = None,
        vllm_version: str | None = None,
        lmi_version: str | None = None,
        engine: EngineArgs | Mapping[str, Any] | None = None,
        speculative: SpeculativeConfig | TrainedDraft | Mapping[str, Any] | None = None,
        instance_count: int = 1,
        inference_ami_version: str | None = None,
        environment: Mapping[str, str] | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        kms_key: kms.IKey | None = None,
        input_filter: str | None = DEFAULT_INPUT_FILTER,
        max_concurrent_transforms: int | None = None,
        max_payload_mb: int = 1,
        max_output_tokens: int | None = None,
        invocation_timeout: Duration | None = None,
        invocation_retries: int = 1,
        timeout: Duration | None = None,
        schedule: str | None = None,
        start_on_upload: bool = False,
    ) -> None:
        """
        :param instance_type: a GPU type batch transform offers (rule SI103: g4dn, g5, g6, g6e, p3; no g7e).
        :param input_s3_uri: the JSON-lines requests, a file or a prefix (``s3://bucket/prefix/``).
        :param output_s3_uri: where each run writes (``s3://bucket/prefix/``), one folder per execution.
        :param model_id: as SpeculativeVllmEndpoint. The model props (model_data, model_facts, vllm_version,
            engine, speculative, environment, hf_token) mean the same and go through the same rules.
        :param lmi_version: run the model on the DJL LMI container (vLLM async mode, as
            LmiInferenceComponent) of this major version instead of the vLLM DLC. Default: none.
        :param instance_count: instances of each job. Default: 1.
        :param inference_ami_version: the job's host image (TransformAmiVersion): "auto" (also None) picks
            the batch host image whose driver drives the GPU and runs the container. Default: "auto".
        :param kms_key: key for the answers in S3. Default: the bucket's encryption.
        :param input_filter: JSONPath of the request in each line, sent to the model; the whole line is joined
            with the answer. Default: "$.body" (OpenAI Batch API lines). None: each line is the request.
        :param max_concurrent_transforms: requests in flight per instance. Default: the engine's max_num_seqs,
            bounded so that it times max_payload_mb stays within 100 MB.
        :param max_payload_mb: the largest line, in MB. Default: 1.
        :param max_output_tokens: the longest answer asked for, to size the invocation timeout. Default:
            the engine's max_model_len.
        :param invocation_timeout: per request. Default: max_output_tokens x 100 ms x 1.5, 60 s to 1 hour
            (`speculative-infra bench --mode batch` measures the pace of a deployment).
        :param invocation_retries: retries of a failed request (0-3). Default: 1.
        :param timeout: the longest a run may take. Default: 24 hours.
        :param schedule: an EventBridge Scheduler expression (``cron(...)``, ``rate(...)``). Default: none.
        :param start_on_upload: start a run for each object created under the input prefix (the bucket
            must send events to EventBridge). Default: false.
        """
        where = construct_path(scope, construct_id)
        limits = load_catalog().sagemaker.transform_limits
        require_str(input_s3_uri, "input_s3_uri", where, optional=False)
        require_str(output_s3_uri, "output_s3_uri", where, optional=False)
        require_jsii(kms_key, KEY, "kms_key", where)
        require_str(input_filter, "input_filter", where)
        # botocore's SageMaker model: MaxConcurrentTransforms and MaxPayloadInMB are integers (their
        # product at most 100 MB, checked with the defaults below); ModelClientConfig
        # InvocationsTimeoutInSeconds 1-3600 and InvocationsMaxRetries 0-3.
        require_int(max_concurrent_transforms, "max_concurrent_transforms", where, low=1, optional=True)
        require_int(max_payload_mb, "max_payload_mb", where)
        require_int(max_output_tokens, "max_output_tokens", where, low=1, optional=True)
        require_duration(
            invocation_timeout,
            "invocation_timeout",
            where,
            low_seconds=1,
            high_seconds=limits.max_invocation_timeout_seconds,
        )
        require_int(invocation_retries, "invocation_retries", where)
        # Step Functions quotas: a Standard execution runs at most one year.
        require_duration(timeout, "timeout", where, low_seconds=1, high_seconds=MAX_RUN_SECONDS)
        require_str(schedule, "schedule", where)
        require_bool(start_on_upload, "start_on_upload", where)
        if max_output_tokens is not None and invocation_timeout is not None:
            raise ValueError(
                f"{where}: max_output_tokens sizes the default invocation_timeout; with invocation_timeout given "
                "it would be ignored: give one of them"
            )
        super().__init__(scope, construct_id)
        self.input = parse_s3_uri(input_s3_uri, "input_s3_uri")
        self.output = parse_s3_uri(output_s3_uri, "output_s3_uri")
        if any(c in self.output.uri for c in "'{}\\"):
            raise ValueError(
                f"{self.node.path}: output_s3_uri {output_s3_uri!r} has a quote, brace or backslash; allowed: letters, "
                "digits and / - _ . (it is written into the state machine's States.Format)"
            )
        if not 1 <= max_payload_mb <= limits.max_payload_mb:
            raise ValueError(
                f"{self.node.path}: max_payload_mb is {max_payload_mb}; allowed: 1 to {limits.max_payload_mb}"
            )
        if not 0 <= invocation_retries <= limits.max_invocation_retries:
            raise ValueError(
                f"{self.node.path}: invocation_retries is {invocation_retries}; allowed: 0 to "
                f"{limits.max_invocation_retries}"
            )
        self.model = SpeculativeVllmModel(
            self,
            "Model",
            instance_type=instance_type,
            model_id=model_id,
            model_data=model_data,
            model_facts=model_facts,
            vllm_version=vllm_version,
            lmi_version=lmi_version,
            engine=engine,
            speculative=speculative,
            instance_count=instance_count,
            inference_ami_version=inference_ami_version,
            environment=environment,
            hf_token=hf_token,
            kms_key=None,
            extra_model_data=[self.input],
            serving="batch",
        )
        resolved = self.model.resolved
        max_num_seqs = int(resolved.engine.get("max_num_seqs", 256))
        self.max_payload_mb = max_payload_mb
        self.invocation_retries = invocation_retries
        self.max_concurrent_transforms = self._concurrency(
            max_concurrent_transforms, max_num_seqs, limits.max_payload_mb
        )
        self.invocation_timeout_seconds = self._invocation_timeout(
            invocation_timeout, max_output_tokens or int(resolved.engine.get("max_model_len", 4096)), limits
        )
        self.host_image = resolved.host.inference_ami_version if resolved.host is not None else None
        self._grant_outputs(kms_key)

        run_timeout = timeout or Duration.hours(24)
        prefix = _job_prefix(self.node.path)
        defaults = sfn.Pass(
            self,
            "Defaults",
            parameters={"input_s3_uri": self.input.uri},
            result_path="$.defaults",
        )
        # An execution may name one file under the input prefix ({"input_s3_uri": ...}); the role reads
        # nothing else, so another location fails the job with AccessDenied.
        settings = sfn.Pass(
            self,
            "Settings",
            parameters={"merged.$": "States.JsonMerge($.defaults, $$.Execution.Input, false)"},
            result_path="$.settings",
        )
        transform = sfn.CustomState(
            self,
            "Transform",
            state_json={
                "Type": "Task",
                "Resource": f"arn:{Aws.PARTITION}:states:::sagemaker:createTransformJob.sync",
                "TimeoutSeconds": int(run_timeout.to_seconds()),
                "Parameters": self._transform_parameters(
                    prefix, instance_type, instance_count, input_filter, kms_key
                ),
                "ResultSelector": {
                    "TransformJobName.$": "$.TransformJobName",
                    "TransformJobStatus.$": "$.TransformJobStatus",
                    "TransformOutput.$": "$.TransformOutput",
                },
                "ResultPath": "$.job",
            },
        )
        failed = sfn.Fail(
            self,
            "JobFailed",
            comment="The transform job failed or timed out",
            cause_path="$.error.Cause",
            error_path="$.error.Error",
        )
        transform.add_catch(failed, errors=["States.ALL"], result_path="$.error")
        definition = defaults.next(settings).next(transform).next(sfn.Succeed(self, "Done"))
        log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            timeout=run_timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
            comment=f"speculative-infra batch inference: {resolved.model_id} on {instance_type}",
        )
        self._grant_transform(self.state_machine.role)
        acknowledge(
            self.state_machine,
            "IAM5",
            "aws-cdk-lib adds the Step Functions logging (logs:CreateLogDelivery, logs:PutResourcePolicy, ...) and "
            "X-Ray (xray:PutTraceSegments, ...) actions, which accept no resource ARN.",
            resource="*",
        )
        if schedule is not None:
            self._add_schedule(schedule)
        if start_on_upload:
            if self.output.bucket == self.input.bucket and self.output.key.startswith(self.input.key):
                raise ValueError(
                    f"{self.node.path}: output_s3_uri is under input_s3_uri with start_on_upload: each answer file "
                    "would start another run; put the answers elsewhere"
                )
            self._add_upload_trigger()
        CfnOutput(
            self,
            "StateMachineArn",
            value=self.state_machine.state_machine_arn,
            description="StartExecution on it",
        )

    # --- sizing -----------------------------------------------------------------------------------

    def _concurrency(self, given: int | None, max_num_seqs: int, payload_cap: int) -> int:
        ceiling = payload_cap // self.max_payload_mb  # MaxConcurrentTransforms x MaxPayloadInMB <= 100 MB
        value = given if given is not None else min(max_num_seqs, ceiling)
        if not 1 <= value <= ceiling:
            raise ValueError(
                f"{self.node.path}: max_concurrent_transforms is {value}; allowed: 1 to {ceiling} (times "
                f"max_payload_mb {self.max_payload_mb} it must stay within {payload_cap} MB)"
            )
        return value

    def _invocation_timeout(self, given: Duration | None, max_output_tokens: int, limits: Any) -> int:
        if given is not None:
            seconds = int(given.to_seconds())
        else:
            estimate = max_output_tokens * EXPECTED_TPOT_MS_FULL_BATCH / 1000.0 * TIMEOUT_MARGIN
            seconds = min(
                limits.max_invocation_timeout_seconds, max(MIN_INVOCATION_TIMEOUT_S, math.ceil(estimate))
            )
        if not 1 <= seconds <= limits.max_invocation_timeout_seconds:
            raise ValueError(
                f"{self.node.path}: invocation_timeout is {seconds} s; allowed: 1 to "
                f"{limits.max_invocation_timeout_seconds} s"
            )
        return seconds

    # --- the task ---------------------------------------------------------------------------------

    def _transform_parameters(
        self,
        prefix: str,
        instance_type: str,
        instance_count: int,
        input_filter: str | None,
        kms_key: kms.IKey | None,
    ) -> dict[str, Any]:
        output: dict[str, Any] = {
            "S3OutputPath.$": f"States.Format('{self.output.uri.rstrip('/')}/{{}}/', $$.Execution.Name)",
            "Accept": "application/json",
            "AssembleWith": "Line",
        }
        if kms_key is not None:
            output["KmsKeyId"] = kms_key.key_arn
        resources: dict[str, Any] = {"InstanceType": instance_type, "InstanceCount": instance_count}
        if self.host_image is not None:
            resources["TransformAmiVersion"] = self.host_image
        return {
            "TransformJobName.$": f"States.Format('{prefix}-{{}}', States.UUID())",
            "ModelName": self.model.model.attr_model_name,
            "BatchStrategy": "SingleRecord",
            "MaxConcurrentTransforms": self.max_concurrent_transforms,
            "MaxPayloadInMB": self.max_payload_mb,
            "ModelClientConfig": {
                "InvocationsTimeoutInSeconds": self.invocation_timeout_seconds,
                "InvocationsMaxRetries": self.invocation_retries,
            },
            "TransformInput": {
                "DataSource": {
                    "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri.$": "$.settings.merged.input_s3_uri"}
                },
                "ContentType": "application/json",
                "SplitType": "Line",
                "CompressionType": "None",
            },
            "TransformOutput": output,
            "TransformResources": resources,
            "DataProcessing": {
                **({"InputFilter": input_filter} if input_filter else {}),
                "JoinSource": "Input",
                "OutputFilter": "$",
            },
        }

    # --- permissions and triggers -----------------------------------------------------------------

    def _grant_outputs(self, kms_key: kms.IKey | None) -> None:
        """The model's role (the job runs with it) writes the answers under the output prefix, and the
        container's logs in /aws/sagemaker/TransformJobs (where a failed record's reason is)."""
        role = self.model.role
        logs_arn = sagemaker_log_group_arn("TransformJobs")
        role.add_to_principal_policy(write_logs_statement([logs_arn, f"{logs_arn}:*"]))
        acknowledge(
            role,
            "IAM5",
            "The transform jobs' own log group; SageMaker names the streams at run time.",
            resource=f"{logs_arn}:*",
        )
        objects = self.output.object_arn_pattern(Aws.PARTITION)
        role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[objects]))
        acknowledge(role, "IAM5", "Answers of the batch job, under its output prefix only.", resource=objects)
        if kms_key is not None:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt"], resources=[kms_key.key_arn]
                )
            )

    def _grant_transform(self, role: iam.IRole) -> None:
        """What the createTransformJob.sync integration calls (AWS Step Functions developer guide, "IAM
        policies for Amazon SageMaker AI"): the job API, and the managed EventBridge rule it waits with."""
        stack = Stack.of(self)
        jobs = stack.format_arn(service="sagemaker", resource="transform-job", resource_name="*")
        rule = stack.format_arn(
            service="events",
            resource="rule",
            resource_name="StepFunctionsGetEventsForSageMakerTransformJobsRule",
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "sagemaker:CreateTransformJob",
                    "sagemaker:DescribeTransformJob",
                    "sagemaker:StopTransformJob",
                    "sagemaker:ListTags",
                    # The .sync integration tags the job it starts (MANAGED_BY_AWS=STARTED_BY_STEP_FUNCTIONS).
                    "sagemaker:AddTags",
                ],
                resources=[jobs],
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["events:PutTargets", "events:PutRule", "events:DescribeRule"], resources=[rule]
            )
        )
        acknowledge(
            role,
            "IAM5",
            "Each run creates a transform job with a new name (a UUID), so the job ARN is only known as a pattern.",
            resource=jobs,
        )

    def _add_schedule(self, expression: str) -> None:
        self.schedule = schedule_state_machine(
            self, self.state_machine, expression, "speculative-infra batch inference schedule"
        )

    def _add_upload_trigger(self) -> None:
        """One run per object created under the input prefix, on that object alone."""
        self.upload_rule = events.Rule(
            self,
            "OnUpload",
            description="speculative-infra batch inference: a new requests file",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={
                    "bucket": {"name": [self.input.bucket]},
                    "object": {"key": [{"prefix": self.input.key}]},
                },
            ),
        )
        self.upload_rule.add_target(
            targets.SfnStateMachine(
                self.state_machine,
                input=events.RuleTargetInput.from_object(
                    {
                        "input_s3_uri": f"s3://{self.input.bucket}/"
                        + events.EventField.from_path("$.detail.object.key")
                    }
                ),
            )
        )
