"""S3 URIs: parsing with clear errors, and the ARNs a role needs to read under one."""

from __future__ import annotations

import re
from dataclasses import dataclass

_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class S3Location:
    bucket: str
    key: str  # may be "" (the whole bucket)

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def bucket_arn(self, partition: str) -> str:
        """The bucket's ARN in a partition (constructs pass Aws.PARTITION: this module knows no CDK)."""
        return f"arn:{partition}:s3:::{self.bucket}"

    def key_prefix_pattern(self) -> str:
        return f"{self.key}*" if self.key else "*"

    def object_arn_pattern(self, partition: str) -> str:
        return f"{self.bucket_arn(partition)}/{self.key_prefix_pattern()}"


def parse_s3_uri(uri: str, field: str) -> S3Location:
    """'s3://bucket/prefix/' -> S3Location. Raises ValueError naming the field, the value and the form."""
    match = re.match(r"^s3://([^/]+)/?(.*)$", uri or "")
    if match is None or not _BUCKET.match(match.group(1)) or ".." in match.group(1):
        raise ValueError(
            f"{field}: {uri!r} is not an S3 URI; expected s3://<bucket>/<key or prefix> with a valid bucket name"
        )
    return S3Location(bucket=match.group(1), key=match.group(2))
