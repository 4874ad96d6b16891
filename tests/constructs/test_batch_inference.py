"""BatchInference: the transform job's parameters against botocore's service model, the state machine
against a maintained ASL validator (asl-validator, pinned in package.json), sizing defaults at their
boundaries, permissions and triggers."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import aws_cdk as cdk
import botocore.session
import pytest
from botocore.validate import ParamValidator

from speculative_infra import CompatibilityError
from speculative_infra.constructs.batch_inference import BatchInference
from speculative_infra.constructs.dashboard_body import with_placeholders
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.conftest import REPO

ENGINE = {"max_model_len": 4096, "max_num_seqs": 64, "tensor_parallel_size": 4}


def reference(stack: cdk.Stack, **props: Any) -> BatchInference:
    """Qwen3-32B with EAGLE3 over OpenAI-Batch-style request lines, on 4 x L40S (batch transform has no g7e)."""
    defaults: dict[str, Any] = {
        "instance_type": "ml.g6e.12xlarge",
        "model_id": "Qwen/Qwen3-32B",
        "vllm_version": "0.15.1",
        "engine": ENGINE,
        "speculative": {"model": "RedHatAI/Qwen3-32B-speculator.eagle3", "num_speculative_tokens": 4},
        "input_s3_uri": "s3://my-requests/batch/",
        "output_s3_uri": "s3://my-answers/batch/",
        "schedule": "cron(0 2 * * ? *)",
        "start_on_upload": True,
    }
    return BatchInference(stack, "Docs", **{**defaults, **props})


CONFIGURATIONS = {"batch-scheduled-and-on-upload": {}}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_stack(reference)[1]


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def _definition(template: dict[str, Any]) -> dict[str, Any]:
    (machine,) = _resources(template, "AWS::StepFunctions::StateMachine")
    return json.loads(with_placeholders(machine["DefinitionString"]))


def test_snapshot(template, snapshot):
    assert normalized(template) == snapshot


def test_cfn_lint_clean(template):
    assert cfn_lint_errors(template) == []


def test_definition_passes_the_asl_validator(template, tmp_path):
    path = tmp_path / "definition.json"
    # As CloudFormation renders it: the partition resolved, the model name a plain string.
    text = json.dumps(_definition(template)).replace("${AWS::Partition}", "aws")
    path.write_text(re.sub(r"\$\{[A-Za-z0-9]+\.ModelName\}", "qwen3-model", text))
    done = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_asl_validator_can_fail(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"StartAt": "Missing", "States": {"A": {"Type": "Pass", "End": True}}}))
    done = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    assert done.returncode != 0


def _sample(parameters: dict[str, Any]) -> dict[str, Any]:
    """The task's parameters as the service receives them: paths replaced by the values they produce."""
    out: dict[str, Any] = {}
    for key, value in parameters.items():
        if key.endswith(".$"):
            key, value = (
                key[:-2],
                {
                    "TransformJobName": "teststack-docs-1b4e28ba-2fa1-11d2-883f-0016d3cca427",
                    "S3Uri": "s3://my-requests/batch/today.jsonl",
                    "S3OutputPath": "s3://my-answers/batch/run-1/",
                }[key[:-2]],
            )
        elif isinstance(value, dict):
            value = _sample(value)
        elif isinstance(value, str) and value.startswith("${"):
            value = "qwen3-model"
        out[key] = value
    return out


def _transform_state(template: dict[str, Any]) -> dict[str, Any]:
    return _definition(template)["States"]["Transform"]


def test_transform_request_matches_botocores_service_model(template):
    model = botocore.session.get_session().get_service_model("sagemaker")
    shape = model.operation_model("CreateTransformJob").input_shape
    request = _sample(_transform_state(template)["Parameters"])
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    assert set(shape.required_members) <= set(request)


