"""OpenAI-compatible streaming over HTTP with aiohttp (vLLM's api_server, any /v1 server)."""

from __future__ import annotations

import asyncio
import json
import sys
from types import SimpleNamespace

import aiohttp

from ..clock import Clock
from ..config import HttpTarget, WorkloadConfig
from ..failures import Failure, FailureClass, classify_http_status
from ..formats import ApiFormat, BadChunk, OpenAIChatFormat, OpenAICompletionsFormat
from ..recorder import StreamRecorder
from .base import WireRequest
from .finish import finish_stream

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
        self._base = base
        self._url = f"{base}/v1/chat/completions" if target.api == "chat" else f"{base}/v1/completions"
        self._model = target.model
        self.api_format: ApiFormat = self._format()
        self._session: aiohttp.ClientSession | None = None
        self._model_resolved = target.model is not None

    def _format(self) -> ApiFormat:
        if self._target.api == "chat":
            return OpenAIChatFormat(self._workload, self._model)
        return OpenAICompletionsFormat(self._workload, self._model)

    async def start(self, concurrency: int) -> None:
        if self._session is None:
            trace = aiohttp.TraceConfig()
            trace.on_request_headers_sent.append(self._on_headers_sent)
            # No pool limit: the closed loop itself bounds connections to the concurrency, and a
            # limit below it would queue requests silently inside the client.
            connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, force_close=False)
            self._session = aiohttp.ClientSession(
                connector=connector,
                trace_configs=[trace],
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=min(self._timeout_s, 30.0)),
            )
        if not self._model_resolved:
            self._model_resolved = True
            self._model = await self._lookup_model(self._session)
            self.api_format = self._format()

    async def _lookup_model(self, session: aiohttp.ClientSession) -> str | None:
        """vLLM serves one model; asking for its name avoids a 404 on servers that require it."""
        try:
            async with asyncio.timeout(_MODEL_LOOKUP_TIMEOUT_S):
                async with session.get(f"{self._base}/v1/models") as resp:
                    if resp.status != 200:
                        return None
                    listing = json.loads(await resp.read())
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None  # the benchmark requests will report what is wrong, once per request
        data = listing.get("data") if isinstance(listing, dict) else None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            model_id = data[0].get("id")
            return model_id if isinstance(model_id, str) else None
        return None

    async def _on_headers_sent(
        self, session: aiohttp.ClientSession, ctx: SimpleNamespace, params: object
    ) -> None:
        rec = ctx.trace_request_ctx
        if isinstance(rec, StreamRecorder):
            rec.sent_at = self._clock.now()

    async def send(self, request: WireRequest, rec: StreamRecorder) -> None:
        session = self._session
        if session is None:
            raise RuntimeError("OpenAIHttpTransport.start() must be called before send()")
        clock = self._clock
        fmt = self.api_format
        decoder = fmt.decoder()
        headers = {"Content-Type": "application/json", "X-Request-Id": request.request_id}
        try:
            async with asyncio.timeout(self._timeout_s):
                async with session.post(
                    self._url, data=request.body, headers=headers, trace_request_ctx=rec
                ) as resp:
                    if resp.status != 200:
                        text = (await resp.read()).decode("utf-8", "replace")[:300]
                        failure_class = classify_http_status(resp.status)
                        rec.failure = Failure(
                            failure_class,
                            f"HTTP {resp.status} from {self._url}: {text}",
                            retryable=failure_class is FailureClass.THROTTLED,
                        )
                        return
                    # Hot loop (one pass per network read): bound methods hoisted out of it.
                    read, now, feed, consume = resp.content.readany, clock.now, decoder.feed, fmt.consume
                    while chunk := await read():
                        at = now()
                        if rec.first_byte_at is None:
                            rec.first_byte_at = at
                        for data in feed(chunk):
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
        except BadChunk as exc:
            rec.failure = Failure(FailureClass.BAD_RESPONSE, str(exc))
        finally:
            if rec.completed_at is None:
                rec.completed_at = clock.now()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def describe(self) -> dict[str, str]:
        return {
            "transport": "openai_http",
            "url": self._url,
            "model": self._model or "(omitted)",
            "aiohttp": aiohttp.__version__,
            "python": sys.version.split()[0],
        }
