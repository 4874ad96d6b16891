"""The run's files in S3: one folder per execution (config, items, worker outputs, records, results)."""

from __future__ import annotations

import json
from typing import Any

from speculative_infra.safe_files import parse_json

MAX_OBJECT_BYTES = 256 * 1024 * 1024
"""A worker's records for one wave are a few MiB; nothing this run writes comes near 256 MiB."""


def config_key(run_prefix: str) -> str:
    return f"{run_prefix}config.json"


def items_key(run_prefix: str) -> str:
    return f"{run_prefix}items.json"


def output_key(run_prefix: str, wave: int, worker: int) -> str:
    return f"{run_prefix}workers/wave-{wave:05d}/worker-{worker:04d}.json"


def records_key(run_prefix: str, wave: int, worker: int) -> str:
    return f"{run_prefix}workers/wave-{wave:05d}/worker-{worker:04d}.requests.jsonl"


def put_bytes(s3: Any, bucket: str, key: str, body: bytes, content_type: str) -> None:
    s3.put_object(Bucket=bucket, Key=key, Body=body, ContentType=content_type)


def put_json(s3: Any, bucket: str, key: str, document: Any) -> None:
    put_bytes(s3, bucket, key, json.dumps(document, separators=(",", ":")).encode(), "application/json")


def put_jsonl(s3: Any, bucket: str, key: str, lines: list[dict[str, Any]]) -> None:
    body = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
    put_bytes(s3, bucket, key, body.encode(), "application/x-ndjson")


def get_text(s3: Any, bucket: str, key: str) -> str | None:
    """The object's text, or None when it does not exist."""
    try:
        response = s3.get_object(Bucket=bucket, Key=key)
    except s3.exceptions.NoSuchKey:
        return None
    if int(response.get("ContentLength") or 0) > MAX_OBJECT_BYTES:
        raise ValueError(f"s3://{bucket}/{key} is larger than {MAX_OBJECT_BYTES} bytes")
    body: bytes = response["Body"].read(MAX_OBJECT_BYTES + 1)
    return body.decode("utf-8")


def get_json(s3: Any, bucket: str, key: str) -> Any:
    text = get_text(s3, bucket, key)
    return None if text is None else parse_json(text, source=f"s3://{bucket}/{key}")


def get_jsonl(s3: Any, bucket: str, key: str) -> list[dict[str, Any]]:
    text = get_text(s3, bucket, key)
    if text is None:
        return []
    return [parse_json(line, source=f"s3://{bucket}/{key}") for line in text.splitlines() if line.strip()]
