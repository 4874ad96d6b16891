"""The EAGLE optimization-job custom resource, driven through its Lambda entry points.

botocore's Stubber checks every request against SageMaker's real service model; a call with no queued
response fails the test, which is how "no call" is asserted.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from mypy_boto3_sagemaker import SageMakerClient

from speculative_infra_lambda import optimization_job
from speculative_infra_lambda.optimization_job import handler
from speculative_infra_lambda.optimization_job.events import DATA_KEYS, PropertyError, parse_properties
from speculative_infra_lambda.optimization_job.job import OptimizationJobFailed, OptimizationJobMissing

JOB = "eagle-qwen3-32b-1a2b3c4d5e"
NEW_JOB = "eagle-qwen3-32b-9f8e7d6c5b"
ARN = f"arn:aws:sagemaker:us-east-1:123456789012:optimization-job/{JOB}"
NEW_ARN = f"arn:aws:sagemaker:us-east-1:123456789012:optimization-job/{NEW_JOB}"
ROLE = "arn:aws:iam::123456789012:role/eagle-optimization"
KMS = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
IMAGE = "763104351884.dkr.ecr.us-east-1.amazonaws.com/djl-inference:0.36.0-lmi18.0.0-cu128"
DRAFT = "s3://spec-out/eagle/draft/"

# As CloudFormation delivers them: every scalar a string, plus the framework's ServiceToken.
PROPERTIES: dict[str, Any] = {
    "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:provider-framework-onEvent",
    "JobName": JOB,
    "RoleArn": ROLE,
    "ModelS3Uri": "s3://spec-models/qwen3-32b/",
    "ModelAccessAcceptEula": "true",
    "DeploymentInstanceType": "ml.g7e.2xlarge",
    "TrainingDataS3Uri": "s3://spec-data/sharegpt/",
    "TrainingDataType": "S3Prefix",
    "OutputS3Uri": "s3://spec-out/eagle/",
    "KmsKeyId": KMS,
    "MaxRuntimeInSeconds": "86400",
    "Wait": "true",
    "VpcSecurityGroupIds": ["sg-0123456789abcdef0"],
    "VpcSubnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
    "Tags": [{"Key": "project", "Value": "speculative-infra"}],
}
FULL_REQUEST: dict[str, Any] = {
    "OptimizationJobName": JOB,
    "RoleArn": ROLE,
    "ModelSource": {
        "S3": {"S3Uri": "s3://spec-models/qwen3-32b/", "ModelAccessConfig": {"AcceptEula": True}}
    },
    "DeploymentInstanceType": "ml.g7e.2xlarge",
    "OptimizationConfigs": [
        {
            "ModelSpeculativeDecodingConfig": {
                "Technique": "EAGLE",
                "TrainingDataSource": {"S3Uri": "s3://spec-data/sharegpt/", "S3DataType": "S3Prefix"},
            }
        }
    ],
    "OutputConfig": {"S3OutputLocation": "s3://spec-out/eagle/", "KmsKeyId": KMS},
    "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
    "VpcConfig": {
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
        "Subnets": ["subnet-0123456789abcdef0", "subnet-0fedcba9876543210"],
    },
    "Tags": [{"Key": "project", "Value": "speculative-infra"}],
}


def props(**changes: Any) -> dict[str, Any]:
    """PROPERTIES with changes applied; a None value removes the property."""
    merged = PROPERTIES | changes
    return {key: value for key, value in merged.items() if value is not None}


def event(request_type: str, properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ServiceToken": PROPERTIES["ServiceToken"],
        "ResponseURL": "...",
        "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/spec/guid",
        "RequestId": "request-1",
        "LogicalResourceId": "EagleJob",
        "ResourceType": "AWS::CloudFormation::CustomResource",
        "ResourceProperties": PROPERTIES if properties is None else properties,
        **extra,
    }


def described(
    status: str, *, name: str = JOB, reason: str | None = None, image: str | None = None
) -> dict[str, Any]:
    """A DescribeOptimizationJob response with every member the service model requires."""
    now = datetime(2026, 1, 1, tzinfo=UTC)
    response = {
        key: value for key, value in FULL_REQUEST.items() if key not in ("Tags", "OptimizationJobName")
    }
    response |= {
        "OptimizationJobName": name,
        "OptimizationJobArn": ARN if name == JOB else NEW_ARN,
        "OptimizationJobStatus": status,
        "CreationTime": now,
        "LastModifiedTime": now,
    }
    if reason is not None:
        response["FailureReason"] = reason
    if image is not None:
        response["OptimizationOutput"] = {"RecommendedInferenceImage": image}
    return response


def expect_describe(stubber: Stubber, response: dict[str, Any], name: str = JOB) -> None:
    stubber.add_response("describe_optimization_job", response, {"OptimizationJobName": name})


def expect_missing(stubber: Stubber, operation: str = "describe_optimization_job", name: str = JOB) -> None:
    stubber.add_client_error(
        operation,
        service_error_code="ResourceNotFound",
        service_message=f"Optimization job {name} does not exist.",
        http_status_code=404,
        expected_params={"OptimizationJobName": name},
    )


def data(*, name: str = JOB, arn: str = ARN, status: str = "", image: str = "") -> dict[str, str]:
    return {
        "JobName": name,
        "JobArn": arn,
        "Status": status,
        "DraftS3Uri": DRAFT,
        "RecommendedInferenceImage": image,
    }


def log_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, str]]:
    return [json.loads(record.getMessage()) for record in caplog.records if record.name == handler.__name__]


# --- Create ------------------------------------------------------------------------------------------


def test_create_sends_the_exact_request(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    expect_missing(stubber)
    stubber.add_response("create_optimization_job", {"OptimizationJobArn": ARN}, FULL_REQUEST)

    response = handler.on_event(event("Create"), None, client=sagemaker)

    assert response == {"PhysicalResourceId": JOB, "Data": data()}
    assert tuple(response["Data"]) == DATA_KEYS


def test_create_with_curated_datasets_sends_no_training_data_source(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    minimal = props(
        TrainingDataS3Uri=None,
        TrainingDataType=None,
        ModelS3Uri=None,
        ModelAccessAcceptEula=None,
        SageMakerModelName="qwen3-32b-base",
        KmsKeyId=None,
        VpcSecurityGroupIds=None,
        VpcSubnets=None,
        Tags=None,
    )
    expect_missing(stubber)
    stubber.add_response(
        "create_optimization_job",
        {"OptimizationJobArn": ARN},
        {
            "OptimizationJobName": JOB,
            "RoleArn": ROLE,
            "ModelSource": {"SageMakerModel": {"ModelName": "qwen3-32b-base"}},
            "DeploymentInstanceType": "ml.g7e.2xlarge",
            "OptimizationConfigs": [{"ModelSpeculativeDecodingConfig": {"Technique": "EAGLE"}}],
            "OutputConfig": {"S3OutputLocation": "s3://spec-out/eagle/"},
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
        },
    )

    assert handler.on_event(event("Create", minimal), None, client=sagemaker) == {
        "PhysicalResourceId": JOB,
        "Data": data(),
    }


@pytest.mark.parametrize(
    "request_type, physical_id",
    [("Create", None), ("Update", NEW_JOB)],  # a retried Create; a rollback to the previous inputs
)
def test_existing_job_is_adopted_not_created_again(
    sagemaker: SageMakerClient, stubber: Stubber, request_type: str, physical_id: str | None
) -> None:
    expect_describe(stubber, described("INPROGRESS"))  # and no CreateOptimizationJob queued

    extra: dict[str, Any] = {}
    if physical_id is not None:  # rolling back: CloudFormation sends the old properties to the new job
        extra = {"PhysicalResourceId": physical_id, "OldResourceProperties": props(JobName=physical_id)}
    response = handler.on_event(event(request_type, **extra), None, client=sagemaker)

    assert response == {"PhysicalResourceId": JOB, "Data": data(status="INPROGRESS")}


def test_create_racing_a_concurrent_retry_adopts_its_job(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    expect_missing(stubber)
    stubber.add_client_error(
        "create_optimization_job",
        service_error_code="ResourceInUse",
        service_message=f"Optimization job {JOB} already exists.",
        expected_params=FULL_REQUEST,
    )
    expect_describe(stubber, described("STARTING"))

    response = handler.on_event(event("Create"), None, client=sagemaker)

    assert response == {"PhysicalResourceId": JOB, "Data": data(status="STARTING")}


def test_create_error_propagates_so_the_framework_reports_failed(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    expect_missing(stubber)
    stubber.add_client_error(
        "create_optimization_job",
        service_error_code="ResourceLimitExceeded",
        service_message="The account-level service limit for ml.g7e.2xlarge is 0 instances.",
        expected_params=FULL_REQUEST,
    )

    with caplog.at_level(logging.INFO), pytest.raises(ClientError, match="ResourceLimitExceeded"):
        handler.on_event(event("Create"), None, client=sagemaker)

    [line] = log_lines(caplog)
    assert line["outcome"] == "failed"
    assert line["JobName"] == JOB
    assert "service limit" in line["error"]


def test_describe_error_other_than_not_found_fails_the_create(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    stubber.add_client_error(
        "describe_optimization_job",
        service_error_code="AccessDeniedException",
        service_message="not authorized to perform: sagemaker:DescribeOptimizationJob",
        http_status_code=403,
    )

    with pytest.raises(ClientError, match="AccessDenied"):
        handler.on_event(event("Create"), None, client=sagemaker)


# --- Update ------------------------------------------------------------------------------------------


def test_update_with_a_new_job_name_starts_the_new_job(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    expect_missing(stubber, name=NEW_JOB)
    stubber.add_response(
        "create_optimization_job",
        {"OptimizationJobArn": NEW_ARN},
        FULL_REQUEST | {"OptimizationJobName": NEW_JOB},
    )
    update = event("Update", props(JobName=NEW_JOB), PhysicalResourceId=JOB, OldResourceProperties=PROPERTIES)

    response = handler.on_event(update, None, client=sagemaker)

    assert response == {"PhysicalResourceId": NEW_JOB, "Data": data(name=NEW_JOB, arn=NEW_ARN)}


def test_update_with_the_same_job_name_calls_nothing(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    changed = props(Tags=[{"Key": "project", "Value": "renamed"}], Wait="false")
    update = event("Update", changed, PhysicalResourceId=JOB, OldResourceProperties=PROPERTIES)

    response = handler.on_event(update, None, client=sagemaker)

    assert response == {"PhysicalResourceId": JOB, "Data": data(arn="")}


# --- is_complete -------------------------------------------------------------------------------------


def completion_event(properties: dict[str, Any] | None = None, **known: str) -> dict[str, Any]:
    """What the framework passes is_complete: the request plus on_event's PhysicalResourceId and Data."""
    return event("Create", properties, PhysicalResourceId=JOB, Data=data() | known)


