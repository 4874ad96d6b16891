"""Lambda entry point: build a training dataset from the captured traffic of a time window.

Event (from the retraining state machine, or by hand):

    {"capture_s3_uri": "s3://bucket/datacapture/endpoint/AllTraffic/", "since": "2026-11-01T00:00:00Z",
     "until": "2026-12-01T00:00:00Z", "output_s3_uri": "s3://bucket/datasets/cycle-7/",
     "min_conversations": 200, "max_chars": 32000}

It reads every capture object under the prefix whose last modification falls in [since, until), keeps
one conversation per distinct request, and writes ``data/dataset.jsonl`` (ShareGPT) and
``manifest.json`` under ``output_s3_uri`` with S3-managed encryption. The dataset's folder holds the
dataset only: the optimization job and the evaluation read every object under it. Below
``min_conversations`` it writes only the manifest and answers ``{"skip": true}``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from .build import DatasetBuild

DATASET, MANIFEST = "data/dataset.jsonl", "manifest.json"


class DatasetInputError(ValueError):
    """The event is not a dataset request; the message names the field."""


def _s3() -> Any:
    import boto3

    return boto3.client("s3")


def _split(uri: Any, field: str) -> tuple[str, str]:
    if not isinstance(uri, str) or not uri.startswith("s3://") or "/" not in uri[5:]:
        raise DatasetInputError(f"{field}: expected s3://bucket/prefix/, got {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


def _time(value: Any, field: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise DatasetInputError(f"{field}: expected an ISO 8601 time, got {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def build_dataset(event: dict[str, Any], s3: Any) -> dict[str, Any]:
    bucket, prefix = _split(event.get("capture_s3_uri"), "capture_s3_uri")
    out_bucket, out_prefix = _split(event.get("output_s3_uri"), "output_s3_uri")
    out_prefix = out_prefix if out_prefix.endswith("/") else out_prefix + "/"
    since, until = _time(event.get("since"), "since"), _time(event.get("until"), "until")
    if until <= since:
        raise DatasetInputError(f"until ({until.isoformat()}) must be after since ({since.isoformat()})")
    try:
        minimum = int(event.get("min_conversations", 100))
        max_chars = int(event.get("max_chars", 32000))
    except (TypeError, ValueError):
        raise DatasetInputError("min_conversations and max_chars must be integers") from None
    build = DatasetBuild(max_chars=max_chars)
    sources = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            if not since <= obj["LastModified"] < until:
                continue
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"]
            build.add_lines(line.decode("utf-8", errors="replace") for line in body.iter_lines())
            sources.append(f"s3://{bucket}/{obj['Key']}")
    skip = len(build.conversations) < minimum
    dataset_uri = None if skip else f"s3://{out_bucket}/{out_prefix}{DATASET}"
    if not skip:
        s3.put_object(
            Bucket=out_bucket,
            Key=out_prefix + DATASET,
            Body=build.sharegpt_lines().encode("utf-8"),
            ContentType="application/x-ndjson",
            ServerSideEncryption="AES256",
        )
    manifest = build.manifest(sources, dataset_uri)
    s3.put_object(
        Bucket=out_bucket,
        Key=out_prefix + MANIFEST,
        Body=json.dumps(manifest, indent=2).encode("utf-8"),
        ContentType="application/json",
        ServerSideEncryption="AES256",
    )
    return {
        "skip": skip,
        "conversations": manifest["conversations"],
        "dataset_s3_uri": f"s3://{out_bucket}/{out_prefix}data/" if not skip else None,
        "manifest_s3_uri": f"s3://{out_bucket}/{out_prefix}{MANIFEST}",
    }


def handler(event: dict[str, Any], context: Any, s3: Any = None) -> dict[str, Any]:
    result = build_dataset(event, s3 or _s3())
    print(json.dumps({"handler": "retraining_dataset", **result}))
    return result
