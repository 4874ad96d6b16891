"""The optimization job's lifecycle behind the custom resource: start or adopt, poll, stop."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from .events import JOB_NAME, JobProperties, Request

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient
    from mypy_boto3_sagemaker.literals import (
        ModelSpeculativeDecodingS3DataTypeType,
        OptimizationJobDeploymentInstanceTypeType,
    )
    from mypy_boto3_sagemaker.type_defs import (
        CreateOptimizationJobRequestTypeDef,
        DescribeOptimizationJobResponseTypeDef,
        ModelSpeculativeDecodingConfigTypeDef,
        OptimizationJobModelSourceS3TypeDef,
        OptimizationJobModelSourceTypeDef,
        OptimizationJobOutputConfigTypeDef,
    )

STOPPABLE = frozenset({"STARTING", "INPROGRESS"})
UNSUCCESSFUL = frozenset({"FAILED", "STOPPED"})
# The service model declares ResourceNotFound, but SageMaker answers some Describe/Stop calls
# for unknown names with a ValidationException instead: accept both.
_NOT_FOUND_MESSAGE = re.compile(r"does not exist|not found|could not find", re.IGNORECASE)


class OptimizationJobFailed(RuntimeError):
    """The job ended FAILED or STOPPED; the message carries SageMaker's FailureReason."""


class OptimizationJobMissing(RuntimeError):
    """The job this resource stands for does not exist (deleted outside CloudFormation)."""


@dataclass(frozen=True)
class Result:
    response: dict[str, Any]  # what the handler returns to the Provider framework
    job_name: str
    outcome: str  # for the log line
    status: str = ""
    error: str = ""


def on_event(client: SageMakerClient, request: Request) -> Result:
    if request.request_type == "Delete":
        return delete(client, request.physical_resource_id, request.registered_source_model)
    props = _properties(request)
    response: dict[str, Any] = {"PhysicalResourceId": props.job_name}
    if request.request_type == "Update" and request.physical_resource_id == props.job_name:
        # The name hashes every job input: same name, same job (only tags or Wait changed).
        return Result(response | {"Data": job_data(props)}, props.job_name, "unchanged")
    # A new name on Update is a replacement: CloudFormation deletes the old job afterwards.
    return start_or_adopt(client, props, response)


def start_or_adopt(client: SageMakerClient, props: JobProperties, response: dict[str, Any]) -> Result:
    # A retried Create, or a rollback to earlier inputs, finds its job already there: never start a second.
    existing = describe(client, props.job_name)
    if existing is None:
        if props.source_model_name:
            register_source_model(client, props)
        try:
            arn = client.create_optimization_job(**create_request(props))["OptimizationJobArn"]
            return Result(response | {"Data": job_data(props, arn=arn)}, props.job_name, "created")
        except ClientError as err:
            # A concurrent retry created it between our describe and create.
            if _code(err) != "ResourceInUse" or (existing := describe(client, props.job_name)) is None:
                raise
    data = description_data(props, existing)
    return Result(response | {"Data": data}, props.job_name, "adopted", status=data["Status"])


def is_complete(client: SageMakerClient, request: Request) -> Result:
    if request.request_type == "Delete":
        # Delete never waits: it asked SageMaker to stop the job and that is all it can do.
        return Result({"IsComplete": True}, request.physical_resource_id, "deleted")
    props = _properties(request)
    known = request.data  # what on_event returned
    if not props.wait and known.get("JobArn"):
        data = job_data(
            props,
            arn=known["JobArn"],
            status=known.get("Status", ""),
            image=known.get("RecommendedInferenceImage", ""),
        )
        return Result({"IsComplete": True, "Data": data}, props.job_name, "not waiting")
    # Waiting, or the ARN is unknown (same-name Update): one describe either way.
    described = describe(client, props.job_name)
    if described is None:
        raise OptimizationJobMissing(f"optimization job {props.job_name} does not exist")
    data = description_data(props, described)
    status = data["Status"]
    if not props.wait or status == "COMPLETED":
        return Result({"IsComplete": True, "Data": data}, props.job_name, "complete", status=status)
    if status in UNSUCCESSFUL:
        reason = described.get("FailureReason") or "SageMaker gave no FailureReason"
        raise OptimizationJobFailed(f"optimization job {props.job_name} {status}: {reason}")
    return Result({"IsComplete": False}, props.job_name, "waiting", status=status)


def delete(client: SageMakerClient, job_name: str, registered_source_model: bool = False) -> Result:
    response: dict[str, Any] = {"PhysicalResourceId": job_name} if job_name else {}
    if not JOB_NAME.fullmatch(job_name):
        return Result(response, job_name, "skipped: physical id is not a job name")
    try:
        outcome, status = _stop_if_running(client, job_name)
        if registered_source_model:
            outcome += _delete_source_model(client, job_name)
    except Exception as exc:  # Deliberate: a job's cleanup must never block a stack deletion.
        return Result(response, job_name, "error ignored", error=f"{type(exc).__name__}: {exc}")
    return Result(response, job_name, outcome, status=status)


EAGLE_CHANNEL = "eagle_model"  # the channel the AWS ML blog's "bring your trained EAGLE" example names


