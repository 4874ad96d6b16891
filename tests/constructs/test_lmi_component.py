"""LmiInferenceComponent and InferenceComponentEndpoint."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Match

from speculative_infra import CompatibilityError, InferenceComponentEndpoint, LmiInferenceComponent
from tests.cfn import cfn_lint_errors, normalized, synth_stack

ENGINE = {"max_model_len": 4096, "max_num_seqs": 64, "enable_prefix_caching": True, "dtype": "bfloat16"}


def shared(stack: cdk.Stack, **props):
    endpoint = InferenceComponentEndpoint(
        stack, "Shared", instance_type="ml.g6e.12xlarge", max_instance_count=2
    )
    defaults = {
        "endpoint": endpoint,
        "model_id": "Qwen/Qwen3-32B",
        "lmi_version": "20",
        "tensor_parallel_degree": 4,
        "engine": ENGINE,
    }
    return LmiInferenceComponent(stack, "Qwen3", **{**defaults, **props})


def scale_to_zero(stack: cdk.Stack):
    return LmiInferenceComponent(
        stack,
        "Zero",
        instance_type="ml.g5.12xlarge",
        model_id="Qwen/Qwen3-8B",
        lmi_version="20",
        engine={"max_model_len": 8192},
        scaling={"min_capacity": 0, "max_capacity": 2},
    )


def two_components(stack: cdk.Stack):
    endpoint = InferenceComponentEndpoint(
        stack, "Shared", instance_type="ml.g5.48xlarge", max_instance_count=1
    )
    token = secretsmanager.Secret.from_secret_name_v2(stack, "HfToken", "hf-token")
    for name, model in (("Qwen8B", "Qwen/Qwen3-8B"), ("Llama8B", "meta-llama/Llama-3.1-8B-Instruct")):
        LmiInferenceComponent(
            stack,
            name,
            endpoint=endpoint,
            model_id=model,
            lmi_version="20",
            tensor_parallel_degree=2,
            copy_count=2,
            engine={"max_model_len": 8192},
            hf_token=token if model.startswith("meta-llama/") else None,
        )


CONFIGURATIONS = {
    "reference-g6e-tp4": lambda s: shared(s, scaling={"min_capacity": 1, "max_capacity": 2}),
    "scale-to-zero-g5": scale_to_zero,
    "two-components-one-endpoint": two_components,
}


@pytest.fixture(params=sorted(CONFIGURATIONS))
def configuration(request):
    return synth_stack(CONFIGURATIONS[request.param], region="us-east-1")


def test_snapshot(configuration, snapshot):
    assert normalized(configuration[1]) == snapshot


def test_cfn_lint_clean(configuration):
    assert cfn_lint_errors(configuration[1]) == []


def test_reference_component():
    template, _ = synth_stack(shared, region="us-east-1")
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ExecutionRoleArn": Match.any_value(),
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g6e.12xlarge",
                        "ManagedInstanceScaling": {
                            "Status": "ENABLED",
                            "MinInstanceCount": 1,
                            "MaxInstanceCount": 2,
                        },
                        "RoutingConfig": {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"},
                        "ModelName": Match.absent(),
                    }
                )
            ],
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "Image": {"Fn::Join": ["", Match.array_with(["/djl-inference:0.36.0-lmi20.0.0-cu128"])]},
                "Environment": Match.object_like(
                    {
                        "HF_MODEL_ID": "Qwen/Qwen3-32B",
                        "OPTION_ASYNC_MODE": "true",
                        "OPTION_ROLLING_BATCH": "disable",
                        "OPTION_ENTRYPOINT": "djl_python.lmi_vllm.vllm_async_service",
                        "OPTION_TENSOR_PARALLEL_DEGREE": "4",
                        "OPTION_MAX_ROLLING_BATCH_SIZE": "64",
                        "OPTION_ENABLE_PREFIX_CACHING": "true",
                    }
                ),
            }
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::InferenceComponent",
        {
            "VariantName": "AllTraffic",
            "InferenceComponentName": Match.string_like_regexp("^TestStack-Qwen3-[A-F0-9]{8}$"),
            "Specification": Match.object_like(
                {
                    "ComputeResourceRequirements": {
                        "NumberOfAcceleratorDevicesRequired": 4,
                        "MinMemoryRequiredInMb": Match.any_value(),
                    }
                }
            ),
            "RuntimeConfig": {"CopyCount": 1},
        },
    )
    template.has_output("*", {"Value": Match.string_like_regexp("^TestStack-Qwen3-")})


def test_no_lmi_dist_options():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    ic = shared(
        stack,
        speculative={
            "method": "eagle3",
            "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
            "num_speculative_tokens": 4,
        },
    )
    assert "OPTION_SPECULATIVE_DRAFT_MODEL" not in ic.environment
    assert ic.environment["OPTION_SPECULATIVE_CONFIG"].startswith('{"method":"eagle3"')


def test_scale_to_zero_wiring():
    template, _ = synth_stack(scale_to_zero, region="us-east-1")
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "ManagedInstanceScaling": {
                            "Status": "ENABLED",
                            "MinInstanceCount": 0,
                            "MaxInstanceCount": 2,
                        }
                    }
                )
            ]
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "MinCapacity": 0,
            "MaxCapacity": 2,
            "ScalableDimension": "sagemaker:inference-component:DesiredCopyCount",
            "ResourceId": Match.string_like_regexp("^inference-component/TestStack-Zero-"),
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerInferenceComponentConcurrentRequestsPerCopyHighResolution"
                    }
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": Match.object_like(
                {
                    "AdjustmentType": "ChangeInCapacity",
                    "StepAdjustments": [{"MetricIntervalLowerBound": 0, "ScalingAdjustment": 1}],
                }
            ),
        },
    )
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "MetricName": "NoCapacityInvocationFailures",
            "Namespace": "AWS/SageMaker",
            "Statistic": "Sum",
            "Period": 60,
            "EvaluationPeriods": 1,
            "Dimensions": [
                {"Name": "InferenceComponentName", "Value": Match.string_like_regexp("^TestStack-Zero-")}
            ],
        },
    )


def test_lmi20_on_g7e_fails():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(CompatibilityError) as info:
        LmiInferenceComponent(
            stack, "X", instance_type="ml.g7e.2xlarge", model_id="Qwen/Qwen3-32B", lmi_version="20"
        )
    assert "SI201" in {f.code for f in info.value.findings}


@pytest.mark.parametrize("instance_type", ["ml.g5.12xlarge", "ml.g6e.12xlarge"])
def test_lmi20_reference_cells_pass(instance_type):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    ic = LmiInferenceComponent(
        stack,
        "X",
        instance_type=instance_type,
        model_id="Qwen/Qwen3-32B",
        lmi_version="20",
        tensor_parallel_degree=4,
        engine=ENGINE,
    )
    assert ic.check_result.ok


def test_region_without_inference_components():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-1"))
    with pytest.raises(CompatibilityError) as info:
        LmiInferenceComponent(
            stack, "X", instance_type="ml.g5.12xlarge", model_id="Qwen/Qwen3-8B", lmi_version="20"
        )
    assert "SI111" in {f.code for f in info.value.findings}


def test_capacity_across_components():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    endpoint = InferenceComponentEndpoint(stack, "E", instance_type="ml.g5.12xlarge", max_instance_count=1)
    LmiInferenceComponent(
        stack,
        "A",
        endpoint=endpoint,
        model_id="Qwen/Qwen3-8B",
        lmi_version="20",
        tensor_parallel_degree=2,
        engine={"max_model_len": 8192},
    )
    with pytest.raises(CompatibilityError) as info:
        LmiInferenceComponent(
            stack,
            "B",
            endpoint=endpoint,
            model_id="Qwen/Qwen3-8B",
            lmi_version="20",
            tensor_parallel_degree=2,
            copy_count=2,
            engine={"max_model_len": 8192},
        )
    [finding] = info.value.findings
    assert finding.code == "SI700" and "need 6 GPUs" in finding.message and "offer 4" in finding.message


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda s: LmiInferenceComponent(s, "X", model_id="Qwen/Qwen3-8B"),
            "give endpoint, or instance_type",
        ),
        (
            lambda s: shared(s, scaling={"min_capacity": 0, "max_capacity": 2}),
            "needs the endpoint's managed instance",
        ),
        (lambda s: shared(s, copy_count=0), "copy_count is 0"),
        (
            lambda s: shared(s, scaling={"min_capacity": 3, "max_capacity": 2}),
            "greater than scaling.max_capacity",
        ),
        (lambda s: shared(s, inference_component_name="bad_name!"), "inference_component_name"),
        (
            lambda s: InferenceComponentEndpoint(
                s, "E", instance_type="ml.g5.12xlarge", min_instance_count=3, max_instance_count=2
            ),
            "max_instance_count is 2",
        ),
        (
            lambda s: InferenceComponentEndpoint(s, "E", instance_type="ml.m5.xlarge"),
            "not a GPU instance type",
        ),
        (
            lambda s: InferenceComponentEndpoint(s, "E", instance_type="g5.12xlarge"),
            "did you mean 'ml.g5.12xlarge'",
        ),
    ],
)
def test_invalid_props(build, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(ValueError, match=message):
        build(stack)


def test_grant_invoke_on_the_endpoint():
    def build(stack):
        ic = shared(stack)
        ic.grant_invoke(iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal()))

    template, _ = synth_stack(build, region="us-east-1")
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
                        "Effect": "Allow",
                        "Resource": {"Ref": Match.string_like_regexp("SharedEndpoint")},
                    }
                ]
            }
        },
    )


def test_components_share_the_endpoint_role_and_pull_only_their_repository():
    _, raw = synth_stack(two_components, region="us-east-1")
    roles = [k for k, v in raw["Resources"].items() if v["Type"] == "AWS::IAM::Role"]
    assert len(roles) == 1
    pulls = [
        s
        for v in raw["Resources"].values()
        if v["Type"] == "AWS::IAM::Policy"
        for s in v["Properties"]["PolicyDocument"]["Statement"]
        if "ecr:BatchGetImage" in s["Action"]
    ]
    assert len(pulls) == 1 and "repository/djl-inference" in str(pulls[0]["Resource"])
