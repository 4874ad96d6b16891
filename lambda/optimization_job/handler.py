"""Lambda entry points for the CDK Provider framework: optimization_job.handler.on_event / .is_complete.

An exception from either makes the framework report FAILED to CloudFormation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from . import job
from .events import Request, parse_request

if TYPE_CHECKING:
    from mypy_boto3_sagemaker import SageMakerClient

logger = logging.getLogger(__name__)
logger.setLevel(logging.INFO)  # Lambda's root logger defaults to WARNING


@cache  # one client per warm Lambda container, created on first use rather than at import
def _default_client() -> SageMakerClient:
    return boto3.client("sagemaker", config=Config(retries={"mode": "standard", "max_attempts": 8}))


def on_event(
    event: Mapping[str, Any], context: object, *, client: SageMakerClient | None = None
) -> dict[str, Any]:
    return _run("on_event", event, client, job.on_event)


def is_complete(
    event: Mapping[str, Any], context: object, *, client: SageMakerClient | None = None
) -> dict[str, Any]:
    return _run("is_complete", event, client, job.is_complete)


def _run(
    name: str,
    event: Mapping[str, Any],
    client: SageMakerClient | None,
    step: Callable[[SageMakerClient, Request], job.Result],
) -> dict[str, Any]:
    line: dict[str, str] = {"handler": name, "RequestType": str(event.get("RequestType"))}
    try:
        request = parse_request(event)
        result = step(client or _default_client(), request)
    except Exception as exc:
        properties = event.get("ResourceProperties")
        line["JobName"] = str(properties.get("JobName", "")) if isinstance(properties, Mapping) else ""
        logger.error(json.dumps(line | {"outcome": "failed", "error": f"{type(exc).__name__}: {exc}"}))
        raise
    line |= {"JobName": result.job_name, "outcome": result.outcome, "status": result.status}
    level = logging.WARNING if result.error else logging.INFO
    logger.log(level, json.dumps(line | ({"error": result.error} if result.error else {})))
    return result.response
