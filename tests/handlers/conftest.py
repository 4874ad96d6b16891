"""Handler tests never build a real AWS client: each test passes a Stubber-backed one."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from botocore.stub import Stubber
from mypy_boto3_sagemaker import SageMakerClient

from speculative_infra_lambda.optimization_job import handler


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
