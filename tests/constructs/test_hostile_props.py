"""Hostile props (issue 33): a prop of the wrong type or an impossible value is refused with an error naming
the construct path, the prop and the value, before any jsii call receives it, so the jsii kernel keeps
working (NaN or infinity sent to it would stop its process, and every later CDK call with it)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from speculative_infra import (
    AsyncInferenceOptions,
    BatchInference,
    DataCaptureOptions,
    DeploymentGuardrails,
    EagleOptimizationJob,
    EndpointBenchmark,
    InferenceComponentEndpoint,
    LmiInferenceComponent,
    SpeculativeVllmEndpoint,
)
from speculative_infra.constructs import prop_checks
from speculative_infra.constructs.endpoint_canary import EndpointCanary
from speculative_infra.constructs.endpoint_dashboard import EndpointDashboard
from speculative_infra.constructs.vllm_model import SpeculativeVllmModel

NAN, INF = math.nan, math.inf
ENGINE = {"max_model_len": 4096, "max_num_seqs": 64, "tensor_parallel_size": 1, "dtype": "bfloat16"}
EAGLE3 = {"method": "eagle3", "model": "RedHatAI/Qwen3-32B-speculator.eagle3", "num_speculative_tokens": 4}
ROLE_ARN = "arn:aws:iam::123456789012:role/my-role"
URIS = {"output_s3_uri": "s3://my-answers/b/", "input_s3_uri": "s3://my-requests/b/"}


def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2", account="123456789012"))


def endpoint(stack: cdk.Stack, **props: Any) -> SpeculativeVllmEndpoint:
    defaults = {
        "model_id": "Qwen/Qwen3-32B",
        "instance_type": "ml.g7e.2xlarge",
        "vllm_version": "0.15.1",
        "engine": ENGINE,
        "speculative": EAGLE3,
    }
    return SpeculativeVllmEndpoint(stack, "Qwen3", **{**defaults, **props})


def model(stack: cdk.Stack, **props: Any) -> SpeculativeVllmModel:
    defaults = {"model_id": "Qwen/Qwen3-32B", "instance_type": "ml.g7e.2xlarge", "engine": ENGINE}
    return SpeculativeVllmModel(stack, "Model", **{**defaults, **props})


def ic_endpoint(stack: cdk.Stack, **props: Any) -> InferenceComponentEndpoint:
    return InferenceComponentEndpoint(stack, "Endpoint", **{"instance_type": "ml.g6e.12xlarge", **props})


def component(stack: cdk.Stack, **props: Any) -> LmiInferenceComponent:
    defaults = {"model_id": "Qwen/Qwen3-32B", "instance_type": "ml.g6e.12xlarge"}
    return LmiInferenceComponent(stack, "Lmi", **{**defaults, **props})


def job(stack: cdk.Stack, **props: Any) -> EagleOptimizationJob:
    defaults = {"deployment_instance_type": "ml.g7e.2xlarge", "model_id": "Qwen/Qwen3-32B"}
    return EagleOptimizationJob(stack, "Job", **{**defaults, **props})


def batch(stack: cdk.Stack, **props: Any) -> BatchInference:
    defaults = {
        "instance_type": "ml.g6e.12xlarge",
        "model_id": "Qwen/Qwen3-32B",
        "input_s3_uri": "s3://my-requests/batch/",
        "output_s3_uri": "s3://my-answers/batch/",
    }
    return BatchInference(stack, "Batch", **{**defaults, **props})


def alarm(stack: cdk.Stack, name: str = "Alarm") -> cloudwatch.IAlarm:
    return cloudwatch.Alarm.from_alarm_arn(
        stack, name, f"arn:aws:cloudwatch:us-west-2:123456789012:alarm:{name}"
    )


Build = Callable[[cdk.Stack], Any]

# (id, build, exception type, what the message names besides the construct path)
CASES: list[tuple[str, Build, type[Exception], list[str]]] = [
    # SpeculativeVllmEndpoint and the model under it
    ("endpoint-engine-str", lambda s: endpoint(s, engine="x"), TypeError, ["S/Qwen3", "engine", "'x'"]),
    ("endpoint-engine-int", lambda s: endpoint(s, engine=5), TypeError, ["engine", "int 5"]),
    ("endpoint-speculative-str", lambda s: endpoint(s, speculative="eagle3"), TypeError, ["speculative"]),
    ("endpoint-scaling-str", lambda s: endpoint(s, scaling="1-4"), TypeError, ["scaling", "'1-4'"]),
    ("endpoint-model-facts-str", lambda s: endpoint(s, model_facts="xy"), TypeError, ["model_facts"]),
    ("endpoint-engine-nan", lambda s: endpoint(s, engine={**ENGINE, "gpu_memory_utilization": NAN}), ValueError,
     ["engine.gpu_memory_utilization", "nan", "finite"]),
    ("endpoint-scaling-inf", lambda s: endpoint(s, scaling={"min_capacity": 1, "max_capacity": 2, "target_value": INF}),
     ValueError, ["scaling.target_value", "inf"]),
    ("endpoint-role-arn", lambda s: endpoint(s, role=ROLE_ARN), TypeError, ["role", "aws_iam.IRole", ROLE_ARN]),
    ("endpoint-kms-arn", lambda s: endpoint(s, kms_key="arn:aws:kms:us-west-2:1:key/x"), TypeError, ["kms_key", "IKey"]),
    ("endpoint-hf-token-name", lambda s: endpoint(s, hf_token="hf/token"), TypeError, ["hf_token", "ISecret"]),
    ("endpoint-vpc-id", lambda s: endpoint(s, vpc="vpc-123"), TypeError, ["vpc", "IVpc", "vpc-123"]),
    ("endpoint-security-groups-str", lambda s: endpoint(s, security_groups=["sg-1"]), TypeError,
     ["security_groups[0]", "ISecurityGroup", "sg-1"]),
    ("endpoint-security-groups-without-vpc",
     lambda s: endpoint(s, security_groups=[ec2.SecurityGroup.from_security_group_id(s, "Sg", "sg-1")]),
     ValueError, ["security_groups", "give vpc"]),
    ("endpoint-subnets-without-vpc",
     lambda s: endpoint(s, vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED)),
     ValueError, ["vpc_subnets", "give vpc"]),
    ("endpoint-subnets-str", lambda s: endpoint(s, vpc_subnets="private"), TypeError, ["vpc_subnets", "SubnetSelection"]),
    ("endpoint-tags-list", lambda s: endpoint(s, tags=["team", "ml"]), TypeError, ["tags", "list"]),
    ("endpoint-tags-int-value", lambda s: endpoint(s, tags={"team": 1}), TypeError, ["tags['team']", "int 1"]),
    ("endpoint-tags-too-many", lambda s: endpoint(s, tags={f"k{i}": "v" for i in range(51)}), ValueError,
     ["tags", "51", "at most 50"]),
    ("endpoint-environment-list", lambda s: endpoint(s, environment=["A=1"]), TypeError, ["environment"]),
    ("endpoint-environment-int", lambda s: endpoint(s, environment={"A": 1}), TypeError, ["environment['A']"]),
    ("endpoint-instance-type-int", lambda s: endpoint(s, instance_type=5), TypeError, ["instance_type", "int 5"]),
    ("endpoint-model-id-int", lambda s: endpoint(s, model_id=5), TypeError, ["model_id"]),
    ("endpoint-name-int", lambda s: endpoint(s, endpoint_name=5), TypeError, ["endpoint_name", "int 5"]),
    ("endpoint-name-bad", lambda s: endpoint(s, endpoint_name="my_endpoint"), ValueError,
     ["endpoint_name", "'my_endpoint'", "1-63"]),
    ("endpoint-name-long", lambda s: endpoint(s, endpoint_name="a" + "-" * 200 + "b"), ValueError,
     ["endpoint_name", "1-63"]),
    ("endpoint-name-64", lambda s: endpoint(s, endpoint_name="a" * 64), ValueError, ["endpoint_name", "1-63"]),
    ("endpoint-name-newline", lambda s: endpoint(s, endpoint_name="abc\n"), ValueError,
     ["endpoint_name", "'abc\\n'"]),
    ("tag-key-aws", lambda s: endpoint(s, tags={"aws:cloudformation:x": "y"}), ValueError,
     ["tags key", "aws:"]),
    ("endpoint-count-huge", lambda s: endpoint(s, instance_count=1e30), TypeError, ["instance_count", "1e+30"]),
    ("endpoint-count-bool", lambda s: endpoint(s, instance_count=True), TypeError, ["instance_count", "bool True"]),
    ("endpoint-count-str", lambda s: endpoint(s, instance_count="2"), TypeError, ["instance_count", "'2'"]),
    ("endpoint-isolation-str", lambda s: endpoint(s, enable_network_isolation="no"), TypeError,
     ["enable_network_isolation", "'no'"]),
    ("endpoint-volume-nan", lambda s: endpoint(s, volume_size_in_gb=NAN), TypeError, ["volume_size_in_gb", "nan"]),
    ("endpoint-timeout-int", lambda s: endpoint(s, container_startup_health_check_timeout=600), TypeError,
     ["container_startup_health_check_timeout", "Duration", "600"]),
    ("endpoint-guardrails-dict", lambda s: endpoint(s, deployment_guardrails={"strategy": "rolling"}), TypeError,
     ["deployment_guardrails", "DeploymentGuardrails"]),
    ("endpoint-benchmark-str", lambda s: endpoint(s, benchmark="x"), TypeError, ["benchmark", "BenchmarkOptions"]),
    ("endpoint-benchmark-inf-price", lambda s: endpoint(s, benchmark={"price_per_hour": INF}), ValueError,
     ["benchmark.price_per_hour", "inf"]),
    ("endpoint-async-dict", lambda s: endpoint(s, async_inference=dict(URIS)), TypeError,
     ["async_inference", "AsyncInferenceOptions"]),
    ("endpoint-capture-dict", lambda s: endpoint(s, data_capture={"sampling_percentage": 5}), TypeError,
     ["data_capture", "DataCaptureOptions"]),
    ("endpoint-workload-str", lambda s: endpoint(s, workload="1000/560"), TypeError, ["workload", "'1000/560'"]),
    ("endpoint-workload-inf", lambda s: endpoint(s, workload={"input_tokens": 1, "output_tokens": 1,
                                                              "acceptance_length": INF}), ValueError,
     ["workload.acceptance_length", "inf"]),
    ("endpoint-extra-model-data-str", lambda s: endpoint(s, extra_model_data="s3://b/k/"), TypeError,
     ["extra_model_data", "list"]),
    ("model-serving-bad", lambda s: model(s, serving="stream"), ValueError, ["S/Model", "serving", "'stream'"]),
    # the options dataclasses (no construct path: they name themselves)
    ("guardrails-alarm-arn", lambda s: DeploymentGuardrails(alarms=["arn:aws:cloudwatch:x"]), TypeError,
     ["DeploymentGuardrails", "alarms[0]", "IAlarm"]),
    ("guardrails-alarms-str", lambda s: DeploymentGuardrails(alarms="arn:x"), TypeError, ["alarms", "list"]),
    ("guardrails-eleven-alarms", lambda s: DeploymentGuardrails(alarms=[alarm(s, f"A{i}") for i in range(11)]),
     ValueError, ["alarms", "11", "at most 10"]),
    ("guardrails-wait-nan", lambda s: DeploymentGuardrails(wait_interval_seconds=NAN), TypeError,
     ["wait_interval_seconds", "nan"]),
    ("guardrails-percent-float", lambda s: DeploymentGuardrails(strategy="rolling", rolling_batch_percent=25.5),
     TypeError, ["rolling_batch_percent", "25.5"]),
    ("guardrails-percent-blue-green", lambda s: DeploymentGuardrails(rolling_batch_percent=10), ValueError,
     ["rolling_batch_percent", "ignore"]),
    ("guardrails-termination-rolling", lambda s: DeploymentGuardrails(strategy="rolling", termination_wait_seconds=60),
     ValueError, ["termination_wait_seconds", "ignore"]),
    ("capture-sampling-nan", lambda s: DataCaptureOptions(sampling_percentage=NAN), TypeError,
     ["sampling_percentage", "nan"]),
    ("capture-sampling-float", lambda s: DataCaptureOptions(sampling_percentage=50.5), TypeError,
     ["sampling_percentage", "50.5"]),
    ("capture-kms-arn", lambda s: DataCaptureOptions(kms_key="arn:aws:kms:x"), TypeError, ["kms_key", "IKey"]),
    ("capture-types-str", lambda s: DataCaptureOptions(json_content_types="application/json"), TypeError,
     ["json_content_types", "list"]),
    ("capture-retention-float", lambda s: DataCaptureOptions(retention_days=1.5), TypeError, ["retention_days", "1.5"]),
    ("capture-retention-with-destination",
     lambda s: DataCaptureOptions(destination_s3_uri="s3://my-capture/x/", retention_days=7), ValueError,
     ["retention_days", "ignored"]),
    ("async-concurrency-nan", lambda s: AsyncInferenceOptions(**URIS, max_concurrent_invocations_per_instance=NAN),
     TypeError, ["max_concurrent_invocations_per_instance", "nan"]),
    ("async-concurrency-float", lambda s: AsyncInferenceOptions(**URIS, max_concurrent_invocations_per_instance=2.5),
     TypeError, ["max_concurrent_invocations_per_instance", "2.5"]),
    ("async-topic-arn", lambda s: AsyncInferenceOptions(**URIS, success_topic="arn:aws:sns:x"), TypeError,
     ["success_topic", "ITopic"]),
    ("async-uri-int", lambda s: AsyncInferenceOptions(output_s3_uri=5, input_s3_uri="s3://b/i/"), TypeError,
     ["output_s3_uri", "int 5"]),
    # InferenceComponentEndpoint and LmiInferenceComponent
    ("ic-min-huge", lambda s: ic_endpoint(s, min_instance_count=10**30), ValueError, ["S/Endpoint", "min_instance_count"]),
    ("ic-max-nan", lambda s: ic_endpoint(s, max_instance_count=NAN), TypeError, ["max_instance_count", "nan"]),
    ("ic-min-bool", lambda s: ic_endpoint(s, min_instance_count=True), TypeError, ["min_instance_count", "True"]),
    ("ic-routing-bad", lambda s: ic_endpoint(s, routing_strategy="FASTEST"), ValueError,
     ["routing_strategy", "'FASTEST'", "LEAST_OUTSTANDING_REQUESTS"]),
    ("ic-role-arn", lambda s: ic_endpoint(s, role=ROLE_ARN), TypeError, ["role", "IRole"]),
    ("ic-tags-list", lambda s: ic_endpoint(s, tags=["a"]), TypeError, ["tags"]),
    ("ic-ami-int", lambda s: ic_endpoint(s, inference_ami_version=5), TypeError, ["inference_ami_version"]),
    ("lmi-copies-huge", lambda s: component(s, copy_count=10**30), ValueError, ["S/Lmi", "copy_count"]),
    ("lmi-copies-nan", lambda s: component(s, copy_count=NAN), TypeError, ["copy_count", "nan"]),
    ("lmi-memory-nan", lambda s: component(s, min_memory_required_in_mb=NAN), TypeError,
     ["min_memory_required_in_mb", "nan"]),
    ("lmi-memory-negative", lambda s: component(s, min_memory_required_in_mb=-5), ValueError,
     ["min_memory_required_in_mb", "-5", "128 or more"]),
    ("lmi-endpoint-str", lambda s: component(s, instance_type=None, endpoint="my-endpoint"), TypeError,
     ["endpoint", "InferenceComponentEndpoint"]),
    ("lmi-name-int", lambda s: component(s, inference_component_name=5), TypeError, ["inference_component_name"]),
    ("lmi-routing-with-endpoint", lambda s: component(s, instance_type=None, endpoint=ic_endpoint(s),
                                                      routing_strategy="RANDOM"), ValueError,
     ["routing_strategy", "belong to the endpoint"]),
    ("lmi-hf-token-str", lambda s: component(s, hf_token="hf/token"), TypeError, ["hf_token", "ISecret"]),
    ("lmi-engine-str", lambda s: component(s, engine="x"), TypeError, ["engine"]),
    # EagleOptimizationJob
    ("job-runtime-int", lambda s: job(s, max_runtime=600), TypeError, ["S/Job", "max_runtime", "Duration"]),
    ("job-runtime-huge", lambda s: job(s, wait=False, max_runtime=cdk.Duration.days(10000)), ValueError,
     ["max_runtime", "864000000 s"]),
    ("job-tags-list", lambda s: job(s, tags=["a"]), TypeError, ["tags"]),
    ("job-tags-int", lambda s: job(s, tags={"a": 1}), TypeError, ["tags['a']"]),
    ("job-role-arn", lambda s: job(s, role=ROLE_ARN), TypeError, ["role", "IRole"]),
    ("job-kms-arn", lambda s: job(s, kms_key="arn:aws:kms:x"), TypeError, ["kms_key", "IKey"]),
    ("job-bucket-name", lambda s: job(s, output_bucket="my-bucket"), TypeError, ["output_bucket", "IBucket"]),
    ("job-access-logs-with-bucket",
     lambda s: job(s, output_bucket=s3.Bucket.from_bucket_name(s, "B", "my-out"),
                   access_logs_bucket=s3.Bucket.from_bucket_name(s, "L", "my-logs")), ValueError,
     ["access_logs_bucket", "ignored"]),
    ("job-eula-without-s3", lambda s: job(s, accept_eula=True), ValueError, ["accept_eula", "ignored"]),
    ("job-eula-str", lambda s: job(s, accept_eula="yes"), TypeError, ["accept_eula", "'yes'"]),
    ("job-data-type-without-data", lambda s: job(s, training_data_type="ManifestFile"), ValueError,
     ["training_data_type", "ignored"]),
    ("job-prefix-int", lambda s: job(s, output_prefix=5), TypeError, ["output_prefix"]),
    ("job-model-id-int", lambda s: job(s, model_id=5), TypeError, ["model_id"]),
    # BatchInference
    ("batch-payload-nan", lambda s: batch(s, max_payload_mb=NAN), TypeError, ["S/Batch", "max_payload_mb", "nan"]),
    ("batch-payload-float", lambda s: batch(s, max_payload_mb=1.5), TypeError, ["max_payload_mb", "1.5"]),
    ("batch-retries-nan", lambda s: batch(s, invocation_retries=NAN), TypeError, ["invocation_retries"]),
    ("batch-concurrency-float", lambda s: batch(s, max_concurrent_transforms=2.5), TypeError,
     ["max_concurrent_transforms"]),
    ("batch-output-tokens-negative", lambda s: batch(s, max_output_tokens=-5), ValueError, ["max_output_tokens", "-5"]),
    ("batch-output-tokens-with-timeout",
     lambda s: batch(s, max_output_tokens=100, invocation_timeout=cdk.Duration.minutes(5)), ValueError,
     ["max_output_tokens", "ignored"]),
    ("batch-timeout-huge", lambda s: batch(s, timeout=cdk.Duration.days(10000)), ValueError, ["timeout", "s"]),
    ("batch-schedule-int", lambda s: batch(s, schedule=5), TypeError, ["schedule"]),
    ("batch-filter-int", lambda s: batch(s, input_filter=5), TypeError, ["input_filter"]),
    ("batch-kms-arn", lambda s: batch(s, kms_key="arn:aws:kms:x"), TypeError, ["kms_key"]),
    ("batch-upload-str", lambda s: batch(s, start_on_upload="no"), TypeError, ["start_on_upload"]),
    # EndpointBenchmark, canary, dashboard, SLO alarms
    ("benchmark-target-str", lambda s: EndpointBenchmark(s, "Bench", target="my-endpoint"), TypeError,
     ["S/Bench", "target", "'my-endpoint'"]),
    ("benchmark-bucket-str", lambda s: EndpointBenchmark(s, "Bench", target=endpoint(s), results_bucket="bkt"),
     TypeError, ["results_bucket", "IBucket"]),
    ("benchmark-prefix-int", lambda s: EndpointBenchmark(s, "Bench", target=endpoint(s), results_prefix=5),
     TypeError, ["results_prefix"]),
    ("benchmark-outputs-str", lambda s: EndpointBenchmark(s, "Bench", target=endpoint(s), outputs="no"),
     TypeError, ["outputs", "'no'"]),
    ("benchmark-slo-inf", lambda s: endpoint(s, benchmark={"slo": {"ttft_ms": INF}}), ValueError,
     ["benchmark.slo.ttft_ms", "inf"]),
    ("canary-tpot-inf", lambda s: endpoint(s).add_canary({"expected_tpot_ms": INF}), ValueError,
     ["S/Qwen3/Canary", "expected_tpot_ms", "inf"]),
    ("canary-options-str", lambda s: endpoint(s).add_canary("x"), TypeError, ["options", "CanaryOptions"]),
    ("canary-target-str", lambda s: EndpointCanary(s, "Canary", target="x"), TypeError, ["target"]),
    ("dashboard-name-int", lambda s: endpoint(s).add_dashboard(dashboard_name=5), TypeError, ["dashboard_name"]),
    ("dashboard-name-bad", lambda s: endpoint(s).add_dashboard(dashboard_name="my dashboard"), ValueError,
     ["dashboard_name", "'my dashboard'"]),
    ("dashboard-range-int", lambda s: endpoint(s).add_dashboard(default_range=3), TypeError, ["default_range"]),
    ("dashboard-range-huge", lambda s: endpoint(s).add_dashboard(default_range=cdk.Duration.days(100000)),
     ValueError, ["default_range"]),
    ("dashboard-target-str", lambda s: EndpointDashboard(s, "Dash", target=5), TypeError, ["target", "int 5"]),
    ("slo-floor-inf", lambda s: _with_canary(endpoint(s)).add_slo_alarms({"min_tokens_per_chunk": INF}), ValueError,
     ["min_tokens_per_chunk", "inf"]),
    ("slo-floor-nan", lambda s: _with_canary(endpoint(s)).add_slo_alarms({"min_tokens_per_chunk": NAN}), ValueError,
     ["min_tokens_per_chunk", "nan"]),
    ("slo-drop-ignored", lambda s: _with_canary(endpoint(s)).add_slo_alarms({"min_tokens_per_chunk": 1.5,
                                                                            "acceptance_drop": 0.2}),
     ValueError, ["acceptance_drop", "ignored"]),
    ("slo-topic-arn", lambda s: endpoint(s).add_slo_alarms({"error_rate": 0.1}, topic="arn:aws:sns:x"), TypeError,
     ["topic", "ITopic"]),
    ("slo-str", lambda s: endpoint(s).add_slo_alarms("x"), TypeError, ["slos", "EndpointSlos"]),
    ("slo-create-topic-str", lambda s: endpoint(s).add_slo_alarms({"error_rate": 0.1}, create_topic="yes"),
     TypeError, ["create_topic", "'yes'"]),
]  # fmt: skip


def _with_canary(target: SpeculativeVllmEndpoint) -> SpeculativeVllmEndpoint:
    target.add_canary()
    return target


def _kernel_still_works() -> None:
    """A fresh App and Stack with a valid construct still synthesizes: the jsii kernel is alive."""
    stack = _stack()
    sns.Topic(stack, "Topic")
    Template.from_stack(stack).resource_count_is("AWS::SNS::Topic", 1)


@pytest.mark.parametrize(("build", "error", "named"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile_prop_is_refused_before_jsii(build: Build, error: type[Exception], named: list[str]) -> None:
    with pytest.raises(error) as info:
        build(_stack())
    message = str(info.value)
    for part in named:
        assert part in message, f"{part!r} not in {message!r}"
    _kernel_still_works()


def test_jsii_interfaces_are_recognized_created_and_imported() -> None:
    """The interface check accepts a construct and an imported resource (a jsii proxy), refuses the rest."""
    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0)
    kinds = {
        prop_checks.ROLE: [
            iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com")),
            iam.Role.from_role_arn(stack, "RI", ROLE_ARN),
        ],
        prop_checks.KEY: [
            kms.Key(stack, "K"),
            kms.Key.from_key_arn(stack, "KI", "arn:aws:kms:us-west-2:1:key/a"),
        ],
        prop_checks.SECRET: [secretsmanager.Secret.from_secret_name_v2(stack, "SI", "hf")],
        prop_checks.TOPIC: [sns.Topic.from_topic_arn(stack, "TI", "arn:aws:sns:us-west-2:123456789012:t")],
        prop_checks.ALARM: [alarm(stack)],
        prop_checks.BUCKET: [s3.Bucket.from_bucket_name(stack, "BI", "my-bucket")],
        prop_checks.VPC: [vpc],
        prop_checks.SECURITY_GROUP: [ec2.SecurityGroup.from_security_group_id(stack, "SGI", "sg-1")],
    }
    for kind, values in kinds.items():
        for value in values:
            assert prop_checks.implements(value, kind), (kind.name, value)
        others = [v for k, vs in kinds.items() if k != kind for v in vs]
        assert not any(prop_checks.implements(v, kind) for v in others), kind.name
        assert not prop_checks.implements(ROLE_ARN, kind)


def test_guardrails_defaults_follow_the_strategy() -> None:
    assert DeploymentGuardrails().termination_wait_seconds == 300
    assert DeploymentGuardrails().rolling_batch_percent is None
    rolling = DeploymentGuardrails(strategy="rolling")
    assert (rolling.rolling_batch_percent, rolling.termination_wait_seconds) == (25, None)


def test_valid_props_of_every_class_still_synthesize_after_refusals() -> None:
    """After the refusals above (and one here), every class still builds and synthesizes with valid props,
    imported resources included."""
    with pytest.raises(ValueError):
        endpoint(_stack(), engine={**ENGINE, "gpu_memory_utilization": INF})
    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
    served = endpoint(
        stack,
        model_data="s3://my-models/qwen3-32b/",
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        security_groups=[ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-123")],
        role=iam.Role.from_role_arn(stack, "Role", ROLE_ARN),
        kms_key=kms.Key.from_key_arn(stack, "Key", "arn:aws:kms:us-west-2:123456789012:key/abc"),
        hf_token=secretsmanager.Secret.from_secret_name_v2(stack, "Token", "hf-token"),
        tags={"team": "ml"},
        endpoint_name="qwen3-endpoint",
        scaling={"min_capacity": 1, "max_capacity": 2},
        deployment_guardrails=DeploymentGuardrails(strategy="rolling", alarms=[alarm(stack)]),
        data_capture=DataCaptureOptions(sampling_percentage=5, retention_days=7),
        container_startup_health_check_timeout=cdk.Duration.minutes(20),
    )
    served.add_dashboard(dashboard_name="qwen3-dashboard", default_range=cdk.Duration.hours(6))
    served.add_canary({"every_minutes": 10})
    served.add_slo_alarms({"error_rate": 0.01, "p90_ttft_ms": 500.0}, create_topic=True)
    component(stack, copy_count=1, tags={"team": "ml"}, routing_strategy="RANDOM")
    batch(stack, max_output_tokens=2048, timeout=cdk.Duration.hours(6))
    job(stack, tags={"team": "ml"}, wait=False, max_runtime=cdk.Duration.hours(8))
    template = Template.from_stack(stack).to_json()
    resources = {r["Type"] for r in template["Resources"].values()}
    assert {
        "AWS::SageMaker::Endpoint",
        "AWS::SageMaker::InferenceComponent",
        "AWS::StepFunctions::StateMachine",
        "Custom::EagleOptimizationJob",
        "AWS::CloudWatch::Dashboard",
    } <= resources
    configs = [
        r["Properties"]["DeploymentConfig"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SageMaker::Endpoint" and "DeploymentConfig" in r["Properties"]
    ]
    assert configs[0]["RollingUpdatePolicy"]["MaximumBatchSize"] == {"Type": "CAPACITY_PERCENT", "Value": 25}
