"""Credentials that rotate within a day (assumed roles, SSO, instance profiles): the kept signing key
must follow the secret, or every request after the refresh is refused with 403."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import botocore.session
import pytest
from botocore.credentials import Credentials, RefreshableCredentials

from speculative_infra.benchmark.clock import MonotonicClock
from speculative_infra.benchmark.config import SageMakerTarget, WorkloadConfig
from speculative_infra.benchmark.transports.base import WireRequest
from speculative_infra.benchmark.transports.sagemaker_async import AsyncSageMakerTransport
from speculative_infra.benchmark.transports.sigv4 import SigV4Signer

from .test_sigv4 import _botocore

HOST = "runtime.sagemaker.eu-west-1.amazonaws.com"
PATH = "/endpoints/e/invocations-response-stream"
HEADERS = {"Content-Type": "application/json", "X-Amzn-SageMaker-Inference-Id": "r1"}
NOON = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def _signature(headers: dict[str, str]) -> str:
    return headers["Authorization"].rsplit("Signature=", 1)[1]


def test_a_new_secret_on_the_same_day_signs_with_a_new_key() -> None:
    signer = SigV4Signer("eu-west-1", "sagemaker")
    before = Credentials("ASIAOLD", "old-secret", "token-1")
    after = Credentials("ASIAOLD", "new-secret", "token-2")  # same key id: only the secret changed
    first = signer.sign(before, HOST, PATH, b"{}", HEADERS, NOON)
    later = NOON + timedelta(minutes=30)
    second = signer.sign(after, HOST, PATH, b"{}", HEADERS, later)
    assert first == _botocore(before, f"https://{HOST}{PATH}", b"{}", HEADERS, NOON)
    assert second == _botocore(after, f"https://{HOST}{PATH}", b"{}", HEADERS, later)
    # Back and forth within the day: each secret signs as itself, whichever was kept last.
    old_again = signer.sign(before, HOST, PATH, b"{}", HEADERS, later)
    assert old_again == _botocore(before, f"https://{HOST}{PATH}", b"{}", HEADERS, later)
    assert _signature(old_again) != _signature(second)
    assert signer.sign(after, HOST, PATH, b"{}", HEADERS, later) == second


class _Rotation:
    """Temporary credentials that expire every hour; each refresh hands out the next secret."""

    def __init__(self) -> None:
        self.now = NOON
        self.issued = 0

    def clock(self) -> datetime:
        return self.now

    def refresh(self) -> dict[str, str]:
        self.issued += 1
        return {
            "access_key": f"ASIA{self.issued}",
            "secret_key": f"secret-{self.issued}",
            "token": f"token-{self.issued}",
            "expiry_time": (self.now + timedelta(hours=1)).isoformat(),
        }

    def credentials(self) -> RefreshableCredentials:
        first = self.refresh()
        return RefreshableCredentials(
            first["access_key"],
            first["secret_key"],
            first["token"],
            self.now + timedelta(hours=1),
            self.refresh,
            "assume-role",
            time_fetcher=self.clock,
        )


@pytest.mark.usefixtures("aws_env")
def test_the_transport_signs_with_the_refreshed_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    rotation = _Rotation()
    refreshable = rotation.credentials()
    session = botocore.session.get_session()
    monkeypatch.setattr(session, "get_credentials", lambda: refreshable)
    target = SageMakerTarget(
        endpoint_name="e", region="eu-west-1", endpoint_url=f"https://{HOST}", client="asyncio"
    )
    transport = AsyncSageMakerTransport(
        target, WorkloadConfig(), timeout_s=10, clock=MonotonicClock(), session=session
    )
    asyncio.run(transport.start(1))
    request = WireRequest("r1", b'{"prompt": "hi"}')

    def signed() -> tuple[Credentials, dict[str, str]]:
        credentials = transport._credentials()
        assert credentials is not None
        return credentials, transport.signed_headers(request, credentials)

    seen = []
    for _ in range(3):
        credentials, headers = signed()
        assert credentials.secret_key == f"secret-{rotation.issued}"
        assert headers["X-Amz-Security-Token"] == f"token-{rotation.issued}"
        # What botocore's own signer makes of the same request at the same instant, with this secret.
        now = datetime.strptime(headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        expected = _botocore(
            credentials, f"https://{HOST}{PATH}", request.body, transport_headers(headers), now
        )
        assert headers == expected
        seen.append(_signature(headers))
        rotation.now += timedelta(minutes=55)  # inside the refresh window: the next call renews
    assert rotation.issued == 3 and len(set(seen)) == 3


def transport_headers(signed: dict[str, str]) -> dict[str, str]:
    """The headers the transport sent to the signer (before the date, token and signature)."""
    return {
        k: v for k, v in signed.items() if k not in ("X-Amz-Date", "X-Amz-Security-Token", "Authorization")
    }
