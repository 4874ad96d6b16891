"""SigV4 for one POST shape, with the day's signing key kept between requests.

botocore's ``SigV4Auth`` builds an ``AWSRequest`` and derives the signing key (four HMACs) for every
request: about 50 microseconds, paid by every stream of a burst on a single event loop. This signer
does the same computation (canonical request, string to sign, signature) for a POST with a body and
no query string, and keeps the derived key per (secret, day). tests/benchmark/test_sigv4.py holds it
to botocore's output byte for byte, and the stand-in server verifies every signature.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from urllib.parse import quote

from botocore.credentials import Credentials

ALGORITHM = "AWS4-HMAC-SHA256"
# Headers botocore never signs (botocore.auth.SIGNED_HEADERS_BLACKLIST).
_UNSIGNED = frozenset({"expect", "transfer-encoding", "user-agent", "x-amzn-trace-id"})


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


class SigV4Signer:
    def __init__(self, region: str, service: str) -> None:
        self._region = region
        self._service = service
        self._keys: dict[tuple[str, str], bytes] = {}

    def _signing_key(self, secret: str, day: str) -> bytes:
        key = self._keys.get((secret, day))
        if key is None:
            key = _hmac(
                _hmac(_hmac(_hmac(f"AWS4{secret}".encode(), day), self._region), self._service),
                "aws4_request",
            )
            self._keys = {(secret, day): key}  # one day, one secret at a time
        return key

    def sign(
        self,
        credentials: Credentials,
        host: str,
        path: str,
        body: bytes,
        headers: dict[str, str],
        now: datetime,
    ) -> dict[str, str]:
        """``headers`` plus X-Amz-Date, X-Amz-Security-Token (temporary credentials) and Authorization.

        ``now`` is UTC. ``host`` is the Host header the request will carry.
        """
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        day = amz_date[:8]
        out = dict(headers)
        out["X-Amz-Date"] = amz_date
        if credentials.token:
            out["X-Amz-Security-Token"] = credentials.token
        canonical = {"host": host}
        for name, value in out.items():
            lower = name.lower()
            if lower not in _UNSIGNED:
                canonical[lower] = " ".join(value.split())
        signed = sorted(canonical)
        signed_list = ";".join(signed)
        canonical_request = "\n".join(
            (
                "POST",
                quote(path, safe="/~"),
                "",
                "".join(f"{name}:{canonical[name]}\n" for name in signed),
                signed_list,
                hashlib.sha256(body).hexdigest(),
            )
        )
        scope = f"{day}/{self._region}/{self._service}/aws4_request"
        string_to_sign = "\n".join(
            (ALGORITHM, amz_date, scope, hashlib.sha256(canonical_request.encode("utf-8")).hexdigest())
        )
        signature = hmac.new(
            self._signing_key(credentials.secret_key, day), string_to_sign.encode("utf-8"), hashlib.sha256
        ).hexdigest()
        out["Authorization"] = (
            f"{ALGORITHM} Credential={credentials.access_key}/{scope}, SignedHeaders={signed_list}, Signature={signature}"
        )
        return out
