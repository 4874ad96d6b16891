"""EagleOptimizationJob: custom resource, IAM, validation, and the trained draft reaching an endpoint."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match

from speculative_infra import CompatibilityError, EagleOptimizationJob, SpeculativeVllmEndpoint
from speculative_infra.constructs.custom_resource import handlers_dir
from tests.cfn import cfn_lint_errors, normalized, synth_stack


def job(stack: cdk.Stack, **props):
    defaults = {
        "model_id": "Qwen/Qwen3-32B",
        "model_s3_uri": "s3://models/qwen3-32b/",
        "deployment_instance_type": "ml.g7e.2xlarge",
        "training_data": "s3://traffic/sharegpt/",
    }
    return EagleOptimizationJob(stack, "Qwen3Eagle", **{**defaults, **props})


def job_and_endpoint(stack: cdk.Stack, **props):
    trained = job(stack, **props)
    return trained, SpeculativeVllmEndpoint(
        stack,
        "Qwen3",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine={"max_model_len": 4096},
        speculative=trained.as_speculative_config(num_speculative_tokens=4),
    )


def second_round(stack: cdk.Stack):
    """A second round of training that starts from the first round's head (the retraining cycle)."""
    first = job(stack, wait=False)
    return EagleOptimizationJob(
        stack,
        "Qwen3EagleRound2",
        model_id="Qwen/Qwen3-32B",
        model_s3_uri="s3://models/qwen3-32b/",
        deployment_instance_type="ml.g7e.2xlarge",
        training_data="s3://traffic/sharegpt-2/",
        base_draft=first.as_speculative_config(num_speculative_tokens=4),
        wait=False,
    )


CONFIGURATIONS = {
    "wait-with-endpoint": lambda s: job_and_endpoint(s),
    "second-round-from-first-head": second_round,
    "no-wait-curated-data": lambda s: job(s, training_data=None, wait=False),
    "hf-id-source": lambda s: job(s, model_s3_uri=None),
}


@pytest.fixture(params=sorted(CONFIGURATIONS))
def configuration(request):
    return synth_stack(CONFIGURATIONS[request.param])


def test_snapshot(configuration, snapshot):
    assert normalized(configuration[1]) == snapshot


def test_cfn_lint_clean(configuration):
    assert cfn_lint_errors(configuration[1]) == []


def test_custom_resource_properties():
    template, _ = synth_stack(job)
    template.has_resource_properties(
        "Custom::EagleOptimizationJob",
        {
            "JobName": Match.string_like_regexp("^qwen3eagle-[0-9a-f]{12}$"),
            "DeploymentInstanceType": "ml.g7e.2xlarge",
            "ModelS3Uri": "s3://models/qwen3-32b/",
            "TrainingDataS3Uri": "s3://traffic/sharegpt/",
            "TrainingDataType": "S3Prefix",
            "MaxRuntimeInSeconds": "3300",
            "Wait": "true",
            "RoleArn": Match.any_value(),
            "OutputS3Uri": Match.any_value(),
        },
    )
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "BucketEncryption": Match.any_value(),
            "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
        },
    )
    template.has_resource("AWS::S3::Bucket", {"DeletionPolicy": "Retain"})


def test_job_name_changes_with_inputs_only():
    a = job(cdk.Stack(cdk.App(), "A", env=cdk.Environment(region="us-west-2")))
    b = job(cdk.Stack(cdk.App(), "B", env=cdk.Environment(region="us-west-2")))
    c = job(
        cdk.Stack(cdk.App(), "C", env=cdk.Environment(region="us-west-2")), training_data="s3://traffic/v2/"
    )
    assert a.job_name == b.job_name != c.job_name


def test_handler_role_is_scoped_to_the_job_and_its_role():
    _, raw = synth_stack(job)
    statements = [
        s
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    create = next(s for s in statements if "sagemaker:CreateOptimizationJob" in s["Action"])
    assert "optimization-job/qwen3eagle-*" in str(create["Resource"])
    pass_role = next(s for s in statements if s["Action"] == "iam:PassRole")
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}}
    assert not any(s["Resource"] == "*" and "sagemaker" in str(s["Action"]) for s in statements)


