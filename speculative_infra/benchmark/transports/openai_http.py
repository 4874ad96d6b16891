"""OpenAI-compatible streaming over HTTP (vLLM's api_server, any /v1 server), on the engine's HTTP/1.1
client (``http1.py``): every stream on one event loop, each network read stamped as it arrives."""

from __future__ import annotations

import asyncio
import json
import sys

from ..clock import Clock
from ..config import HttpTarget, WorkloadConfig
from ..failures import Failure, FailureClass, classify_http_status
from ..formats import ApiFormat, OpenAIChatFormat, OpenAICompletionsFormat
from ..recorder import StreamRecorder
from .base import TargetUnavailable, WireRequest
from .http1 import ConnectionPool, HttpError, Origin, request_head
from .sinks import StreamSink
from .streamed_request import stream_request

_MODEL_LOOKUP_TIMEOUT_S = 10.0


class OpenAIHttpTransport:
    def __init__(
        self, target: HttpTarget, workload: WorkloadConfig, *, timeout_s: float, clock: Clock
    ) -> None:
        self._target = target
        self._workload = workload
        self._timeout_s = timeout_s
        self._clock = clock
        base = target.base_url[:-3] if target.base_url.endswith("/v1") else target.base_url
        try:
            self._origin = Origin(base)
        except ValueError as exc:
            raise TargetUnavailable(str(exc)) from exc
        path = "/v1/chat/completions" if target.api == "chat" else "/v1/completions"
        self._path = self._origin.base_path + path
        self._url = base + path
        self._model = target.model
        self.api_format: ApiFormat = self._format()
        self._pool: ConnectionPool | None = None
        self._model_resolved = target.model is not None

    def _format(self) -> ApiFormat:
        if self._target.api == "chat":
            return OpenAIChatFormat(self._workload, self._model)
        return OpenAICompletionsFormat(self._workload, self._model)

    async def start(self, concurrency: int) -> None:
        if self._pool is None:
            self._pool = ConnectionPool(
                self._origin, self._clock, connect_timeout_s=min(self._timeout_s, 30.0)
            )
        if not self._model_resolved:
            self._model_resolved = True
            self._model = await self._lookup_model(self._pool)
            self.api_format = self._format()

    async def _lookup_model(self, pool: ConnectionPool) -> str | None:
        """vLLM serves one model; asking for its name avoids a 404 on servers that require it."""
        answer = _WholeBody()
        head = request_head("GET", self._origin.base_path + "/v1/models", self._origin, {}, 0)
        try:
            async with asyncio.timeout(_MODEL_LOOKUP_TIMEOUT_S):
                await pool.exchange(head, b"", answer, lambda at: None)
            listing = json.loads(bytes(answer.data)) if answer.status == 200 else None
        except (HttpError, TimeoutError, ValueError):
            return None  # the benchmark requests will report what is wrong, once per request
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            model_id = data[0].get("id")
            return model_id if isinstance(model_id, str) else None
        return None

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        pool = self._pool
        if pool is None:
            raise RuntimeError("OpenAIHttpTransport.start() must be called before send()")
        headers = {"Content-Type": "application/json", "X-Request-Id": request.request_id}
        head = request_head("POST", self._path, self._origin, headers, len(request.body))
        sink = StreamSink(rec, self.api_format)
        await stream_request(
            pool,
            head,
            request.body,
            sink,
            rec,
            timeout_s=self._timeout_s,
            clock=self._clock,
            error_answer=self._error,
        )

    def _error(self, sink: StreamSink) -> Failure:
        text = bytes(sink.error_body).decode("utf-8", "replace")[:300]
        failure_class = classify_http_status(sink.status)
        return Failure(
            failure_class,
            f"HTTP {sink.status} from {self._url}: {text}",
            retryable=failure_class is FailureClass.THROTTLED,
        )

    async def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def describe(self) -> dict[str, str]:
        return {
            "transport": "openai_http",
            "client": "asyncio HTTP/1.1 (speculative_infra.benchmark.transports.http1)",
            "url": self._url,
            "model": self._model or "(omitted)",
            "connections_opened": str(self._pool.opened if self._pool else 0),
            "python": sys.version.split()[0],
        }


class _WholeBody:
    """A small answer read whole (GET /v1/models)."""

    def __init__(self) -> None:
        self.status = 0
        self.data = bytearray()

    def head(self, status: int, headers: dict[str, str]) -> None:
        self.status = status

    def body(self, data: bytes, at: float) -> bool:
        self.data += data
        return True

    def end(self, at: float) -> None:
        return None
