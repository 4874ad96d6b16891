"""Run state and results in S3 (the sweep outlives one Lambda invocation)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse


def run_location(physical_id: str) -> tuple[str, str]:
    """'s3://bucket/prefix/run/' -> ('bucket', 'prefix/run/')."""
    parsed = urlparse(physical_id)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"PhysicalResourceId {physical_id!r} is not the s3:// location of a benchmark run")
    return parsed.netloc, parsed.path.lstrip("/")


def put_text(s3: Any, bucket: str, key: str, text: str, content_type: str = "text/plain") -> None:
    s3.put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"), ContentType=content_type)


def put_json(s3: Any, bucket: str, key: str, document: Any) -> None:
    put_text(s3, bucket, key, json.dumps(document, indent=1) + "\n", "application/json")


def get_json(s3: Any, bucket: str, key: str) -> Any:
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    return json.loads(body)
