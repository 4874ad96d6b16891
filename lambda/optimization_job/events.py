"""Parse the CloudFormation custom-resource event into frozen dataclasses (standard library only).

CloudFormation passes every scalar property as a string, so booleans and integers are parsed here;
a property that is missing, malformed or unknown raises PropertyError naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

RequestType = Literal["Create", "Update", "Delete"]
REQUEST_TYPES: tuple[RequestType, ...] = ("Create", "Update", "Delete")
TRAINING_DATA_TYPES = ("S3Prefix", "ManifestFile")

# SageMaker's EntityName pattern (service model), also used to decide whether a physical id is a job.
JOB_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}")
ROLE_ARN = re.compile(r"arn:aws[a-z\-]*:iam::\d{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+")
S3_URI = re.compile(r"s3://[^/]+(/.*)?")

# The Provider framework adds ServiceToken; every other key must be one we know, so a typo in the
# construct (e.g. "TrainingDataS3URI", silently meaning "curated datasets") fails loudly.
KNOWN_PROPERTIES = frozenset(
    {
        "ServiceToken",
        "JobName",
        "RoleArn",
        "ModelS3Uri",
        "SageMakerModelName",
        "ModelAccessAcceptEula",
        "DeploymentInstanceType",
        "TrainingDataS3Uri",
        "TrainingDataType",
        "OutputS3Uri",
        "KmsKeyId",
        "MaxRuntimeInSeconds",
        "Wait",
        "VpcSecurityGroupIds",
        "VpcSubnets",
        "Tags",
        "BaseDraftS3Uri",
        "SourceModelImage",
    }
)

# Data keys of every successful Create/Update (the construct's GetAtt names): always all present.
DATA_KEYS = ("JobName", "JobArn", "Status", "DraftS3Uri", "RecommendedInferenceImage")


class EventError(ValueError):
    """The event itself (not a property) is malformed."""


class PropertyError(ValueError):
    """A ResourceProperty is missing, malformed or unknown; the message names it."""

    def __init__(self, name: str, problem: str, value: object = None) -> None:
        shown = "" if value is None else f" (got {_short(value)})"
        super().__init__(f"ResourceProperties.{name}: {problem}{shown}")
        self.property_name = name


@dataclass(frozen=True)
class Tag:
    key: str
    value: str


@dataclass(frozen=True)
class JobProperties:
    job_name: str
    role_arn: str
    model_s3_uri: str | None
    sagemaker_model_name: str | None
    model_access_accept_eula: bool | None
    deployment_instance_type: str
    training_data_s3_uri: str | None
    training_data_type: str
    output_s3_uri: str
    kms_key_id: str | None
    max_runtime_in_seconds: int
    wait: bool
    vpc_security_group_ids: tuple[str, ...]
    vpc_subnets: tuple[str, ...]
    tags: tuple[Tag, ...]
    # Training from an existing EAGLE head: the handler registers a SageMaker model carrying the target
    # (ModelS3Uri) and the head (channel "eagle_model"), named as the job, and optimizes that model.
    base_draft_s3_uri: str | None = None
    source_model_image: str | None = None

    @property
    def source_model_name(self) -> str | None:
        """The model the handler creates for a base draft (None: the job's source is given directly)."""
        return self.job_name if self.base_draft_s3_uri else None

    @property
    def draft_s3_uri(self) -> str:
        """Where the job writes the draft weights."""
        return self.output_s3_uri.rstrip("/") + "/draft/"


@dataclass(frozen=True)
class Request:
    """One Provider-framework invocation; properties is None for Delete (which must never fail)."""

    request_type: RequestType
    physical_resource_id: str
    properties: JobProperties | None
    data: Mapping[str, str]  # what on_event returned, as the framework passes it to is_complete
    # Delete: whether the resource registered a source model (read without parsing the properties).
    registered_source_model: bool = False


def parse_request(event: Mapping[str, Any]) -> Request:
    request_type = event.get("RequestType")
    if request_type not in REQUEST_TYPES:
        raise EventError(
            f"RequestType must be one of {', '.join(REQUEST_TYPES)} (got {_short(request_type)})"
        )
    physical_id = event.get("PhysicalResourceId")
    data = event.get("Data")
    return Request(
        request_type=cast(RequestType, request_type),
        physical_resource_id=physical_id if isinstance(physical_id, str) else "",
        # Delete only needs the physical id; parsing properties there could only block a deletion.
        properties=None if request_type == "Delete" else parse_properties(event.get("ResourceProperties")),
        data={k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, Mapping) else {},
        registered_source_model=_mentions(event.get("ResourceProperties"), "BaseDraftS3Uri"),
    )


def _mentions(raw: object, name: str) -> bool:
    return isinstance(raw, Mapping) and isinstance(raw.get(name), str) and bool(raw.get(name))


def parse_properties(raw: object) -> JobProperties:
    if not isinstance(raw, Mapping):
        raise EventError(f"ResourceProperties must be an object (got {_short(raw)})")
    unknown = sorted(str(k) for k in raw if k not in KNOWN_PROPERTIES)
    if unknown:
        others = f" (nor are {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
        raise PropertyError(unknown[0], f"is not a known property{others}")
    model_s3_uri, model_name = _model_source(raw)
    security_groups = _string_list(raw, "VpcSecurityGroupIds")
    subnets = _string_list(raw, "VpcSubnets")
    if bool(security_groups) != bool(subnets):
        missing = "VpcSubnets" if security_groups else "VpcSecurityGroupIds"
        raise PropertyError(missing, "required when the other VPC property is given")
    return JobProperties(
        job_name=_matching(raw, "JobName", JOB_NAME, "must match [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}"),
        role_arn=_matching(raw, "RoleArn", ROLE_ARN, "must be an IAM role ARN"),
        model_s3_uri=model_s3_uri,
        sagemaker_model_name=model_name,
        model_access_accept_eula=_eula(raw, model_s3_uri),
        deployment_instance_type=_instance_type(raw),
        training_data_s3_uri=_optional_s3_uri(raw, "TrainingDataS3Uri"),
        training_data_type=_training_data_type(raw),
        output_s3_uri=_matching(raw, "OutputS3Uri", S3_URI, "must be an s3://bucket/prefix URI"),
        kms_key_id=_optional_string(raw, "KmsKeyId"),
        max_runtime_in_seconds=_positive_int(raw, "MaxRuntimeInSeconds"),
        wait=_boolean(raw, "Wait"),
        vpc_security_group_ids=security_groups,
        vpc_subnets=subnets,
        tags=_tags(raw),
        **_base_draft(raw, model_s3_uri),
    )


def _base_draft(raw: Mapping[str, Any], model_s3_uri: str | None) -> dict[str, str | None]:
    base = _optional_s3_uri(raw, "BaseDraftS3Uri")
    image = _optional_string(raw, "SourceModelImage")
    if base is None:
        if image is not None:
            raise PropertyError("SourceModelImage", "only applies with BaseDraftS3Uri")
        return {}
    if model_s3_uri is None:
        # The head travels in a model the handler registers, whose weights must come from S3.
        raise PropertyError("BaseDraftS3Uri", "needs ModelS3Uri (the target's weights in S3)")
    if image is None:
        raise PropertyError("SourceModelImage", "is required with BaseDraftS3Uri")
    return {"base_draft_s3_uri": base, "source_model_image": image}


def _model_source(raw: Mapping[str, Any]) -> tuple[str | None, str | None]:
    s3_uri = _optional_s3_uri(raw, "ModelS3Uri")
    model_name = _optional_string(raw, "SageMakerModelName")
    if (s3_uri is None) == (model_name is None):
        problem = "both given" if s3_uri else "neither given"
        raise PropertyError(
            "ModelS3Uri", f"exactly one of ModelS3Uri and SageMakerModelName is required, {problem}"
        )
    return s3_uri, model_name


def _eula(raw: Mapping[str, Any], model_s3_uri: str | None) -> bool | None:
    if raw.get("ModelAccessAcceptEula") in (None, ""):
        return None
    if model_s3_uri is None:
        raise PropertyError("ModelAccessAcceptEula", "only applies with ModelS3Uri")
    return _boolean(raw, "ModelAccessAcceptEula")


def _instance_type(raw: Mapping[str, Any]) -> str:
    value = _required_string(raw, "DeploymentInstanceType")
    if not value.startswith("ml."):
        raise PropertyError(
            "DeploymentInstanceType", "must be a SageMaker instance type like ml.g6e.2xlarge", value
        )
    return value


def _training_data_type(raw: Mapping[str, Any]) -> str:
    value = _optional_string(raw, "TrainingDataType") or "S3Prefix"
    if value not in TRAINING_DATA_TYPES:
        raise PropertyError("TrainingDataType", f"must be one of {', '.join(TRAINING_DATA_TYPES)}", value)
    return value


def _optional_s3_uri(raw: Mapping[str, Any], name: str) -> str | None:
    value = _optional_string(raw, name)
    if value is not None and not S3_URI.fullmatch(value):
        raise PropertyError(name, "must be an s3://bucket/prefix URI", value)
    return value


def _matching(raw: Mapping[str, Any], name: str, pattern: re.Pattern[str], problem: str) -> str:
    value = _required_string(raw, name)
    if not pattern.fullmatch(value):
        raise PropertyError(name, problem, value)
    return value


def _required_string(raw: Mapping[str, Any], name: str) -> str:
    value = _optional_string(raw, name)
    if value is None:
        raise PropertyError(name, "is required")
    return value


def _optional_string(raw: Mapping[str, Any], name: str) -> str | None:
    value = raw.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise PropertyError(name, "must be a string", value)
    return value


def _boolean(raw: Mapping[str, Any], name: str) -> bool:
    value = raw.get(name)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise PropertyError(name, 'must be "true" or "false"', value)


def _positive_int(raw: Mapping[str, Any], name: str) -> int:
    value = raw.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if isinstance(value, str) and value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    raise PropertyError(name, "must be a positive integer", value)


def _string_list(raw: Mapping[str, Any], name: str) -> tuple[str, ...]:
    value = raw.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise PropertyError(name, "must be a list of non-empty strings", value)
    return tuple(value)


def _tags(raw: Mapping[str, Any]) -> tuple[Tag, ...]:
    value = raw.get("Tags")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise PropertyError("Tags", "must be a list of {Key, Value}", value)
    tags = []
    for index, item in enumerate(value):
        ok = isinstance(item, Mapping) and set(item) == {"Key", "Value"}
        if (
            not ok
            or not isinstance(item["Key"], str)
            or not item["Key"]
            or not isinstance(item["Value"], str)
        ):
            raise PropertyError(f"Tags[{index}]", "must be {Key: non-empty string, Value: string}", item)
        tags.append(Tag(key=item["Key"], value=item["Value"]))
    return tuple(tags)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
