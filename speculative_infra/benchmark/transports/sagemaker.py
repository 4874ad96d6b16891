"""SageMaker ``InvokeEndpointWithResponseStream`` through boto3, one thread per open stream.

boto3 is synchronous, so each request runs in a daemon thread (see ``threads.py``) and reports
back to the event loop. Timestamps are taken in those threads with the same monotonic clock.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import boto3
import botocore
import urllib3.exceptions
from botocore.config import Config
from botocore.eventstream import ParserError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    PartialCredentialsError,
    ReadTimeoutError,
)

from ..clock import Clock
from ..config import SageMakerTarget, WorkloadConfig
from ..failures import Failure, FailureClass
from ..formats import ApiFormat, BadChunk, sagemaker_payload
from ..recorder import StreamRecorder
from .base import TargetUnavailable, WireRequest
from .finish import finish_stream
from .sagemaker_errors import classify_sagemaker_error
from .threads import DaemonThreadPool

if TYPE_CHECKING:
    from mypy_boto3_sagemaker_runtime import SageMakerRuntimeClient

_OPERATION_EVENT = "before-send.sagemaker-runtime.InvokeEndpointWithResponseStream"


def classify_client_error(error: ClientError) -> Failure:
    """Map a SageMaker runtime error (raised before the stream started) to a failure class."""
    info: dict[str, Any] = dict(error.response.get("Error", {}))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    return classify_sagemaker_error(
        str(info.get("Code", "")),
        status,
        str(info.get("Message", "")),
        error.response.get("OriginalStatusCode"),
    )


class SageMakerTransport:
    def __init__(
        self,
        target: SageMakerTarget,
        workload: WorkloadConfig,
        *,
        timeout_s: float,
        clock: Clock,
        session: boto3.session.Session | None = None,
    ) -> None:
        self._target = target
        self._timeout_s = timeout_s
        self._clock = clock
        self._session = session
        self.api_format: ApiFormat = sagemaker_payload(target.container, workload, target.model)
        self._client: SageMakerRuntimeClient | None = None
        self._pool_connections = 0
        self._threads = DaemonThreadPool("sagemaker-stream")
        self._local = threading.local()

    async def start(self, concurrency: int) -> None:
        # urllib3 would queue requests beyond max_pool_connections (default 10) without a word,
        # so the client is rebuilt whenever a level needs more connections than it has.
        if self._client is None or self._pool_connections < concurrency:
            if self._client is not None:
                self._client.close()
            self._client = self._make_client(concurrency)
            self._pool_connections = concurrency
        self._threads.ensure(concurrency)

    def _make_client(self, concurrency: int) -> SageMakerRuntimeClient:
        config = Config(
            max_pool_connections=max(10, concurrency),
            # The engine retries only what is safe and counts it; botocore's own retries would
            # hide throttling and add unmeasured delay.
            retries={"total_max_attempts": 1, "mode": "standard"},
            connect_timeout=min(self._timeout_s, 30.0),
            read_timeout=self._timeout_s,
            tcp_keepalive=True,
        )
        session = self._session or boto3.session.Session()
        try:
            # No explicit endpoint unless asked: boto3's normal resolution then honours
            # AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME, profiles and FIPS/dual-stack settings.
            client = session.client(
                "sagemaker-runtime",
                region_name=self._target.region,
                endpoint_url=self._target.endpoint_url,
                config=config,
            )
        except (BotoCoreError, ValueError) as exc:
            raise TargetUnavailable(f"cannot create a SageMaker runtime client: {exc}") from exc
        client.meta.events.register(_OPERATION_EVENT, self._on_before_send)
        return client

    def _on_before_send(self, **_: object) -> None:
        # Runs in the request's own thread right before urllib3 sends: after signing, so TTFT
        # does not include boto3's ~1 ms of request preparation (that shows as client lag).
        self._local.sent_at = self._clock.now()

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        client = self._client
        if client is None:
            raise RuntimeError("SageMakerTransport.start() must be called before send()")
        cancel = threading.Event()
        try:
            await self._threads.run(lambda: self._invoke(client, request, rec, cancel))
        except BaseException:
            cancel.set()  # the thread stops reading at its next event and closes the stream
            raise

    def _invoke(
        self,
        client: SageMakerRuntimeClient,
        request: WireRequest,
        rec: StreamRecorder,
        cancel: threading.Event,
    ) -> None:
        clock = self._clock
        deadline = rec.dispatched_at + self._timeout_s
        self._local.sent_at = None
        kwargs: dict[str, Any] = {
            "EndpointName": self._target.endpoint_name,
            "Body": request.body,
            "ContentType": self.api_format.content_type,
            "InferenceId": request.request_id[:64],
        }
        if self._target.inference_component_name:
            kwargs["InferenceComponentName"] = self._target.inference_component_name
        try:
            response = client.invoke_endpoint_with_response_stream(**kwargs)
        except Exception as exc:
            rec.failure = _request_failure(exc)
            rec.completed_at = clock.now()
            return
        finally:
            rec.sent_at = self._local.sent_at
        stream = response["Body"]
        fmt = self.api_format
        decoder = fmt.decoder()
        clean = False
        try:
            for event in stream:
                at = clock.now()
                part = event.get("PayloadPart")
                if part is not None:
                    if rec.first_byte_at is None:
                        rec.first_byte_at = at
                    for data in decoder.feed(part.get("Bytes", b"")):
                        fmt.consume(data, at, rec)
                    if rec.done_marker and rec.completed_at is None:
                        rec.completed_at = at
                if cancel.is_set():
                    return
                if at > deadline:
                    rec.failure = Failure(
                        FailureClass.TIMEOUT, f"no complete response within {self._timeout_s:g} s"
                    )
                    return
            for data in decoder.close():
                fmt.consume(data, clock.now(), rec)
            clean = True
            finish_stream(rec)
        except Exception as exc:
            rec.failure = _stream_failure(exc)
        finally:
            if rec.completed_at is None:
                rec.completed_at = clock.now()
            if not clean:
                stream.close()  # a half-read stream cannot go back to the pool

    async def close(self) -> None:
        self._threads.close()
        if self._client is not None:
            self._client.close()
            self._client = None

    def describe(self) -> dict[str, str]:
        return {
            "transport": "sagemaker",
            "endpoint": self._target.describe(),
            "payload": self.api_format.name,
            "boto3": boto3.__version__,
            "botocore": botocore.__version__,
            "max_pool_connections": str(max(10, self._pool_connections)),
            "threads": str(self._threads.size),
            "python": sys.version.split()[0],
        }


def _request_failure(exc: Exception) -> Failure:
    """Failures before the response stream exists."""
    if isinstance(exc, ClientError):
        return classify_client_error(exc)
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return Failure(FailureClass.CREDENTIALS_ERROR, str(exc))
    if isinstance(exc, ConnectTimeoutError | ReadTimeoutError):
        return Failure(FailureClass.TIMEOUT, str(exc))
    if isinstance(exc, EndpointConnectionError | ConnectionClosedError):
        return Failure(FailureClass.CONNECTION_ERROR, str(exc))
    return Failure(FailureClass.CLIENT_EXCEPTION, f"{type(exc).__name__}: {exc}")


def _stream_failure(exc: Exception) -> Failure:
    """Failures while reading the event stream."""
    if isinstance(exc, ClientError):  # botocore's EventStreamError for ModelStreamError & co.
        return classify_client_error(exc)
    if isinstance(exc, ReadTimeoutError | urllib3.exceptions.ReadTimeoutError | TimeoutError):
        return Failure(FailureClass.TIMEOUT, str(exc))
    if isinstance(exc, BadChunk | ParserError):
        return Failure(FailureClass.BAD_RESPONSE, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, urllib3.exceptions.HTTPError | BotoCoreError | OSError):
        return Failure(FailureClass.STREAM_BROKEN, f"{type(exc).__name__}: {exc}")
    return Failure(FailureClass.CLIENT_EXCEPTION, f"{type(exc).__name__}: {exc}")
