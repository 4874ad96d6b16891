"""Handler tests never build a real AWS client: each test passes a Stubber-backed one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from mypy_boto3_sagemaker import SageMakerClient

from speculative_infra_lambda.optimization_job import handler
from tests.benchmark.conftest import SCENARIOS
from tests.benchmark.stand_ins.server import ServerProcess


@pytest.fixture(autouse=True)
def no_default_client(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> SageMakerClient:
        raise AssertionError("a handler test reached the default (real) SageMaker client")

    monkeypatch.setattr(handler, "_default_client", refuse)


@pytest.fixture
def sagemaker() -> SageMakerClient:
    """A real client (so the Stubber validates against SageMaker's service model); never reaches AWS."""
    return boto3.client(
        "sagemaker", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def stubber(sagemaker: SageMakerClient) -> Iterator[Stubber]:
    """Any call without a queued response fails the test, so "no call" is asserted by queuing none."""
    with Stubber(sagemaker) as stub:
        yield stub
        stub.assert_no_pending_responses()


@pytest.fixture(scope="module")
def runtime() -> Iterator[ServerProcess]:
    """The engine's stand-in server (its known timings), for handlers that run the benchmark engine."""
    with ServerProcess(SCENARIOS) as server:
        yield server


@pytest.fixture
def bucket_client(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Any]:
    """An S3 client on the moto server, with ``bucket`` created (dummy credentials, never AWS)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")

    def make(bucket: str) -> Any:
        client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
        if bucket not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
            client.create_bucket(Bucket=bucket)
        return client

    return make