def test_endpoint_mounts_the_trained_draft():
    template, raw = synth_stack(job_and_endpoint)
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "PrimaryContainer": Match.object_like(
                {
                    "ModelDataSource": {
                        "S3DataSource": {
                            "S3Uri": {
                                "Fn::Join": [
                                    "",
                                    [
                                        "s3://",
                                        {"Ref": Match.string_like_regexp("Qwen3EagleOutputBucket")},
                                        Match.string_like_regexp(
                                            "^/eagle-optimization/qwen3eagle-[0-9a-f]{12}/draft/$"
                                        ),
                                    ],
                                ]
                            },
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        }
                    },
                    "Environment": Match.object_like(
                        {
                            "SM_VLLM_MODEL": "Qwen/Qwen3-32B",
                            "SM_VLLM_SPECULATIVE_CONFIG": '{"method":"eagle3","model":"/opt/ml/model","num_speculative_tokens":4}',
                        }
                    ),
                }
            )
        },
    )
    model = next(r for r in raw["Resources"].values() if r["Type"] == "AWS::SageMaker::Model")
    assert any(d.startswith("Qwen3Eagle") for d in model["DependsOn"])


def test_lambda_asset_contains_the_handler():
    assert (handlers_dir() / "optimization_job" / "handler.py").is_file()
    template, _ = synth_stack(job)
    template.has_resource_properties(
        "AWS::Lambda::Function", {"Handler": "optimization_job.handler.on_event", "Runtime": "python3.14"}
    )
    template.has_resource_properties(
        "AWS::Lambda::Function", {"Handler": "optimization_job.handler.is_complete"}
    )


@pytest.mark.parametrize(
    ("props", "code"),
    [
        ({"deployment_instance_type": "ml.p3.8xlarge"}, "SI800"),
        ({"model_id": "google/gemma-3-27b"}, "SI801"),
        ({"model_id": "acme/custom", "model_architecture": "GemmaForCausalLM"}, "SI801"),
        ({"training_data": "traffic/sharegpt"}, "SI802"),
    ],
)
def test_invalid_inputs(props, code):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(CompatibilityError) as info:
        job(stack, **props)
    assert code in {f.code for f in info.value.findings}


def test_unknown_model_with_supported_architecture_passes():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    trained = job(stack, model_id="acme/qwen3-finetune", model_architecture="Qwen3ForCausalLM")
    assert trained.as_speculative_config(num_speculative_tokens=3).config.method == "eagle3"


def test_waited_job_must_fit_cloudformations_hour():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match="use wait=False for longer jobs"):
        job(stack, max_runtime=cdk.Duration.hours(2))
    long_job = job(cdk.Stack(cdk.App(), "T", env=cdk.Environment(region="us-west-2")), wait=False)
    assert long_job.resource is not None


def test_job_name_hash_covers_output_location_and_is_stable_across_synths():
    def name(**props):
        return job(cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2")), **props).job_name

    assert name() == name()
    assert name() != name(output_prefix="other/")


def test_a_base_draft_reaches_the_handler_with_an_image_and_permissions():
    _, data = synth_stack(second_round)
    resources = data["Resources"]
    jobs = {k: v for k, v in resources.items() if v["Type"] == "Custom::EagleOptimizationJob"}
    (second,) = [v for k, v in jobs.items() if "Round2" in k]
    props = second["Properties"]
    assert "BaseDraftS3Uri" in props and "djl-inference" in str(props["SourceModelImage"])
    assert props["ModelS3Uri"] == "s3://models/qwen3-32b/"
    # It waits for the first job's head.
    assert any(dep in jobs for dep in second.get("DependsOn", []))
    statements = [
        st
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy"
        for st in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    create_model = [st for st in statements if "sagemaker:CreateModel" in st["Action"]]
    assert create_model and all("model/qwen3eagleround2-*" in str(st["Resource"]) for st in create_model)


def test_the_base_draft_changes_the_job_name():
    def with_head(stack, uri):
        return job(stack, base_draft=uri)

    names = set()
    for uri in ("s3://heads/round-1/draft/", "s3://heads/round-2/draft/"):
        stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
        names.add(with_head(stack, uri).job_name)
    assert len(names) == 2


def test_a_base_draft_needs_the_targets_weights_in_s3():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(ValueError, match="base_draft needs model_s3_uri"):
        job(stack, model_s3_uri=None, base_draft="s3://heads/round-1/draft/")
    stack = cdk.Stack(cdk.App(), "S2", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(CompatibilityError, match="base_draft"):
        job(stack, base_draft="heads/round-1")
