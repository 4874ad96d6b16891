"""SigV4 verification as the SageMaker runtime does it, for the stand-in server.

The stand-in's credentials convention: the secret key equals the access key id (tests use
``testing``/``testing``, the benchmarks ``local-stand-in``/``local-stand-in``). A request whose
signature does not verify is refused with ``InvalidSignatureException``, so a transport that signs the
wrong headers, path or body fails here as it would against AWS.
"""

from __future__ import annotations

import re

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request,"
    r"\s*SignedHeaders=(?P<signed>[^,]+),\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


def verify(method: str, raw_path: str, headers: dict[str, str], body: bytes) -> str | None:
    """None when the request's SigV4 signature verifies; otherwise what is wrong.

    ``headers`` are the received headers with lower-case names.
    """
    match = _AUTHORIZATION.match(headers.get("authorization", ""))
    if match is None:
        return "missing or malformed Authorization header"
    amz_date = headers.get("x-amz-date", "")
    if amz_date[:8] != match["date"]:
        return "X-Amz-Date does not match the credential scope date"
    signed = match["signed"].split(";")
    missing = [name for name in signed if name not in headers]
    if missing:
        return f"signed headers not sent: {missing}"
    request = AWSRequest(
        method=method,
        url=f"http://{headers['host']}{raw_path}",
        data=body,
        headers={name: headers[name] for name in signed},
    )
    request.context["timestamp"] = amz_date
    token = headers.get("x-amz-security-token")
    auth = SigV4Auth(Credentials(match["key"], match["key"], token), match["service"], match["region"])
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    if expected != match["signature"]:
        return "signature does not match"
    if auth.signed_headers(auth.headers_to_sign(request)) != match["signed"]:
        return "signed header list differs"
    return None