@pytest.mark.parametrize("status", ["STARTING", "INPROGRESS", "STOPPING"])
def test_poll_while_the_job_runs(sagemaker: SageMakerClient, stubber: Stubber, status: str) -> None:
    expect_describe(stubber, described(status))

    # The framework rejects Data alongside IsComplete False.
    assert handler.is_complete(completion_event(), None, client=sagemaker) == {"IsComplete": False}


def test_complete_job_returns_its_data(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    expect_describe(stubber, described("COMPLETED", image=IMAGE))

    assert handler.is_complete(completion_event(), None, client=sagemaker) == {
        "IsComplete": True,
        "Data": {
            "JobName": JOB,
            "JobArn": ARN,
            "Status": "COMPLETED",
            "DraftS3Uri": DRAFT,
            "RecommendedInferenceImage": IMAGE,
        },
    }


def test_complete_job_without_recommended_image_returns_empty_string(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    expect_describe(stubber, described("COMPLETED"))

    result = handler.is_complete(completion_event(), None, client=sagemaker)

    assert result["Data"]["RecommendedInferenceImage"] == ""


@pytest.mark.parametrize("status", ["FAILED", "STOPPED"])
def test_unsuccessful_job_raises_with_its_failure_reason(
    sagemaker: SageMakerClient, stubber: Stubber, status: str
) -> None:
    reason = "ClientError: Training data s3://spec-data/sharegpt/ is not in a supported format"
    expect_describe(stubber, described(status, reason=reason))

    with pytest.raises(OptimizationJobFailed) as raised:
        handler.is_complete(completion_event(), None, client=sagemaker)

    assert str(raised.value) == f"optimization job {JOB} {status}: {reason}"


def test_job_missing_while_waiting_raises(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    expect_missing(stubber)

    with pytest.raises(OptimizationJobMissing, match=JOB):
        handler.is_complete(completion_event(), None, client=sagemaker)


def test_wait_false_completes_at_once_without_a_call(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    result = handler.is_complete(completion_event(props(Wait="false")), None, client=sagemaker)

    assert result == {"IsComplete": True, "Data": data()}


def test_wait_false_after_same_name_update_describes_once_for_the_arn(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    expect_describe(stubber, described("INPROGRESS"))
    update = event("Update", props(Wait="false"), PhysicalResourceId=JOB, Data=data(arn=""))

    result = handler.is_complete(update, None, client=sagemaker)

    assert result == {"IsComplete": True, "Data": data(status="INPROGRESS")}


# --- Delete ------------------------------------------------------------------------------------------


def delete_event(physical_id: str = JOB, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return event("Delete", properties, PhysicalResourceId=physical_id)


def run_delete(
    sagemaker: SageMakerClient, caplog: pytest.LogCaptureFixture, physical_id: str = JOB, **kwargs: Any
) -> dict[str, str]:
    """Delete always succeeds, even past an unstubbed call, so each test checks the logged outcome."""
    with caplog.at_level(logging.INFO):
        response = handler.on_event(delete_event(physical_id, **kwargs), None, client=sagemaker)
    assert response == {"PhysicalResourceId": physical_id}
    [line] = log_lines(caplog)
    return line


@pytest.mark.parametrize("status", ["STARTING", "INPROGRESS"])
def test_delete_stops_a_running_job(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture, status: str
) -> None:
    expect_describe(stubber, described(status))
    stubber.add_response("stop_optimization_job", {}, {"OptimizationJobName": JOB})

    line = run_delete(sagemaker, caplog)

    assert line == {
        "handler": "on_event",
        "RequestType": "Delete",
        "JobName": JOB,
        "outcome": "stop requested",
        "status": status,
    }


@pytest.mark.parametrize("status", ["COMPLETED", "FAILED", "STOPPING", "STOPPED"])
def test_delete_leaves_a_finished_job_alone(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture, status: str
) -> None:
    expect_describe(stubber, described(status))  # and no StopOptimizationJob queued

    assert run_delete(sagemaker, caplog)["outcome"] == "nothing to stop"


@pytest.mark.parametrize(
    "code, message",
    [
        ("ResourceNotFound", f"Optimization job {JOB} does not exist."),
        ("ValidationException", f"Could not find optimization job '{JOB}'."),
    ],
)
def test_delete_of_a_missing_job_succeeds(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture, code: str, message: str
) -> None:
    stubber.add_client_error("describe_optimization_job", service_error_code=code, service_message=message)

    assert run_delete(sagemaker, caplog)["outcome"] == "already gone"


def test_delete_when_the_job_vanishes_before_stop_succeeds(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    expect_describe(stubber, described("INPROGRESS"))
    expect_missing(stubber, "stop_optimization_job")

    assert run_delete(sagemaker, caplog)["outcome"] == "already gone"


@pytest.mark.parametrize(
    "code, message",
    [
        ("ThrottlingException", "Rate exceeded"),
        ("ValidationException", "The job cannot be stopped in its current state."),  # not a "missing" message
    ],
)
def test_delete_with_an_unexpected_error_still_succeeds(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture, code: str, message: str
) -> None:
    expect_describe(stubber, described("INPROGRESS"))
    stubber.add_client_error("stop_optimization_job", service_error_code=code, service_message=message)

    line = run_delete(sagemaker, caplog)

    assert line["outcome"] == "error ignored"
    assert (
        line["error"]
        == f"ClientError: An error occurred ({code}) when calling the StopOptimizationJob operation: {message}"
    )
    assert [r.levelno for r in caplog.records if r.name == handler.__name__] == [logging.WARNING]


def test_delete_ignores_malformed_properties(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    expect_missing(stubber)

    assert run_delete(sagemaker, caplog, properties={"Bogus": 1})["outcome"] == "already gone"


def test_delete_of_a_physical_id_that_is_no_job_name_calls_nothing(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    weird = "AWSCDK::CustomResourceProviderFramework::MISSING_PHYSICAL_ID"

    line = run_delete(sagemaker, caplog, weird)

    assert line["outcome"] == "skipped: physical id is not a job name"
    assert "error" not in line


def test_delete_does_not_poll(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    assert handler.is_complete(delete_event(), None, client=sagemaker) == {"IsComplete": True}


# --- Properties --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"JobName": None}, "JobName"),
        ({"JobName": "eagle_job"}, "JobName"),
        ({"JobName": "x" * 64}, "JobName"),
        ({"RoleArn": "eagle-role"}, "RoleArn"),
        ({"SageMakerModelName": "qwen3"}, "ModelS3Uri"),  # both model sources
        ({"ModelS3Uri": None, "ModelAccessAcceptEula": None}, "ModelS3Uri"),  # neither
        ({"ModelS3Uri": None, "SageMakerModelName": "qwen3"}, "ModelAccessAcceptEula"),
        ({"ModelAccessAcceptEula": "yes"}, "ModelAccessAcceptEula"),
        ({"DeploymentInstanceType": "g7e.2xlarge"}, "DeploymentInstanceType"),
        ({"TrainingDataS3Uri": "spec-data/sharegpt"}, "TrainingDataS3Uri"),
        ({"TrainingDataType": "JsonLines"}, "TrainingDataType"),
        ({"OutputS3Uri": None}, "OutputS3Uri"),
        ({"MaxRuntimeInSeconds": "1h"}, "MaxRuntimeInSeconds"),
        ({"MaxRuntimeInSeconds": "0"}, "MaxRuntimeInSeconds"),
        ({"Wait": None}, "Wait"),
        ({"Wait": "True!"}, "Wait"),
        ({"VpcSubnets": None}, "VpcSubnets"),
        ({"VpcSecurityGroupIds": "sg-0123456789abcdef0"}, "VpcSecurityGroupIds"),
        ({"Tags": [{"Key": "project"}]}, "Tags[0]"),
        ({"TrainingDataS3URI": "s3://spec-data/x/"}, "TrainingDataS3URI"),  # unknown: a typo
    ],
)
def test_malformed_property_fails_with_its_name(
    sagemaker: SageMakerClient, stubber: Stubber, changes: dict[str, Any], named: str
) -> None:
    with pytest.raises(PropertyError) as raised:
        handler.on_event(event("Create", props(**changes)), None, client=sagemaker)

    assert str(raised.value).startswith(f"ResourceProperties.{named}: ")


def test_booleans_and_integers_parse_from_cloudformation_strings(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    expect_missing(stubber)
    stubber.add_response(
        "create_optimization_job",
        {"OptimizationJobArn": ARN},
        FULL_REQUEST
        | {
            "ModelSource": {
                "S3": {"S3Uri": "s3://spec-models/qwen3-32b/", "ModelAccessConfig": {"AcceptEula": False}}
            }
        },
    )

    handler.on_event(
        event("Create", props(ModelAccessAcceptEula="FALSE", Wait="False")), None, client=sagemaker
    )


# --- Logging and packaging ---------------------------------------------------------------------------


def test_each_call_logs_one_json_line_without_properties(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    expect_missing(stubber)
    stubber.add_response("create_optimization_job", {"OptimizationJobArn": ARN}, FULL_REQUEST)
    expect_describe(stubber, described("INPROGRESS"))

    with caplog.at_level(logging.INFO):
        handler.on_event(event("Create"), None, client=sagemaker)
        handler.is_complete(completion_event(), None, client=sagemaker)

    assert log_lines(caplog) == [
        {"handler": "on_event", "RequestType": "Create", "JobName": JOB, "outcome": "created", "status": ""},
        {
            "handler": "is_complete",
            "RequestType": "Create",
            "JobName": JOB,
            "outcome": "waiting",
            "status": "INPROGRESS",
        },
    ]


def test_the_folder_runs_alone_as_a_lambda_asset(tmp_path: Path) -> None:
    """Copied out as the construct ships it, it imports with only the standard library and boto3."""
    shutil.copytree(Path(optimization_job.__file__).parent, tmp_path / "optimization_job")
    blocked = ["speculative_infra", "pydantic", "yaml", "mypy_boto3_sagemaker", "aws_cdk"]
    script = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import optimization_job.handler as h\n"
        "assert callable(h.on_event) and callable(h.is_complete)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, timeout=60)


# --- From an existing EAGLE head ------------------------------------------------------------------

BASE_DRAFT = "s3://spec-out/eagle/previous-job/draft/"


def test_from_a_base_draft_registers_a_model_with_the_head_and_optimizes_it(
    sagemaker: SageMakerClient, stubber: Stubber
) -> None:
    """The request shapes are checked by the Stubber against SageMaker's service model: CreateModel with
    the target as ModelDataSource and the head as the "eagle_model" additional data source (the AWS ML
    blog's "bring your trained EAGLE" example), then the job on that model."""
    properties = props(BaseDraftS3Uri=BASE_DRAFT, SourceModelImage=IMAGE)
    expect_missing(stubber)
    stubber.add_response(
        "create_model",
        {"ModelArn": f"arn:aws:sagemaker:us-east-1:123456789012:model/{JOB}"},
        {
            "ModelName": JOB,
            "ExecutionRoleArn": ROLE,
            "PrimaryContainer": {
                "Image": IMAGE,
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri": "s3://spec-models/qwen3-32b/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                        "ModelAccessConfig": {"AcceptEula": True},
                    }
                },
                "AdditionalModelDataSources": [
                    {
                        "ChannelName": "eagle_model",
                        "S3DataSource": {
                            "S3Uri": BASE_DRAFT,
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        },
                    }
                ],
            },
        },
    )
    request = FULL_REQUEST | {"ModelSource": {"SageMakerModel": {"ModelName": JOB}}}
    stubber.add_response("create_optimization_job", {"OptimizationJobArn": ARN}, request)

    response = handler.on_event(event("Create", properties), None, client=sagemaker)

    assert response == {"PhysicalResourceId": JOB, "Data": data()}


def test_a_retried_create_keeps_the_model_it_registered(sagemaker: SageMakerClient, stubber: Stubber) -> None:
    properties = props(BaseDraftS3Uri=BASE_DRAFT, SourceModelImage=IMAGE)
    expect_missing(stubber)
    stubber.add_client_error(
        "create_model",
        service_error_code="ValidationException",
        service_message=f'Cannot create already existing model "arn:aws:sagemaker:us-east-1:123456789012:model/{JOB}".',
    )
    request = FULL_REQUEST | {"ModelSource": {"SageMakerModel": {"ModelName": JOB}}}
    stubber.add_response("create_optimization_job", {"OptimizationJobArn": ARN}, request)

    assert handler.on_event(event("Create", properties), None, client=sagemaker)["Data"]["JobArn"] == ARN


def test_delete_removes_the_registered_model_too(
    sagemaker: SageMakerClient, stubber: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    properties = props(BaseDraftS3Uri=BASE_DRAFT, SourceModelImage=IMAGE)
    expect_describe(stubber, described("COMPLETED"))
    stubber.add_response("delete_model", {}, {"ModelName": JOB})

    handler.on_event(event("Delete", properties, PhysicalResourceId=JOB), None, client=sagemaker)

    assert log_lines(caplog)[-1]["outcome"] == "nothing to stop; source model deleted"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"BaseDraftS3Uri": BASE_DRAFT}, "SourceModelImage: is required with BaseDraftS3Uri"),
        ({"SourceModelImage": IMAGE}, "SourceModelImage: only applies with BaseDraftS3Uri"),
        (
            {
                "BaseDraftS3Uri": BASE_DRAFT,
                "SourceModelImage": IMAGE,
                "ModelS3Uri": None,
                "ModelAccessAcceptEula": None,
                "SageMakerModelName": "mine",
            },
            "BaseDraftS3Uri: needs ModelS3Uri",
        ),
        ({"BaseDraftS3Uri": "spec-out/draft", "SourceModelImage": IMAGE}, "BaseDraftS3Uri: must be an s3://"),
    ],
)
def test_base_draft_properties_are_checked(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(PropertyError, match=re.escape(message)):
        parse_properties(props(**changes))