def test_transform_defaults(template):
    state = _transform_state(template)
    assert state["Resource"].endswith(":states:::sagemaker:createTransformJob.sync")
    params = state["Parameters"]
    assert params["BatchStrategy"] == "SingleRecord"
    assert params["TransformInput"]["SplitType"] == "Line"
    assert params["TransformOutput"]["AssembleWith"] == "Line"
    assert params["DataProcessing"] == {"InputFilter": "$.body", "JoinSource": "Input", "OutputFilter": "$"}
    # max_num_seqs 64, one MB per record: 64 x 1 <= 100 MB.
    assert (params["MaxConcurrentTransforms"], params["MaxPayloadInMB"]) == (64, 1)
    # 4096 tokens x 100 ms x 1.5 = 614.4 s.
    assert params["ModelClientConfig"] == {"InvocationsTimeoutInSeconds": 615, "InvocationsMaxRetries": 1}
    assert params["TransformResources"]["TransformAmiVersion"] == "al2-ami-sagemaker-batch-gpu-535"
    assert state["Catch"] == [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "JobFailed"}]
    failed = _definition(template)["States"]["JobFailed"]
    assert (failed["Type"], failed["CausePath"]) == ("Fail", "$.error.Cause")
    name = re.match(r"States\.Format\('([a-z0-9-]+)-\{\}', States\.UUID\(\)\)", params["TransformJobName.$"])
    assert name is not None and len(name.group(1)) + 1 + 36 <= 63


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"max_payload_mb": 2}, 50),  # 100 MB / 2
        ({"max_payload_mb": 1, "max_concurrent_transforms": 100}, 100),  # the ceiling itself
        ({"engine": {**ENGINE, "max_num_seqs": 8}}, 8),
    ],
)
def test_concurrency_bounds(props, expected):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    assert reference(stack, **props).max_concurrent_transforms == expected


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"max_concurrent_transforms": 101}, "max_concurrent_transforms is 101; allowed: 1 to 100"),
        ({"max_payload_mb": 3, "max_concurrent_transforms": 34}, "allowed: 1 to 33"),
        ({"max_payload_mb": 101}, "max_payload_mb is 101; allowed: 1 to 100"),
        ({"invocation_retries": 4}, "invocation_retries is 4; allowed: 0 to 3"),
        ({"invocation_timeout": cdk.Duration.seconds(3601)}, "invocation_timeout is 3601 s"),
        ({"schedule": "every day"}, "schedule is 'every day'"),
        ({"input_s3_uri": "my-requests"}, "input_s3_uri"),
        ({"output_s3_uri": "s3://my-requests/batch/answers/"}, "output_s3_uri is under input_s3_uri"),
        ({"output_s3_uri": "s3://my-answers/it's/"}, "has a quote, brace or backslash"),
    ],
)
def test_bad_batch_props_name_the_field(props, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match=re.escape(message)):
        reference(stack, **props)


@pytest.mark.parametrize(
    ("tokens", "seconds"), [(256, 60), (400, 60), (401, 61), (24000, 3600), (100000, 3600)]
)
def test_invocation_timeout_follows_the_longest_answer(tokens, seconds):
    # tokens x 100 ms x 1.5, at least 60 s, at most an hour: 400 tokens are exactly 60 s.
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    assert reference(stack, max_output_tokens=tokens).invocation_timeout_seconds == seconds


# Observed, not derived from the construct: the slowest published pace of a batch that is not yet full.
# Qwen3-32B, ml.g5.12xlarge (TP 4), 32 requests in flight, 600 output tokens, slowest request 45,817.9 ms
# (aws-samples/sagemaker-genai-hosting-examples@3de810a6 07-benchmark/sagemaker-inference-benchmark-suite/
# results/backup_mar_9/qwen3-vanilla-g512xl_useast1_g512xlarge_long_context_useast1_20260309_203530.csv).
OBSERVED_SLOWEST_MS_PER_TOKEN = 45817.9 / 600


@pytest.mark.parametrize("tokens", [600, 2048, 4096])
def test_default_timeout_outlasts_the_slowest_observed_pace(tokens):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    timeout = reference(stack, max_output_tokens=tokens).invocation_timeout_seconds
    assert timeout > tokens * OBSERVED_SLOWEST_MS_PER_TOKEN / 1000.0


