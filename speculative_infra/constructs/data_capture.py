"""Endpoint data capture: requests (and answers) written to S3 under KMS, for replay and EAGLE retraining.

SageMaker writes one JSON line per captured request under
``<destination>/<endpoint>/<variant>/<yyyy>/<mm>/<dd>/<hh>/`` with the model's execution role.
Payloads of the content types in ``json_content_types`` are kept as JSON text; any other is base64.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from aws_cdk import Aws, Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.prop_checks import (
    KEY,
    require_int,
    require_jsii,
    require_sequence,
    require_str,
)
from speculative_infra.s3_uri import S3Location, parse_s3_uri

DEFAULT_RETENTION_DAYS = 30
MAX_RETENTION_DAYS = 3650


@dataclass(frozen=True)
class DataCaptureOptions:
    """Capture a share of an endpoint's traffic.

    :param sampling_percentage: share of requests captured, 0-100. Default: 20.
    :param capture: "input" (requests), "output" (answers) or "both". Default: "both".
    :param destination_s3_uri: where to write (``s3://bucket/prefix/``). Default: a bucket is created
        (KMS-encrypted, TLS only, no public access, objects expire after ``retention_days``).
    :param kms_key: key SageMaker encrypts the captured files with. Default: a key is created (rotation on).
    :param json_content_types: content types captured as JSON text rather than base64. Default:
        application/json (vLLM's requests) and text/event-stream (its streamed answers).
    :param retention_days: lifetime of captured objects in the created bucket (1-3650); only without
        ``destination_s3_uri`` (a given bucket keeps its own lifecycle). Default: 30.
    """

    sampling_percentage: int = 20
    capture: Literal["input", "output", "both"] = "both"
    destination_s3_uri: str | None = None
    kms_key: kms.IKey | None = None
    json_content_types: Sequence[str] = field(default=("application/json", "text/event-stream"))
    retention_days: int | None = None  # None: DEFAULT_RETENTION_DAYS for a created bucket

    def __post_init__(self) -> None:
        where = "DataCaptureOptions"
        # SageMaker API reference: DataCaptureConfig.InitialSamplingPercentage, an integer 0-100;
        # CaptureContentTypeHeader.JsonContentTypes, 1-10 strings of at most 256 characters.
        require_int(self.sampling_percentage, "sampling_percentage", where)
        require_str(self.capture, "capture", where, optional=False)
        require_str(self.destination_s3_uri, "destination_s3_uri", where)
        require_jsii(self.kms_key, KEY, "kms_key", where)
        require_sequence(
            self.json_content_types,
            "json_content_types",
            where,
            lambda item, name: require_str(item, name, where, optional=False, non_empty=True),
            optional=False,
        )
        require_int(self.retention_days, "retention_days", where, optional=True)
        if self.retention_days is not None and self.destination_s3_uri is not None:
            raise ValueError(
                f"{where}: retention_days ({self.retention_days}) applies to the bucket created without "
                "destination_s3_uri; a given destination keeps its bucket's own lifecycle, so it would be ignored"
            )
        problems = []
        if not 0 <= self.sampling_percentage <= 100:
            problems.append(f"sampling_percentage is {self.sampling_percentage}; allowed: 0 to 100")
        if self.capture not in ("input", "output", "both"):
            problems.append(f"capture is {self.capture!r}; allowed: input, output, both")
        if self.retention_days is not None and not 1 <= self.retention_days <= MAX_RETENTION_DAYS:
            problems.append(f"retention_days is {self.retention_days}; allowed: 1 to {MAX_RETENTION_DAYS}")
        long_types = [t for t in self.json_content_types if len(t) > 256]
        if long_types:
            problems.append(f"json_content_types {long_types[0][:40]!r}... is longer than 256 characters")
        if not 1 <= len(self.json_content_types) <= 10:  # botocore: JsonContentTypes, 1-10 items
            problems.append(f"json_content_types has {len(self.json_content_types)} items; allowed: 1 to 10")
        if problems:
            raise ValueError("DataCaptureOptions: " + "; ".join(problems))
        if self.destination_s3_uri is not None:
            parse_s3_uri(self.destination_s3_uri, "data_capture.destination_s3_uri")


@dataclass(frozen=True)
class CaptureDestination:
    location: S3Location
    kms_key: kms.IKey
    bucket: s3.IBucket | None  # the bucket created for it, if any


def capture_destination(scope: Construct, options: DataCaptureOptions) -> CaptureDestination:
    """The bucket/prefix and key captured data goes to, created where not given."""
    key = options.kms_key or kms.Key(
        scope, "CaptureKey", enable_key_rotation=True, description="speculative-infra endpoint data capture"
    )
    if options.destination_s3_uri is not None:
        return CaptureDestination(
            parse_s3_uri(options.destination_s3_uri, "data_capture.destination_s3_uri"), key, None
        )
    bucket = s3.Bucket(
        scope,
        "CaptureBucket",
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,
        enforce_ssl=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        removal_policy=RemovalPolicy.RETAIN,
        lifecycle_rules=[
            s3.LifecycleRule(expiration=Duration.days(options.retention_days or DEFAULT_RETENTION_DAYS))
        ],
    )
    acknowledge(
        bucket,
        "S1",
        "Holds only captured endpoint traffic written by SageMaker; access is limited to the endpoint's "
        "execution role and what the owner grants.",
    )
    return CaptureDestination(S3Location(bucket=bucket.bucket_name, key="datacapture/"), key, bucket)


def data_capture_config(
    options: DataCaptureOptions, destination: CaptureDestination
) -> sagemaker.CfnEndpointConfig.DataCaptureConfigProperty:
    modes = {"input": ["Input"], "output": ["Output"], "both": ["Input", "Output"]}[options.capture]
    return sagemaker.CfnEndpointConfig.DataCaptureConfigProperty(
        enable_capture=True,
        initial_sampling_percentage=options.sampling_percentage,
        destination_s3_uri=destination.location.uri,
        kms_key_id=destination.kms_key.key_arn,
        capture_options=[sagemaker.CfnEndpointConfig.CaptureOptionProperty(capture_mode=m) for m in modes],
        capture_content_type_header=sagemaker.CfnEndpointConfig.CaptureContentTypeHeaderProperty(
            json_content_types=list(options.json_content_types)
        ),
    )


def grant_capture(role: iam.IRole, destination: CaptureDestination) -> None:
    """SageMaker writes the captured files with the model's execution role: objects under the prefix, the key."""
    objects = destination.location.object_arn_pattern(Aws.PARTITION)
    role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=[objects]))
    role.add_to_principal_policy(
        iam.PolicyStatement(
            actions=["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt"],
            resources=[destination.kms_key.key_arn],
        )
    )
    acknowledge(
        role, "IAM5", "Captured traffic of this endpoint, under its capture prefix only.", resource=objects
    )
