"""SageMaker ``InvokeEndpointWithResponseStream`` on the event loop: aiohttp, botocore's signer and
botocore's event-stream decoder.

One event loop drives every open stream, as the HTTP transport does, instead of one boto3 thread per
stream: at a few hundred streams threads contend for the GIL and the client's own lag grows. botocore
still does what it does best: it resolves the endpoint URL (``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME``,
profiles, FIPS and dual-stack settings), finds and refreshes credentials and signs with SigV4. The event
stream is decoded by ``eventstream.py`` (botocore's checks, fewer objects per message).
"""

from __future__ import annotations

import asyncio
import json
import sys
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import aiohttp
import botocore
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import BotoCoreError

from ..clock import Clock
from ..config import SageMakerTarget, WorkloadConfig
from ..failures import Failure, FailureClass
from ..formats import ApiFormat, BadChunk, LmiFormat, OpenAIChatFormat
from ..recorder import StreamRecorder
from .base import TargetUnavailable, WireRequest
from .eventstream import EventStreamDecoder, EventStreamError, HeaderValue
from .finish import finish_stream
from .sagemaker_errors import classify_sagemaker_error

SERVICE = "sagemaker-runtime"
SIGNING_NAME = "sagemaker"  # the service model's signingName
EVENT_STREAM = "application/vnd.amazon.eventstream"


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
        self.api_format: ApiFormat = (
            LmiFormat(workload) if target.container == "lmi" else OpenAIChatFormat(workload, target.model)
        )
        self._http: aiohttp.ClientSession | None = None
        self._url = ""
        self._region = ""

    async def start(self, concurrency: int) -> None:
        if self._http is not None:
            return
        try:
            # A client only to resolve the endpoint as boto3 would; no request goes through it.
            client = self._botocore.create_client(
                SERVICE, region_name=self._target.region, endpoint_url=self._target.endpoint_url
            )
        except (BotoCoreError, ValueError) as exc:
            raise TargetUnavailable(f"cannot resolve the SageMaker runtime endpoint: {exc}") from exc
        self._region = client.meta.region_name
        endpoint = client.meta.endpoint_url.rstrip("/")
        self._url = (
            f"{endpoint}/endpoints/{quote(self._target.endpoint_name, safe='')}/invocations-response-stream"
        )
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(self._on_headers_sent)
        # No pool limit: the load model bounds open requests, and a limit would queue them unseen.
        self._http = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0),
            trace_configs=[trace],
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(self._timeout_s, 30.0)),
            # SigV4 signs the exact headers; aiohttp must not add or rewrite any it signed.
            skip_auto_headers=("Content-Type",),
        )

    async def _on_headers_sent(
        self, session: aiohttp.ClientSession, ctx: SimpleNamespace, params: object
    ) -> None:
        rec = ctx.trace_request_ctx
        if isinstance(rec, StreamRecorder):
            rec.sent_at = self._clock.now()

    def signed_headers(self, request: WireRequest, credentials: Credentials) -> dict[str, str]:
        """The headers botocore's client sends for this call, signed with SigV4."""
        headers = {
            "Content-Type": self.api_format.content_type,
            "X-Amzn-SageMaker-Inference-Id": request.request_id[:64],
        }
        if self._target.inference_component_name:
            headers["X-Amzn-SageMaker-Inference-Component"] = self._target.inference_component_name
        aws_request = AWSRequest(method="POST", url=self._url, data=request.body, headers=headers)
        SigV4Auth(credentials, SIGNING_NAME, self._region).add_auth(aws_request)
        return dict(aws_request.headers.items())

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
        http = self._http
        if http is None:
            raise RuntimeError("AsyncSageMakerTransport.start() must be called before send()")
        clock = self._clock
        try:
            credentials = self._credentials()
        except BotoCoreError as exc:
            rec.failure = Failure(FailureClass.CREDENTIALS_ERROR, str(exc))
            rec.completed_at = clock.now()
            return
        if credentials is None:
            rec.failure = Failure(FailureClass.CREDENTIALS_ERROR, "no AWS credentials found")
            rec.completed_at = clock.now()
            return
        headers = self.signed_headers(request, credentials)
        fmt = self.api_format
        decoder = fmt.decoder()
        events = EventStreamDecoder()
        try:
            async with asyncio.timeout(self._timeout_s):
                async with http.post(
                    self._url, data=request.body, headers=headers, trace_request_ctx=rec
                ) as resp:
                    if resp.status != 200:
                        rec.failure = _error_response(resp.status, resp.headers, await resp.read())
                        return
                    # Hot loop (one pass per network read): bound methods hoisted out of it.
                    read, now, feed, consume = resp.content.readany, clock.now, decoder.feed, fmt.consume
                    messages = events.feed
                    while chunk := await read():
                        at = now()
                        for event, payload in messages(chunk):
                            if event.get(":message-type") != "event":
                                rec.failure = _stream_exception(event, payload)
                                return
                            if event.get(":event-type") != "PayloadPart":
                                continue
                            if rec.first_byte_at is None:
                                rec.first_byte_at = at
                            for data in feed(payload):
                                consume(data, at, rec)
                            if rec.done_marker and rec.completed_at is None:
                                rec.completed_at = at
            for data in decoder.close():
                fmt.consume(data, clock.now(), rec)
            finish_stream(rec)
        except TimeoutError:
            rec.failure = Failure(FailureClass.TIMEOUT, f"no complete response within {self._timeout_s:g} s")
        except aiohttp.ClientConnectorError as exc:
            rec.failure = Failure(FailureClass.CONNECTION_ERROR, str(exc))
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            failure_class = FailureClass.STREAM_BROKEN if rec.first_byte_at else FailureClass.CONNECTION_ERROR
            rec.failure = Failure(failure_class, f"{type(exc).__name__}: {exc}")
        except aiohttp.ClientError as exc:
            rec.failure = Failure(FailureClass.CLIENT_EXCEPTION, f"{type(exc).__name__}: {exc}")
        except (BadChunk, EventStreamError) as exc:
            rec.failure = Failure(FailureClass.BAD_RESPONSE, f"{type(exc).__name__}: {exc}")
        finally:
            if rec.completed_at is None:
                rec.completed_at = clock.now()

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    def describe(self) -> dict[str, str]:
        return {
            "transport": "sagemaker",
            "client": "asyncio (aiohttp, botocore SigV4 and event-stream decoder)",
            "endpoint": self._target.describe(),
            "payload": self.api_format.name,
            "aiohttp": aiohttp.__version__,
            "botocore": botocore.__version__,
            "python": sys.version.split()[0],
        }


def _error_response(status: int, headers: Any, body: bytes) -> Failure:
    """An error answer of the runtime API (JSON body; the error code in ``x-amzn-ErrorType``)."""
    try:
        document = json.loads(body) if body else {}
    except ValueError:
        document = {}
    if not isinstance(document, dict):
        document = {}
    code = str(headers.get("x-amzn-ErrorType", "")).split(":", 1)[0]
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
