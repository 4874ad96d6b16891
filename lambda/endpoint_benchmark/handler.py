"""Lambda entry points of the EndpointBenchmark custom resource (thin: parse, call runner, log)."""

from __future__ import annotations

import json
from typing import Any

from .events import parse_event
from .runner import start, step

# Seconds kept back from the invocation's remaining time to store the state and results.
SAFETY_MARGIN_S = 60.0


def _s3() -> Any:
    import boto3

    return boto3.client("s3")


def on_event(event: dict[str, Any], context: Any, s3: Any = None) -> dict[str, Any]:
    parsed = parse_event(event)
    if parsed.request_type == "Delete":
        # Results stay in S3; nothing to undo. Delete never fails a stack.
        return {"PhysicalResourceId": parsed.physical_resource_id or "none"}
    response = start(parsed, s3 or _s3())
    print(json.dumps({"handler": "on_event", "request": parsed.request_type, **response}))
    return response


def is_complete(event: dict[str, Any], context: Any, s3: Any = None, transport: Any = None) -> dict[str, Any]:
    parsed = parse_event(event)
    remaining = context.get_remaining_time_in_millis() / 1000.0 if context is not None else 840.0
    response = step(
        parsed, s3 or _s3(), seconds_available=max(1.0, remaining - SAFETY_MARGIN_S), transport=transport
    )
    print(
        json.dumps(
            {"handler": "is_complete", "request": parsed.request_type, "complete": response["IsComplete"]}
        )
    )
    return response
