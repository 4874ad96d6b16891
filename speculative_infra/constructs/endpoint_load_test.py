"""EndpointLoadTest: a stepped load test of up to a week across Lambda workers, on Step Functions.

A Distributed Map starts one child execution per (wave, worker); each waits on Step Functions' own timer
until its wave's launch, runs one wave's slice of the shared arrival schedule with the benchmark engine
and writes its records and sketches to S3; a merge step computes the percentiles from the merged
sketches, lines the client's timeline up with the endpoint's CloudWatch metrics and scaling activities,
and writes JSON, Markdown and SVG (docs/load-testing.md). Nothing runs until an execution is started
(`speculative-infra loadtest STATE_MACHINE_ARN`, or the console).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import ArnFormat, CfnOutput, Duration, Names, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from speculative_infra.benchmark.distributed.profile import LoadTestConfig
from speculative_infra.constructs.benchmark_target import Benchmarkable
from speculative_infra.constructs.custom_resource import handler_function, stage_engine_handler
from speculative_infra.constructs.endpoint_benchmark import VCPU_MEMORY_MB, BenchmarkSlo
from speculative_infra.constructs.load_test_definition import load_test_definition
from speculative_infra.constructs.monitoring_target import Monitorable
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import INVOKE_ACTIONS
from speculative_infra.constructs.prop_checks import (
    BUCKET,
    construct_path,
    require_jsii,
    require_str,
    wrong_type,
)

METRIC_NAMESPACE = "SpeculativeInfra/EndpointLoadTest"
MERGE_MEMORY_MB = 4096  # every record of a test in one function: 2 million records are ~1.2 GB  # written by lambda/endpoint_load_test/handler.py
ENDPOINT_PLACEHOLDER = "${EndpointName}"
COMPONENT_PLACEHOLDER = "${ComponentName}"


class EndpointLoadTest(Construct):
    """A state machine that runs a stepped (or ramped) load test against an endpoint or inference component."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: Benchmarkable,
        steps: Sequence[Mapping[str, Any]],
        workers: int = 4,
        wave_seconds: float = 720.0,
        drain_seconds: float = 90.0,
        burstiness: float = 1.0,
        seed: str = "load-test",
        input_tokens: int = 1000,
        output_tokens: int = 560,
        shared_prefix_tokens: int = 0,
        slo: BenchmarkSlo | Mapping[str, float] | None = None,
        request_timeout_seconds: float = 300.0,
        worker_memory_mb: int = VCPU_MEMORY_MB,
        results_bucket: s3.IBucket | None = None,
        results_prefix: str = "endpoint-load-tests/",
    ) -> None:
        """
        :param target: the endpoint or inference component (SpeculativeVllmEndpoint, LmiInferenceComponent).
        :param steps: the profile, in order: each ``{"duration_s", "request_rate"}`` (open loop; add
            ``"ramp_to_rate"`` for a linear ramp) or ``{"duration_s", "concurrency"}`` (closed loop).
        :param workers: Lambda workers per wave. Default: 4 (each holds ~256 streams on its one vCPU).
        :param wave_seconds: sending time of one wave (with ``drain_seconds`` within one invocation).
            Default: 720.
        :param drain_seconds: time a worker lets its open requests finish after its wave. Default: 90.
        :param burstiness: gamma shape of the arrival gaps (1: Poisson). Default: 1.
        :param seed: seeds the arrival schedule. Default: "load-test".
        :param input_tokens: prompt tokens per request. Default: 1000.
        :param output_tokens: generated tokens per request. Default: 560.
        :param shared_prefix_tokens: tokens every prompt starts with. Default: 0.
        :param slo: per-request objectives for goodput and the SLO-breach figures. Default: none.
        :param request_timeout_seconds: Default: 300.
        :param worker_memory_mb: each worker's memory (Lambda gives one vCPU per 1,769 MB). Default: 1769.
        :param results_bucket: Default: a bucket is created (encrypted, TLS only, retained).
        :param results_prefix: each execution writes under <prefix><execution name>/.
            Default: "endpoint-load-tests/".
        """
        where = construct_path(scope, construct_id)
        if not isinstance(target, Benchmarkable) or not isinstance(target, Monitorable):
            raise wrong_type(where, "target", "a SpeculativeVllmEndpoint or an LmiInferenceComponent", target)
        if isinstance(steps, (str, bytes, Mapping)) or not isinstance(steps, Sequence):
            raise wrong_type(where, "steps", "a list of steps (mappings)", steps)
        require_jsii(results_bucket, BUCKET, "results_bucket", where)
        require_str(results_prefix, "results_prefix", where, optional=False)
        if isinstance(worker_memory_mb, bool) or not isinstance(worker_memory_mb, int):
            raise wrong_type(where, "worker_memory_mb", "an integer (MB)", worker_memory_mb)
        if not 128 <= worker_memory_mb <= 10_240:
            raise ValueError(
                f"{where}: worker_memory_mb must be 128 to 10240 (Lambda's range), got {worker_memory_mb}"
            )
        slo_model = (
            None
            if slo is None
            else (slo if isinstance(slo, BenchmarkSlo) else BenchmarkSlo.model_validate(slo))
        )
        super().__init__(scope, construct_id)
        info = target.benchmark_target()
        watched = target.monitoring_target()
        defaults = {
            "benchmark": {
                "target": {
                    "kind": "sagemaker",
                    "endpoint_name": ENDPOINT_PLACEHOLDER,
                    "inference_component_name": None
                    if info.component_name is None
                    else COMPONENT_PLACEHOLDER,
                    "container": info.container,
                    "client": "asyncio",  # the engine's own client: ~256 streams per core (docs/benchmarking.md)
                },
                "workload": {
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "shared_prefix_tokens": shared_prefix_tokens,
                },
                "load": {"request_timeout_s": request_timeout_seconds},
                "cost": {"price_per_hour": info.usd_per_hour, "instance_count": info.instance_count},
                "slo": None if slo_model is None else slo_model.model_dump(),
                "label": info.label,
            },
            # Anything but a mapping reaches the engine's check as it is, to be named in its error.
            "steps": [dict(step) if isinstance(step, Mapping) else step for step in steps],
            "workers": workers,
            "wave_s": wave_seconds,
            "drain_s": drain_seconds,
            "burstiness": burstiness,
            "seed": seed,
        }
        try:
            self.config = LoadTestConfig.from_dict(defaults)
        except (TypeError, ValueError) as error:  # ConfigError is a ValueError: it names the field
            raise ValueError(f"{self.node.path}: load test: {error}") from None
        self.results_bucket = results_bucket or self._bucket()
        prefix = results_prefix if results_prefix.endswith("/") else results_prefix + "/"
        objects = self.results_bucket.arn_for_objects(f"{prefix}*")
        code = lambda_.Code.from_asset(stage_engine_handler("endpoint_load_test"))
        functions: dict[str, lambda_.Function] = {}
        for name, fn_id, timeout, memory in (
            ("plan", "Plan", Duration.minutes(1), 256),
            ("worker", "Worker", Duration.minutes(15), worker_memory_mb),
            ("merge", "Merge", Duration.minutes(15), MERGE_MEMORY_MB),
        ):
            fn = handler_function(
                self,
                fn_id,
                handler=f"endpoint_load_test.handler.{name}",
                description=f"EndpointLoadTest {name}",
                timeout=timeout,
                memory_size=memory,
                code=code,
            )
            fn.add_to_role_policy(
                iam.PolicyStatement(actions=["s3:GetObject", "s3:PutObject"], resources=[objects])
            )
            # Listing under the prefix makes a missing output a 404 (NoSuchKey), not a 403: the merge reports
            # a worker that wrote nothing instead of failing on it.
            fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["s3:ListBucket"],
                    resources=[self.results_bucket.bucket_arn],
                    conditions={"StringLike": {"s3:prefix": [f"{prefix}*"]}},
                )
            )
            assert fn.role is not None
            acknowledge(
                fn.role,
                "IAM5",
                "Objects under the load-test results prefix only (one folder per run).",
                resource=objects,
            )
            functions[name] = fn
        functions["worker"].add_to_role_policy(
            iam.PolicyStatement(actions=INVOKE_ACTIONS, resources=info.invoke_arns)
        )
        self._grant_endpoint_reads(functions["merge"])
        self.state_machine_name = f"speculative-infra-{Names.unique_id(self)}"[:80]
        endpoint_target = {
            "endpoint_name": ENDPOINT_PLACEHOLDER,
            "variant_name": watched.variant_name,
            "inference_component_name": None if info.component_name is None else COMPONENT_PLACEHOLDER,
            "label": info.label,
        }
        definition = load_test_definition(
            defaults=self.config.to_dict(), target=endpoint_target, results_prefix=prefix
        )
        substitutions = {
            "PlanFunctionArn": functions["plan"].function_arn,
            "WorkerFunctionArn": functions["worker"].function_arn,
            "MergeFunctionArn": functions["merge"].function_arn,
            "ResultsBucket": self.results_bucket.bucket_name,
            "EndpointName": info.endpoint_name,
        }
        if info.component_name is not None:
            substitutions["ComponentName"] = info.component_name
        log_group = logs.LogGroup(
            self, "Logs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=self.state_machine_name,
            definition_body=sfn.DefinitionBody.from_string(json.dumps(definition)),
            definition_substitutions=substitutions,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL),
            comment=f"speculative-infra load test of {info.label}",
        )
        self._grant_machine(functions, objects)
        self.state_machine_arn = self.state_machine.state_machine_arn
        CfnOutput(
            self,
            "StateMachineArn",
            value=self.state_machine_arn,
            description="Start a load test: speculative-infra loadtest <this ARN>",
        )
        CfnOutput(self, "ResultsLocation", value=f"s3://{self.results_bucket.bucket_name}/{prefix}")

    def _bucket(self) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            "Results",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
        )
        acknowledge(
            bucket,
            "S1",
            "Holds only load-test results written by this construct's functions; access is limited to their roles.",
        )
        return bucket

    def _grant_endpoint_reads(self, merge: lambda_.Function) -> None:
        """The endpoint's metrics and scaling activities, and one namespace of its own metrics."""
        merge.add_to_role_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:GetMetricData", "application-autoscaling:DescribeScalingActivities"],
                resources=["*"],
            )
        )
        merge.add_to_role_policy(
            iam.PolicyStatement(
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
            )
        )
        assert merge.role is not None
        acknowledge(
            merge.role,
            "IAM5",
            "CloudWatch GetMetricData/PutMetricData and Application Auto Scaling DescribeScalingActivities accept "
            "no resource ARN (Service Authorization Reference); PutMetricData is limited to the load test's namespace.",
            resource="*",
        )

    def _grant_machine(self, functions: Mapping[str, lambda_.Function], objects: str) -> None:
        """What the Distributed Map needs: its functions, its own child executions, its items and results."""
        machine = self.state_machine
        stack = Stack.of(self)
        own = stack.format_arn(
            service="states",
            resource="stateMachine",
            resource_name=self.state_machine_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        executions = stack.format_arn(
            service="states",
            resource="execution",
            resource_name=f"{self.state_machine_name}/*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        for fn in functions.values():
            fn.grant_invoke(machine)
        machine.add_to_role_policy(iam.PolicyStatement(actions=["states:StartExecution"], resources=[own]))
        machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:DescribeExecution", "states:StopExecution"], resources=[executions]
            )
        )
        machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "s3:GetObject",
                    "s3:PutObject",
                    "s3:ListMultipartUploadParts",
                    "s3:AbortMultipartUpload",
                ],
                resources=[objects],
            )
        )
        reasons = {
            objects: "The Distributed Map reads its items and writes its results under the load-test prefix only.",
            executions: "The Distributed Map's child executions of this state machine (named by Step Functions).",
        }
        for resource, reason in reasons.items():
            acknowledge(machine, "IAM5", reason, resource=resource)
        for fn in functions.values():
            acknowledge(
                machine,
                "IAM5",
                "aws-cdk-lib's grant_invoke adds the function's versions and aliases (`<function arn>:*`).",
                resource=f"{fn.function_arn}:*",
            )
        acknowledge(
            machine,
            "IAM5",
            "Step Functions' CloudWatch Logs delivery actions accept no resource ARN; aws-cdk-lib adds them for logging.",
            resource="*",
        )
