"""SpeculativeVllmEndpoint: resources, environment, IAM, scaling, validation, snapshots, cfn-lint."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk.assertions import Match

from speculative_infra import CompatibilityError, DeploymentGuardrails, SpeculativeVllmEndpoint
from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from speculative_infra.security import check_template
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.constructs.dlc_entrypoint import entrypoint_argv, serve_argv_problems

ENGINE = {
    "max_model_len": 4096,
    "enable_prefix_caching": True,
    "enable_chunked_prefill": True,
    "max_num_seqs": 64,
    "gpu_memory_utilization": 0.9,
    "dtype": "bfloat16",
    "tensor_parallel_size": 1,
}
EAGLE3 = {"method": "eagle3", "model": "RedHatAI/Qwen3-32B-speculator.eagle3", "num_speculative_tokens": 4}


def reference(stack: cdk.Stack, **props):
    defaults = {
        "model_id": "Qwen/Qwen3-32B",
        "instance_type": "ml.g7e.2xlarge",
        "vllm_version": "0.15.1",
        "engine": ENGINE,
        "speculative": EAGLE3,
    }
    return SpeculativeVllmEndpoint(stack, "Qwen3", **{**defaults, **props})


CONFIGURATIONS = {
    "reference-eagle3": dict(scaling={"min_capacity": 1, "max_capacity": 4}),
    "baseline-no-speculation": dict(speculative=None),
    "s3-weights-vpc-kms-isolated": "special",
    "guardrails-schedules": "special",
}


def _special(stack: cdk.Stack, name: str):
    if name == "s3-weights-vpc-kms-isolated":
        vpc = ec2.Vpc(stack, "Vpc", max_azs=2, nat_gateways=0)
        vpc.add_flow_log("FlowLog")
        key = kms.Key(stack, "Key", enable_key_rotation=True)
        return reference(
            stack, model_data="s3://my-models/qwen3-32b/", enable_network_isolation=True, vpc=vpc, kms_key=key
        )
    alarm = cloudwatch.Alarm(
        stack,
        "Errors",
        metric=cloudwatch.Metric(namespace="AWS/SageMaker", metric_name="Invocation5XXErrors"),
        threshold=1,
        evaluation_periods=1,
    )
    return reference(
        stack,
        deployment_guardrails=DeploymentGuardrails(strategy="blue_green", alarms=[alarm]),
        scaling={
            "min_capacity": 1,
            "max_capacity": 3,
            "schedules": [
                {"name": "night", "schedule": "cron(0 20 * * ? *)", "min_capacity": 1, "max_capacity": 1},
                {"name": "morning", "schedule": "cron(0 6 * * ? *)", "min_capacity": 1, "max_capacity": 3},
            ],
        },
    )


@pytest.fixture(params=sorted(CONFIGURATIONS))
def configuration(request):
    name = request.param
    props = CONFIGURATIONS[name]
    build = (lambda s: _special(s, name)) if props == "special" else (lambda s: reference(s, **props))
    return name, synth_stack(build)


def test_snapshot(configuration, snapshot):
    _, (_, template) = configuration
    assert normalized(template) == snapshot


def test_cfn_lint_clean(configuration):
    _, (_, template) = configuration
    assert cfn_lint_errors(template) == []


def test_reference_resources():
    template, _ = synth_stack(reference)
    template.resource_count_is("AWS::SageMaker::Model", 1)
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "Image": {
                    "Fn::Join": [
                        "",
                        Match.array_with(
                            ["763104351884.dkr.ecr.", "/vllm:0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"]
                        ),
                    ]
                },
                "Environment": {
                    "SM_VLLM_MODEL": "Qwen/Qwen3-32B",
                    "SM_VLLM_ENABLE_PREFIX_CACHING": "",
                    "SM_VLLM_SPECULATIVE_CONFIG": '{"method":"eagle3","model":"RedHatAI/Qwen3-32B-speculator.eagle3","num_speculative_tokens":4}',
                },
            }
        },
    )
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {
            "ProductionVariants": [
                Match.object_like(
                    {
                        "InstanceType": "ml.g7e.2xlarge",
                        "InitialInstanceCount": 1,
                        "VariantName": "AllTraffic",
                        # SageMaker's default host: vLLM DLC 0.15.1 was observed to run there on g7e. Never
                        # gpu-3-1: its driver 550 cannot drive a Blackwell GPU.
                        "InferenceAmiVersion": Match.absent(),
                        "ContainerStartupHealthCheckTimeoutInSeconds": Match.any_value(),
                    }
                )
            ]
        },
    )


@pytest.mark.parametrize(
    ("vllm_version", "expected"),
    [
        ("0.15.1", None),  # observed on g7e's default host (and 0.16.0-0.19.1 share its CUDA 12.9)
        ("0.19.1", None),
        ("0.20.0", "al2023-ami-sagemaker-inference-gpu-4-1"),  # CUDA 13.0 on Blackwell RTX: driver 580
    ],
)
def test_g7e_host_can_drive_blackwell(vllm_version, expected):
    template, _ = synth_stack(lambda stack: reference(stack, vllm_version=vllm_version))
    (config,) = template.find_resources("AWS::SageMaker::EndpointConfig").values()
    assert config["Properties"]["ProductionVariants"][0].get("InferenceAmiVersion") == expected


def test_keyword_props_from_spec_and_check_resolve_the_same_host(tmp_path):
    """One default for inference_ami_version: keyword props, from_spec(YAML) and `check` agree."""
    spec = {
        "region": "us-west-2",
        "instance_type": "ml.g5.12xlarge",
        "container": {"framework": "vllm", "version": "0.15.1"},
        "model": {"id": "Qwen/Qwen3-32B"},
        "engine": {**ENGINE, "tensor_parallel_size": 4},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    keyword = synth_stack(
        lambda stack: reference(
            stack, instance_type="ml.g5.12xlarge", engine=spec["engine"], speculative=None
        )
    )[0]
    from_yaml = synth_stack(lambda stack: SpeculativeVllmEndpoint.from_spec(stack, "Qwen3", path))[0]
    emitted = {
        name: next(iter(t.find_resources("AWS::SageMaker::EndpointConfig").values()))["Properties"][
            "ProductionVariants"
        ][0].get("InferenceAmiVersion")
        for name, t in (("keyword", keyword), ("from_spec", from_yaml))
    }
    resolved = check(spec).deployment.host
    assert resolved is not None
    assert emitted == {"keyword": resolved.inference_ami_version, "from_spec": resolved.inference_ami_version}
    assert resolved.inference_ami_version == "al2-ami-sagemaker-inference-gpu-3-1"  # 470 cannot run CUDA 12.9


def test_env_agnostic_stack_uses_region_mapping():
    template, raw = synth_stack(reference, region=None)
    assert raw["Mappings"]["SpeculativeInfraDlcRegistryAccounts"]["af-south-1"] == {"account": "626614931356"}
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "Image": {
                    "Fn::Join": [
                        "",
                        Match.array_with(
                            [
                                {
                                    "Fn::FindInMap": [
                                        "SpeculativeInfraDlcRegistryAccounts",
                                        {"Ref": "AWS::Region"},
                                        "account",
                                    ]
                                }
                            ]
                        ),
                    ]
                }
            }
        },
    )


# How each release's DLC entrypoint reads boolean SM_VLLM_* values, pinned to the source, not to the catalog
# entry the renderer reads: up to 0.17.x a true flag is an empty string; 0.18.0's script takes true/false
# (aws/deep-learning-containers #5757, commit 1c1aacc0ac). 0.17.1 images may carry either script.
ENTRYPOINT_STYLES = {
    "0.15.1": ["empty"],
    "0.17.1": ["empty", "true_false"],
    "0.18.0": ["true_false"],
    "0.19.1": ["true_false"],
}


@pytest.mark.parametrize("version", sorted(ENTRYPOINT_STYLES))
@pytest.mark.parametrize("prefix_caching", [True, False])
def test_rendered_env_parses_as_vllm_flags(version, prefix_caching):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    ep = reference(stack, vllm_version=version, engine={**ENGINE, "enable_prefix_caching": prefix_caching})
    for style in ENTRYPOINT_STYLES[version]:
        argv = entrypoint_argv(ep.environment, style)
        assert serve_argv_problems(argv, load_vllm_release(version)) == [], style
        assert ("--no-enable-prefix-caching" in argv) is (not prefix_caching)


def test_false_boolean_is_never_rendered_as_false():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    ep = reference(stack, engine={**ENGINE, "enable_chunked_prefill": False})
    assert "false" not in ep.environment.values()
    assert ep.environment["SM_VLLM_NO_ENABLE_CHUNKED_PREFILL"] == ""


def test_entrypoint_emulation_catches_literal_booleans():
    argv = entrypoint_argv(
        {"SM_VLLM_ENABLE_PREFIX_CACHING": "false", "SM_VLLM_ENFORCE_EAGER": "true"}, "empty"
    )
    problems = serve_argv_problems(argv, load_vllm_release("0.15.1"))
    assert any("stray value 'false'" in p for p in problems)


def test_model_data_mounts_s3_prefix_and_scopes_read():
    template, raw = synth_stack(lambda s: reference(s, model_data="s3://my-models/qwen3-32b"))
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": {
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri": "s3://my-models/qwen3-32b/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                    }
                },
                "Environment": Match.object_like({"SM_VLLM_MODEL": "/opt/ml/model"}),
            }
        },
    )
    statements = [
        s
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    get_object = next(s for s in statements if s["Action"] == "s3:GetObject")
    assert get_object["Resource"] == {
        "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":s3:::my-models/qwen3-32b*"]]
    }


def test_role_has_no_wildcard_resources_except_where_aws_allows_none():
    _, raw = synth_stack(reference)
    statements = [
        s
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    wildcard_actions = {
        a
        for s in statements
        if s["Resource"] == "*"
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert wildcard_actions == {"ecr:GetAuthorizationToken", "cloudwatch:PutMetricData"}
    assert not any("sagemaker:*" in str(s["Action"]) or "s3:*" in str(s["Action"]) for s in statements)


def test_grant_invoke_is_scoped_to_the_endpoint():
    def build(stack):
        ep = reference(stack)
        user = iam.Role(stack, "Caller", assumed_by=iam.AccountRootPrincipal())
        ep.grant_invoke(user)

    template, _ = synth_stack(build)
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": ["sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"],
                        "Effect": "Allow",
                        "Resource": {"Ref": Match.string_like_regexp("Qwen3Endpoint")},
                    }
                ]
            }
        },
    )


def test_scaling_targets_concurrency_from_max_num_seqs():
    template, _ = synth_stack(lambda s: reference(s, scaling={"min_capacity": 1, "max_capacity": 4}))
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalableTarget",
        {
            "MinCapacity": 1,
            "MaxCapacity": 4,
            "ScalableDimension": "sagemaker:variant:DesiredInstanceCount",
            "ServiceNamespace": "sagemaker",
        },
    )
    template.has_resource_properties(
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        {
            "TargetTrackingScalingPolicyConfiguration": Match.object_like(
                {
                    "TargetValue": 48,
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "SageMakerVariantConcurrentRequestsPerModelHighResolution"
                    },
                }
            )
        },
    )


def test_metrics_name_the_endpoint():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    ep = reference(stack)
    metric = ep.metric_gpu_utilization()
    assert metric.namespace == "/aws/sagemaker/Endpoints" and metric.metric_name == "GPUUtilization"
    assert set(metric.dimensions) == {"EndpointName", "VariantName"}
    assert ep.metric_invocation_5xx_errors().metric_name == "Invocation5XXErrors"


@pytest.mark.parametrize(
    ("props", "codes"),
    [
        (
            dict(
                instance_type="ml.g5.12xlarge",
                engine={**ENGINE, "tensor_parallel_size": 4},
                inference_ami_version="default",
            ),
            {"SI210"},
        ),
        (dict(instance_type="ml.g6e.xlarge"), {"SI300"}),
        (dict(scaling={"min_capacity": 3, "max_capacity": 2}), {"SI600"}),
        (dict(scaling={"min_capacity": 0, "max_capacity": 2}), {"SI600"}),
        (dict(scaling={"max_capacity": 2, "target_value": -1}), {"SI601"}),
        (
            dict(
                engine={**ENGINE, "tensor_parallel_size": 2},
                speculative={**EAGLE3, "num_speculative_tokens": 0},
            ),
            {"SI310", "SI404"},
        ),
    ],
)
def test_invalid_configurations_raise_with_every_code(props, codes):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(CompatibilityError) as info:
        reference(stack, **props)
    assert codes <= {f.code for f in info.value.findings}
    assert "S/Qwen3" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_warnings_become_annotations():
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(region="us-west-2"))
    reference(
        stack,
        instance_type="ml.g6e.12xlarge",
        vllm_version="0.16.0",
        speculative=None,
        engine={**ENGINE, "tensor_parallel_size": 2},
    )
    from aws_cdk.assertions import Annotations

    Annotations.from_stack(stack).has_warning("/S/Qwen3", Match.string_like_regexp("SI211|SI312"))


def test_from_spec_yaml(tmp_path):
    from tests.conftest import EXAMPLE_SPECS

    template, _ = synth_stack(
        lambda s: SpeculativeVllmEndpoint.from_spec(s, "Ref", EXAMPLE_SPECS / "vllm-g7e-2xlarge.yaml")
    )
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"ProductionVariants": [Match.object_like({"InstanceType": "ml.g7e.2xlarge"})]},
    )


def test_from_spec_rejects_lmi():
    from tests.conftest import EXAMPLE_SPECS

    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match="LmiInferenceComponent"):
        SpeculativeVllmEndpoint.from_spec(stack, "X", EXAMPLE_SPECS / "lmi-g5-12xlarge.yaml")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (dict(model_id=None), "give model_id"),
        (dict(model_data="https://bucket/x"), "model_data: 'https://bucket/x' is not an S3 URI"),
        (dict(enable_network_isolation=True), "enable_network_isolation needs model_data"),
        (dict(engine={**ENGINE, "max_model_len": "long"}), "engine.max_model_len"),
        (
            dict(container_startup_health_check_timeout=cdk.Duration.hours(2)),
            "outside the allowed 60 to 3600",
        ),
    ],
)
def test_bad_props_raise_clear_errors(props, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        reference(stack, **props)


LLAMA = {"model_id": "meta-llama/Llama-3.1-8B-Instruct", "speculative": None}


def test_gated_model_needs_a_token_or_s3_weights():
    with pytest.raises(CompatibilityError, match="SI531"):
        synth_stack(lambda s: reference(s, **LLAMA))
    synth_stack(lambda s: reference(s, **LLAMA, model_data="s3://my-models/llama-3.1-8b"))


def test_hf_token_is_a_dynamic_reference_never_the_token():
    def build(stack: cdk.Stack):
        token = secretsmanager.Secret(stack, "HfToken")
        reference(stack, **LLAMA, hf_token=token)

    _, raw = synth_stack(build)
    [model] = [r for r in raw["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    value = model["Properties"]["PrimaryContainer"]["Environment"]["HF_TOKEN"]
    secret_id = next(k for k, r in raw["Resources"].items() if r["Type"] == "AWS::SecretsManager::Secret")
    assert value == {
        "Fn::Join": ["", ["{{resolve:secretsmanager:", {"Ref": secret_id}, ":SecretString:::}}"]]
    }
    assert check_template(raw) == [] and cfn_lint_errors(raw) == []


def test_from_spec_turns_the_secret_name_into_a_reference(tmp_path):
    spec = {
        "instance_type": "ml.g7e.2xlarge",
        "container": {"framework": "vllm", "version": "0.15.1"},
        "model": {"id": "meta-llama/Llama-3.1-8B-Instruct"},
        "engine": {"max_model_len": 8192},
        "hf_token_secret": "prod/hf-token",
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    _, raw = synth_stack(lambda s: SpeculativeVllmEndpoint.from_spec(s, "Llama", path))
    [model] = [r for r in raw["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    env = model["Properties"]["PrimaryContainer"]["Environment"]
    assert env["HF_TOKEN"] == "{{resolve:secretsmanager:prod/hf-token:SecretString:::}}"


def test_plaintext_token_in_environment_is_refused():
    with pytest.raises(CompatibilityError, match="SI530"):
        synth_stack(lambda s: reference(s, environment={"HF_TOKEN": "hf_live_token_value"}))