def register_source_model(client: SageMakerClient, props: JobProperties) -> None:
    """The job's source when it starts from an existing head: the target from S3 and the head as an
    additional model data source (CloudFormation's AWS::SageMaker::Model cannot declare one). A model
    of that name already there (a retried Create) is kept: its name hashes the same inputs."""
    assert props.source_model_name and props.model_s3_uri and props.base_draft_s3_uri
    target: dict[str, Any] = {
        "S3Uri": _prefix(props.model_s3_uri),
        "S3DataType": "S3Prefix",
        "CompressionType": "None",
    }
    if props.model_access_accept_eula is not None:
        target["ModelAccessConfig"] = {"AcceptEula": props.model_access_accept_eula}
    try:
        client.create_model(
            ModelName=props.source_model_name,
            ExecutionRoleArn=props.role_arn,
            PrimaryContainer={
                "Image": cast(str, props.source_model_image),
                "ModelDataSource": {"S3DataSource": cast(Any, target)},
                "AdditionalModelDataSources": [
                    {
                        "ChannelName": EAGLE_CHANNEL,
                        "S3DataSource": {
                            "S3Uri": _prefix(props.base_draft_s3_uri),
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        },
                    }
                ],
            },
        )
    except ClientError as err:
        if "already exist" not in str(err.response.get("Error", {}).get("Message", "")):
            raise


def _delete_source_model(client: SageMakerClient, job_name: str) -> str:
    try:
        client.delete_model(ModelName=job_name)
    except ClientError as err:
        if is_not_found(err):
            return ""
        raise
    return "; source model deleted"


def _prefix(uri: str) -> str:
    return uri if uri.endswith("/") else uri + "/"


def _stop_if_running(client: SageMakerClient, job_name: str) -> tuple[str, str]:
    described = describe(client, job_name)
    if described is None:
        return "already gone", ""
    status = described["OptimizationJobStatus"]
    if status not in STOPPABLE:
        return "nothing to stop", status
    try:
        client.stop_optimization_job(OptimizationJobName=job_name)
    except ClientError as err:
        if not is_not_found(err):
            raise
        return "already gone", status
    # Not waiting for STOPPED: Delete must not poll, and the draft output in S3 is kept either way.
    return "stop requested", status


def create_request(props: JobProperties) -> CreateOptimizationJobRequestTypeDef:
    speculative: ModelSpeculativeDecodingConfigTypeDef = {"Technique": "EAGLE"}
    if props.training_data_s3_uri:  # absent: SageMaker trains on its curated datasets
        speculative["TrainingDataSource"] = {
            "S3Uri": props.training_data_s3_uri,
            "S3DataType": cast("ModelSpeculativeDecodingS3DataTypeType", props.training_data_type),
        }
    output: OptimizationJobOutputConfigTypeDef = {"S3OutputLocation": props.output_s3_uri}
    if props.kms_key_id:
        output["KmsKeyId"] = props.kms_key_id
    request: CreateOptimizationJobRequestTypeDef = {
        "OptimizationJobName": props.job_name,
        "RoleArn": props.role_arn,
        "ModelSource": _model_source(props),
        # The service validates the instance type; its enum changes faster than this code.
        "DeploymentInstanceType": cast(
            "OptimizationJobDeploymentInstanceTypeType", props.deployment_instance_type
        ),
        "OptimizationConfigs": [{"ModelSpeculativeDecodingConfig": speculative}],
        "OutputConfig": output,
        "StoppingCondition": {"MaxRuntimeInSeconds": props.max_runtime_in_seconds},
    }
    if props.vpc_subnets:
        request["VpcConfig"] = {
            "SecurityGroupIds": list(props.vpc_security_group_ids),
            "Subnets": list(props.vpc_subnets),
        }
    if props.tags:
        request["Tags"] = [{"Key": tag.key, "Value": tag.value} for tag in props.tags]
    return request


def _model_source(props: JobProperties) -> OptimizationJobModelSourceTypeDef:
    model_name = props.source_model_name or props.sagemaker_model_name
    if model_name:
        return {"SageMakerModel": {"ModelName": model_name}}
    s3: OptimizationJobModelSourceS3TypeDef = {"S3Uri": cast(str, props.model_s3_uri)}
    if props.model_access_accept_eula is not None:
        s3["ModelAccessConfig"] = {"AcceptEula": props.model_access_accept_eula}
    return {"S3": s3}


def describe(client: SageMakerClient, job_name: str) -> DescribeOptimizationJobResponseTypeDef | None:
    """The job's description, or None when no job has that name."""
    try:
        return client.describe_optimization_job(OptimizationJobName=job_name)
    except ClientError as err:
        if is_not_found(err):
            return None
        raise


def is_not_found(err: ClientError) -> bool:
    code = _code(err)
    message = str(err.response.get("Error", {}).get("Message", ""))
    return code == "ResourceNotFound" or (
        code == "ValidationException" and bool(_NOT_FOUND_MESSAGE.search(message))
    )


def job_data(props: JobProperties, *, arn: str = "", status: str = "", image: str = "") -> dict[str, str]:
    """The resource's attributes; what no describe has told us yet stays an empty string."""
    return {
        "JobName": props.job_name,
        "JobArn": arn,
        "Status": status,
        "DraftS3Uri": props.draft_s3_uri,
        "RecommendedInferenceImage": image,
    }


def description_data(
    props: JobProperties, described: DescribeOptimizationJobResponseTypeDef
) -> dict[str, str]:
    output = described.get("OptimizationOutput", {})
    return job_data(
        props,
        arn=described["OptimizationJobArn"],
        status=described["OptimizationJobStatus"],
        image=output.get("RecommendedInferenceImage", ""),
    )


def _properties(request: Request) -> JobProperties:
    if request.properties is None:  # parse_request always sets them for Create and Update
        raise ValueError(f"{request.request_type} request without ResourceProperties")
    return request.properties


def _code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))