def test_g7e_cannot_run_as_a_transform_job():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(CompatibilityError, match="SI103"):
        reference(stack, instance_type="ml.g7e.2xlarge", engine={"max_model_len": 4096, "max_num_seqs": 64})


def test_roles_read_input_write_output_and_run_only_transform_jobs(template):
    statements = [
        s for p in _resources(template, "AWS::IAM::Policy") for s in p["PolicyDocument"]["Statement"]
    ]
    text = json.dumps(statements)
    assert "my-requests/batch/*" in text and "my-answers/batch/*" in text
    puts = [s for s in statements if s["Action"] == "s3:PutObject"]
    assert len(puts) == 1 and "my-answers/batch/*" in json.dumps(puts[0]["Resource"])
    transform = next(s for s in statements if "sagemaker:CreateTransformJob" in s["Action"])
    assert "transform-job/*" in json.dumps(transform["Resource"])
    assert "sagemaker:AddTags" in transform["Action"]  # the .sync integration tags the job it starts
    logs = [s for s in statements if "logs:PutLogEvents" in json.dumps(s["Action"])]
    assert any("/aws/sagemaker/TransformJobs" in json.dumps(s["Resource"]) for s in logs)
    events = next(s for s in statements if "events:PutRule" in s["Action"])
    assert "StepFunctionsGetEventsForSageMakerTransformJobsRule" in json.dumps(events["Resource"])


def test_triggers(template):
    (schedule,) = _resources(template, "AWS::Scheduler::Schedule")
    assert schedule["ScheduleExpression"] == "cron(0 2 * * ? *)" and schedule["Target"]["Input"] == "{}"
    (rule,) = _resources(template, "AWS::Events::Rule")
    pattern = rule["EventPattern"]
    assert pattern["detail"] == {
        "bucket": {"name": ["my-requests"]},
        "object": {"key": [{"prefix": "batch/"}]},
    }
    transformer = rule["Targets"][0]["InputTransformer"]
    assert transformer["InputPathsMap"] == {"detail-object-key": "$.detail.object.key"}
    assert (
        json.loads(transformer["InputTemplate"].replace("<detail-object-key>", "x.jsonl"))
        == {"input_s3_uri": "s3://my-requests/batch/x.jsonl".replace("batch/", "")}
        or "s3://my-requests/<detail-object-key>" in transformer["InputTemplate"]
    )


def _lmi_batch(stack: cdk.Stack) -> BatchInference:
    # The reference's LMI leg: DJL LMI v20 on 4 x A10G, where it worked (the vLLM DLC did not).
    return reference(
        stack,
        instance_type="ml.g5.12xlarge",
        vllm_version=None,
        lmi_version="20",
        schedule=None,
        start_on_upload=False,
    )


def test_lmi_batch_runs_the_lmi_container_in_vllm_async_mode():
    _, template = synth_stack(_lmi_batch)
    assert cfn_lint_errors(template) == []
    (model,) = _resources(template, "AWS::SageMaker::Model")
    container = model["PrimaryContainer"]
    assert "djl-inference" in json.dumps(container["Image"])
    env = container["Environment"]
    assert env["OPTION_ASYNC_MODE"] == "true" and env["OPTION_ROLLING_BATCH"] == "disable"
    assert env["OPTION_ENTRYPOINT"] == "djl_python.lmi_vllm.vllm_async_service"
    assert env["HF_MODEL_ID"] == "Qwen/Qwen3-32B"
    assert json.loads(env["OPTION_SPECULATIVE_CONFIG"])["model"] == "RedHatAI/Qwen3-32B-speculator.eagle3"
    params = _transform_state(template)["Parameters"]
    # One request per invocation: LMI's handler takes one JSON request per call.
    assert params["BatchStrategy"] == "SingleRecord" and params["MaxConcurrentTransforms"] == 64
    assert params["TransformResources"]["TransformAmiVersion"] == "al2-ami-sagemaker-batch-gpu-535"


def test_lmi_and_vllm_versions_are_exclusive():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match=r"give vllm_version .* or lmi_version .*, not both"):
        reference(stack, lmi_version="20")
