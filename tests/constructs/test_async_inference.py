"""SpeculativeVllmEndpoint with async_inference: the endpoint config, the role's rights on the outputs,
and backlog scaling from and to zero, as SageMaker's async scaling guide describes it."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from speculative_infra import CompatibilityError
from speculative_infra.check import check
from speculative_infra.constructs.async_inference import AsyncInferenceOptions
from speculative_infra.spec import parse_spec
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.constructs import test_vllm_endpoint


def reference(stack: cdk.Stack, **props: Any):
    """The reference model served asynchronously, scaling to zero, notifying a topic, encrypted output."""
    topic = sns.Topic(
        stack, "Answers", enforce_ssl=True, master_key=kms.Key(stack, "TopicKey", enable_key_rotation=True)
    )
    key = kms.Key(stack, "OutputKey", enable_key_rotation=True)
    options = AsyncInferenceOptions(
        output_s3_uri="s3://my-answers/qwen3/",
        input_s3_uri="s3://my-requests/qwen3/",
        failure_s3_uri="s3://my-answers/qwen3-failed/",
        success_topic=topic,
        error_topic=topic,
        kms_key=key,
    )
    defaults = {"scaling": {"min_capacity": 0, "max_capacity": 2}, "async_inference": options}
    return test_vllm_endpoint.reference(stack, **{**defaults, **props})


CONFIGURATIONS = {"async-scale-to-zero": {}}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_stack(reference)[1]


def _props(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def test_snapshot(template, snapshot):
    assert normalized(template) == snapshot


def test_cfn_lint_clean(template):
    assert cfn_lint_errors(template) == []


def test_endpoint_config_is_asynchronous(template):
    (config,) = _props(template, "AWS::SageMaker::EndpointConfig")
    async_config = config["AsyncInferenceConfig"]
    # Default: the engine's max_num_seqs (64 in the reference engine), so vLLM batches all it is sent.
    assert async_config["ClientConfig"] == {"MaxConcurrentInvocationsPerInstance": 64}
    output = async_config["OutputConfig"]
    assert output["S3OutputPath"] == "s3://my-answers/qwen3/"
    assert output["S3FailurePath"] == "s3://my-answers/qwen3-failed/"
    assert "KmsKeyId" in output and set(output["NotificationConfig"]) == {"SuccessTopic", "ErrorTopic"}


def test_role_writes_only_under_the_output_prefixes(template):
    statements = [s for p in _props(template, "AWS::IAM::Policy") for s in p["PolicyDocument"]["Statement"]]
    puts = [s for s in statements if s["Action"] == "s3:PutObject"]
    assert len(puts) == 1
    resources = json.dumps(puts[0]["Resource"])
    assert "my-answers/qwen3/*" in resources and "my-answers/qwen3-failed/*" in resources
    assert any(s["Action"] == "sns:Publish" for s in statements)
    # The requests are read where callers put them, and the encrypted topic's key may be used.
    reads = [s for s in statements if s["Action"] == "s3:GetObject"]
    assert any("my-requests/qwen3/*" in json.dumps(s["Resource"]) for s in reads)
    assert any(
        "kms:GenerateDataKey" in json.dumps(s["Action"]) and "TopicKey" in json.dumps(s["Resource"])
        for s in statements
    )


def test_scales_on_backlog_and_wakes_from_zero(template):
    (scalable,) = _props(template, "AWS::ApplicationAutoScaling::ScalableTarget")
    assert (scalable["MinCapacity"], scalable["MaxCapacity"]) == (0, 2)
    policies = {p["PolicyType"]: p for p in _props(template, "AWS::ApplicationAutoScaling::ScalingPolicy")}
    tracking = policies["TargetTrackingScaling"]["TargetTrackingScalingPolicyConfiguration"]
    metric = tracking["CustomizedMetricSpecification"]
    assert (metric["Namespace"], metric["MetricName"], metric["Statistic"]) == (
        "AWS/SageMaker",
        "ApproximateBacklogSizePerInstance",
        "Average",
    )
    assert [d["Name"] for d in metric["Dimensions"]] == ["EndpointName"]
    assert tracking["TargetValue"] == 64  # one batch waiting per instance
    step = policies["StepScaling"]["StepScalingPolicyConfiguration"]
    assert step["StepAdjustments"] == [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}]
    (alarm,) = _props(template, "AWS::CloudWatch::Alarm")
    assert alarm["MetricName"] == "HasBacklogWithoutCapacity" and alarm["Threshold"] == 1
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_backlog_target_can_be_given():
    def build(stack):
        reference(stack, scaling={"min_capacity": 1, "max_capacity": 3, "target_value": 5})

    _, data = synth_stack(build)
    (tracking,) = [
        p["TargetTrackingScalingPolicyConfiguration"]
        for p in _props(data, "AWS::ApplicationAutoScaling::ScalingPolicy")
        if p["PolicyType"] == "TargetTrackingScaling"
    ]
    assert tracking["TargetValue"] == 5
    assert not _props(data, "AWS::CloudWatch::Alarm")  # min 1: nothing to wake from


def _spec(**overrides: Any) -> dict[str, Any]:
    spec = {
        "region": "us-west-2",
        "instance_type": "ml.g6e.2xlarge",
        "container": {"framework": "vllm", "version": "0.15.1"},
        "model": {"id": "Qwen/Qwen3-8B"},
        "scaling": {"min_capacity": 0, "max_capacity": 2},
    }
    return {**spec, **overrides}


def _codes(spec: dict[str, Any]) -> set[str]:
    return {f.code for f in check(parse_spec(spec)).errors}


def test_scale_to_zero_is_allowed_for_async_but_not_real_time():
    assert "SI600" not in _codes(_spec(serving="async"))
    assert "SI600" in _codes(_spec(serving="real_time"))
    # Boundary: one instance is the real-time floor.
    assert "SI600" not in _codes(_spec(scaling={"min_capacity": 1, "max_capacity": 2}))


def test_async_with_lmi_is_refused_batch_with_lmi_is_not():
    lmi = {"framework": "lmi", "version": "20"}
    assert "SI602" in _codes(_spec(serving="async", container=lmi))
    assert "SI602" not in _codes(_spec(serving="async"))
    assert "SI602" not in _codes(_spec(serving="batch", container=lmi, scaling=None))


def test_real_time_endpoint_still_refuses_scale_to_zero_in_the_construct():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(CompatibilityError, match="SI600"):
        test_vllm_endpoint.reference(stack, scaling={"min_capacity": 0, "max_capacity": 2})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"output_s3_uri": "my-answers/qwen3/"}, "async_inference.output_s3_uri"),
        (
            {"output_s3_uri": "s3://my-answers/b/", "failure_s3_uri": "https://x"},
            "async_inference.failure_s3_uri",
        ),
        (
            {"output_s3_uri": "s3://my-answers/b/", "max_concurrent_invocations_per_instance": 0},
            "allowed: 1 to 1000",
        ),
        (
            {"output_s3_uri": "s3://my-answers/b/", "max_concurrent_invocations_per_instance": 1001},
            "allowed: 1 to 1000",
        ),
    ],
)
def test_bad_async_options_name_the_field(kwargs, message):
    valid = {"output_s3_uri": "s3://my-answers/b/", "input_s3_uri": "s3://my-requests/b/"}
    with pytest.raises(ValueError, match=message):
        AsyncInferenceOptions(**{**valid, **kwargs})


def test_async_concurrency_bounds_are_accepted():
    for value in (1, 1000):
        assert AsyncInferenceOptions(
            output_s3_uri="s3://my-answers/b/",
            input_s3_uri="s3://my-requests/b/",
            max_concurrent_invocations_per_instance=value,
        )


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("benchmark", "benchmark measures streamed answers"),
        ("canary", "add_canary\\(\\) is built for real-time endpoints"),
        ("dashboard", "add_dashboard\\(\\) is built for real-time endpoints"),
    ],
)
def test_streaming_features_are_refused_on_async(action, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match=message):
        if action == "benchmark":
            reference(stack, benchmark={"concurrency": [1]})
        else:
            endpoint = reference(stack)
            getattr(endpoint, f"add_{action}")()
