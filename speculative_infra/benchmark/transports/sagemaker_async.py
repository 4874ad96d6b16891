"""SageMaker ``InvokeEndpointWithResponseStream`` on the event loop, with the engine's HTTP/1.1 client.

One event loop drives every open stream, as the HTTP transport does, instead of one boto3 thread per
stream: at a few hundred streams threads contend for the GIL and the client's own lag grows. botocore
still resolves the endpoint URL (``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME``, profiles, FIPS and dual-stack
settings) and finds and refreshes credentials. Requests are signed by ``sigv4.py`` and the event stream
is decoded by ``eventstream.py``: both held to botocore's own output by the tests, with fewer objects
per request on the loop.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import quote

import botocore
import botocore.session
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError

from ..clock import Clock
from ..config import SageMakerTarget, WorkloadConfig
from ..failures import Failure, FailureClass
from ..formats import ApiFormat, sagemaker_payload
from ..recorder import StreamRecorder
from .base import TargetUnavailable, WireRequest
from .eventstream import HeaderValue
from .http1 import ConnectionPool, Origin, request_head
from .sagemaker_errors import classify_sagemaker_error
from .sigv4 import SigV4Signer
from .sinks import EventStreamSink, StreamSink
from .streamed_request import stream_request

SERVICE = "sagemaker-runtime"
SIGNING_NAME = "sagemaker"  # the service model's signingName


class AsyncSageMakerTransport:
    def __init__(
        self,
        target: SageMakerTarget,
        workload: WorkloadConfig,
        *,
        timeout_s: float,
        clock: Clock,
        session: botocore.session.Session | None = None,
    ) -> None:
        self._target = target
        self._timeout_s = timeout_s
        self._clock = clock
        self._botocore = session or botocore.session.get_session()
        self.api_format: ApiFormat = sagemaker_payload(target.container, workload, target.model)
        self._pool: ConnectionPool | None = None
        self._signer: SigV4Signer | None = None
        self._path = ""
        self._region = ""

    async def start(self, concurrency: int) -> None:
        if self._pool is not None:
            return
        try:
            # A client only to resolve the endpoint as boto3 would; no request goes through it.
            client = self._botocore.create_client(
                SERVICE, region_name=self._target.region, endpoint_url=self._target.endpoint_url
            )
            self._region = client.meta.region_name
            origin = Origin(client.meta.endpoint_url)
        except (BotoCoreError, ValueError) as exc:
            raise TargetUnavailable(f"cannot resolve the SageMaker runtime endpoint: {exc}") from exc
        endpoint = quote(self._target.endpoint_name, safe="")
        self._path = f"{origin.base_path}/endpoints/{endpoint}/invocations-response-stream"
        self._pool = ConnectionPool(origin, self._clock, connect_timeout_s=min(self._timeout_s, 30.0))
        self._signer = SigV4Signer(self._region, SIGNING_NAME)

    def signed_headers(self, request: WireRequest, credentials: Credentials) -> dict[str, str]:
        """The call's headers (those botocore's client sends for it), signed with SigV4."""
        headers = {
            "Content-Type": self.api_format.content_type,
            "X-Amzn-SageMaker-Inference-Id": request.request_id[:64],
        }
        if self._target.inference_component_name:
            headers["X-Amzn-SageMaker-Inference-Component"] = self._target.inference_component_name
        assert self._pool is not None and self._signer is not None
        return self._signer.sign(
            credentials, self._pool.origin.host_header, self._path, request.body, headers, datetime.now(UTC)
        )

    def _credentials(self) -> Credentials | None:
        # Refreshable credentials (SSO, assumed roles, instance profiles) renew here when they are due,
        # the same check botocore makes before every signed request.
        found = self._botocore.get_credentials()
        if found is None:
            return None
        frozen = found.get_frozen_credentials()
        if not frozen.access_key or not frozen.secret_key:
            return None
        return Credentials(frozen.access_key, frozen.secret_key, frozen.token)

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        pool = self._pool
        if pool is None:
            raise RuntimeError("AsyncSageMakerTransport.start() must be called before send()")
        try:
            credentials = self._credentials()
        except BotoCoreError as exc:
            credentials, problem = None, str(exc)
        else:
            problem = "no AWS credentials found"
        if credentials is None:
            rec.failure = Failure(FailureClass.CREDENTIALS_ERROR, problem)
            rec.completed_at = self._clock.now()
            return
        signed = self.signed_headers(request, credentials)
        head = request_head("POST", self._path, pool.origin, signed, len(request.body))
        sink = EventStreamSink(rec, self.api_format, _stream_exception)
        await stream_request(
            pool,
            head,
            request.body,
            sink,
            rec,
            timeout_s=self._timeout_s,
            clock=self._clock,
            error_answer=_error_answer,
        )

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def describe(self) -> dict[str, str]:
        return {
            "transport": "sagemaker",
            "client": "asyncio HTTP/1.1 with botocore SigV4 (speculative_infra.benchmark.transports)",
            "endpoint": self._target.describe(),
            "payload": self.api_format.name,
            "botocore": botocore.__version__,
            "connections_opened": str(self._pool.opened if self._pool else 0),
            "python": sys.version.split()[0],
        }


def _error_answer(sink: StreamSink) -> Failure:
    return _error_response(sink.status, sink.headers, bytes(sink.error_body))


def _error_response(status: int, headers: Mapping[str, str], body: bytes) -> Failure:
    """An error answer of the runtime API (JSON body; the error code in ``x-amzn-ErrorType``)."""
    try:
        document = json.loads(body) if body else {}
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    code = str(headers.get("x-amzn-errortype", "")).split(":", 1)[0]
    code = code or str(document.get("__type", document.get("code", ""))).rsplit("#", 1)[-1]
    message = document.get("Message", document.get("message", body[:300].decode("utf-8", "replace")))
    return classify_sagemaker_error(code, status, str(message), document.get("OriginalStatusCode"))


def _stream_exception(headers: dict[str, HeaderValue], payload: bytes) -> Failure:
    """An ``exception`` (ModelStreamError, InternalStreamFailure) or ``error`` message in the stream."""
    if headers.get(":message-type") == "error":
        code, message = str(headers.get(":error-code", "")), str(headers.get(":error-message", ""))
    else:
        code = str(headers.get(":exception-type", ""))
        try:
            document = json.loads(payload) if payload else {}
        except ValueError:
            document = {}
        message = str(document.get("Message", "")) if isinstance(document, dict) else ""
        if isinstance(document, dict) and document.get("ErrorCode"):
            message = f"{message} ({document['ErrorCode']})"
    return classify_sagemaker_error(code, 200, message)
