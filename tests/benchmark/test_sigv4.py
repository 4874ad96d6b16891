"""The SigV4 signer against botocore's, byte for byte, for the requests the SageMaker client sends."""

from __future__ import annotations

from datetime import UTC, datetime

import botocore.auth
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import given, settings
from hypothesis import strategies as st

from speculative_infra.benchmark.transports.sigv4 import SigV4Signer

HEADER_VALUES = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40).filter(
    lambda v: v.strip()
)


def _botocore(
    credentials: Credentials, url: str, body: bytes, headers: dict[str, str], now: datetime
) -> dict[str, str]:
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    original = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda *args, **kwargs: now  # type: ignore[assignment]
    try:
        SigV4Auth(credentials, "sagemaker", "eu-west-1").add_auth(request)
    finally:
        botocore.auth.get_current_datetime = original  # type: ignore[assignment]
    return dict(request.headers.items())


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=2000),
    inference_id=HEADER_VALUES,
    component=st.none() | HEADER_VALUES,
    token=st.none() | st.text("abcdef0123456789/+=", min_size=8, max_size=60),
    seconds=st.integers(0, 10**9),
    endpoint=st.from_regex(r"[a-zA-Z0-9](-*[a-zA-Z0-9]){0,20}", fullmatch=True),
    port=st.sampled_from([None, 443, 8443]),
)
def test_same_headers_as_botocore(body, inference_id, component, token, seconds, endpoint, port) -> None:
    now = datetime.fromtimestamp(1_700_000_000 + seconds, tz=UTC)
    credentials = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token)
    host = "runtime.sagemaker.eu-west-1.amazonaws.com" + (f":{port}" if port not in (None, 443) else "")
    path = f"/endpoints/{endpoint}/invocations-response-stream"
    headers = {"Content-Type": "application/json", "X-Amzn-SageMaker-Inference-Id": inference_id}
    if component:
        headers["X-Amzn-SageMaker-Inference-Component"] = component
    expected = _botocore(credentials, f"https://{host}{path}", body, headers, now)
    ours = SigV4Signer("eu-west-1", "sagemaker").sign(credentials, host, path, body, headers, now)
    assert ours == expected


def test_the_signing_key_is_reused_within_a_day_and_renewed_after() -> None:
    signer = SigV4Signer("us-east-1", "sagemaker")
    credentials = Credentials("AK", "SECRET")
    first = datetime(2026, 12, 1, 23, 59, 59, tzinfo=UTC)
    signer.sign(credentials, "h", "/p", b"", {}, first)
    key = signer._signing_key("SECRET", "20261201")
    next_day = signer.sign(credentials, "h", "/p", b"", {}, datetime(2026, 12, 2, 0, 0, 1, tzinfo=UTC))
    assert "20261202/us-east-1/sagemaker" in next_day["Authorization"]
    assert signer._signing_key("SECRET", "20261201") == key  # recomputed, still the same value
