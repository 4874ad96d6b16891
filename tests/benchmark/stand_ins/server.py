"""The stand-in server: raw asyncio HTTP/1.1, chunked streaming, both protocols. See package doc."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import re
import sys
import threading
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import sigv4
from .behavior import Behavior
from .eventstream import exception_event, payload_part

MODEL_ID = "stand-in-model"
_SAGEMAKER_PATH = re.compile(r"^/endpoints/([^/]+)/invocations-response-stream$")
_OPENAI_PATH = re.compile(r"^(?:/([^/]+))?/v1/(chat/completions|completions|models)$")
_SAGEMAKER_ERRORS: dict[str, tuple[int, dict[str, Any]]] = {
    "ThrottlingException": (400, {"message": "Rate exceeded"}),
    "ModelNotReadyException": (429, {"Message": "Model is not ready"}),
    "ModelError": (
        424,
        {
            "Message": "Received server error (500) from primary",
            "OriginalStatusCode": 500,
            "OriginalMessage": "boom",
        },
    ),
    "ValidationError": (400, {"Message": "Endpoint missing of account 123456789012 not found."}),
    "InternalFailure": (500, {"Message": "An internal failure occurred."}),
    "ServiceUnavailable": (503, {"Message": "The service is unavailable."}),
}


@dataclass
class Truth:
    """What the server did for one request (times on the shared monotonic clock)."""

    scenario: str
    protocol: str
    request_id: str | None
    received_at: float
    first_content_at: float | None = None
    last_content_at: float | None = None
    content_chunks: int = 0
    output_tokens: int = 0
    max_lateness_ms: float = 0.0
    """How late the server itself wrote its most delayed chunk (a loaded stand-in is no truth)."""
    params: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Disconnect(Exception):
    pass


class _TurnSlicer:
    """Lets request handlers run at most ``SLICE_S`` of CPU per event-loop turn; the rest wait a turn.

    asyncio polls its sockets only between turns, and a burst of 256 requests (each parsed, its
    signature verified: a few hundred µs) done in one turn would leave every request arriving meanwhile
    unstamped for tens of milliseconds, a delay the truth would then pin on the client.
    """

    SLICE_S = 0.0005

    def __init__(self) -> None:
        self._slice_end: float | None = None

    async def turn(self) -> None:
        while True:
            now = time.perf_counter()
            if self._slice_end is None:
                self._slice_end = now + self.SLICE_S
                asyncio.get_running_loop().call_soon(self._next_turn)
                return
            if now < self._slice_end:
                return
            await asyncio.sleep(0)

    def _next_turn(self) -> None:
        self._slice_end = None


class _ArrivalStampingProtocol(asyncio.StreamReaderProtocol):
    """Stamps when a request's first bytes arrive, before the server spends any time on it.

    The truth starts there: a burst of requests is read, verified and parsed one after another, and a
    TTFT counted from when the handler got to each one would add the server's own queueing to what
    the client under test is blamed for.
    """

    def __init__(self, reader: asyncio.StreamReader, handler: Any) -> None:
        super().__init__(reader, handler)
        self._arrival_reader = reader

    def data_received(self, data: bytes) -> None:
        reader = self._arrival_reader
        if getattr(reader, "arrived_at", None) is None:
            reader.arrived_at = time.perf_counter()  # type: ignore[attr-defined]
        super().data_received(data)


class StandInServer:
    def __init__(self, scenarios: dict[str, Behavior], host: str = "127.0.0.1", port: int = 0) -> None:
        if host not in ("127.0.0.1", "localhost"):
            raise ValueError("the stand-in server binds the loopback interface only")
        self.scenarios = dict(scenarios)
        self.scenarios.setdefault("default", Behavior())
        self._host = host
        self._port = port
        self._server: asyncio.Server | None = None
        self.truth: list[Truth] = []
        self._served: defaultdict[str, int] = defaultdict(int)
        self._slicer = _TurnSlicer()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.StreamReaderProtocol:
            return _ArrivalStampingProtocol(asyncio.StreamReader(), self._connection)

        self._server = await loop.create_server(protocol, self._host, self._port, backlog=2048)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)

    # HTTP plumbing -------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                # When the request's first bytes arrived (stamped by the protocol); the next request's
                # bytes stamp anew once this one is read.
                received_at = getattr(reader, "arrived_at", None) or time.perf_counter()
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                reader.arrived_at = None  # type: ignore[attr-defined]
                await self._slicer.turn()
                await self._route(method, path.split("?", 1)[0], path, headers, body, received_at, writer)
                if headers.get("connection", "").lower() == "close":
                    return
        except (_Disconnect, ConnectionError, asyncio.CancelledError):
            return  # client went away, or the server is shutting down
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    @staticmethod
    def _respond(writer: asyncio.StreamWriter, status: int, body: bytes, headers: dict[str, str]) -> None:
        head = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    @staticmethod
    def _start_chunked(writer: asyncio.StreamWriter, content_type: str, extra: dict[str, str]) -> None:
        head = ["HTTP/1.1 200 OK", f"Content-Type: {content_type}", "Transfer-Encoding: chunked"]
        head += [f"{k}: {v}" for k, v in extra.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())

    @staticmethod
    async def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        if writer.transport.is_closing():
            raise _Disconnect
        writer.write(b"%x\r\n%s\r\n" % (len(data), data))
        if writer.transport.get_write_buffer_size() > 1 << 16:
            await writer.drain()

    async def _route(
        self,
        method: str,
        path: str,
        raw_path: str,
        headers: dict[str, str],
        body: bytes,
        received_at: float,
        writer: asyncio.StreamWriter,
    ) -> None:
        if path == "/_truth":
            payload = json.dumps([t.to_json() for t in self.truth]).encode()
            if "clear=1" in raw_path:  # a fresh start: error_first_n counts again from here
                self.truth = []
                self._served.clear()
            self._respond(writer, 200, payload, {"Content-Type": "application/json"})
            return
        if match := _SAGEMAKER_PATH.match(path):
            if (problem := sigv4.verify(method, raw_path, headers, body)) is not None:
                error = {"message": f"The request signature we calculated does not match ({problem})"}
                self._respond(
                    writer,
                    403,
                    json.dumps(error).encode(),
                    {
                        "Content-Type": "application/json",
                        "x-amzn-errortype": "InvalidSignatureException:http://x/",
                    },
                )
                return
            await self._sagemaker(match.group(1), headers, body, received_at, writer)
            return
        if match := _OPENAI_PATH.match(path):
            scenario, api = match.group(1) or "default", match.group(2)
            if api == "models":
                listing = {"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}
                self._respond(writer, 200, json.dumps(listing).encode(), {"Content-Type": "application/json"})
                return
            await self._openai(scenario, api, headers, body, received_at, writer)
            return
        self._respond(writer, 404, b'{"error": "not found"}', {"Content-Type": "application/json"})

    def _behavior(self, scenario: str) -> tuple[Behavior | None, bool]:
        """The scenario's behavior, and whether its error applies to this request."""
        behavior = self.scenarios.get(scenario)
        if behavior is None:
            return None, False
        self._served[scenario] += 1
        limit = behavior.error_first_n
        return behavior, limit is None or self._served[scenario] <= limit

    # Protocols -----------------------------------------------------------------------------

    async def _openai(
        self,
        scenario: str,
        api: str,
        headers: dict[str, str],
        body: bytes,
        received_at: float,
        writer: asyncio.StreamWriter,
    ) -> None:
        behavior, error_applies = self._behavior(scenario)
        if behavior is None:
            self._respond(writer, 404, b'{"error": "unknown scenario"}', {"Content-Type": "application/json"})
            return
        request = json.loads(body)
        if behavior.status is not None and error_applies:
            error = {"error": {"message": f"stand-in error {behavior.status}", "code": behavior.status}}
            self._respond(
                writer, behavior.status, json.dumps(error).encode(), {"Content-Type": "application/json"}
            )
            return
        truth = Truth(scenario, api, headers.get("x-request-id"), received_at, params=_params(request))
        self.truth.append(truth)
        self._start_chunked(writer, "text/event-stream", {})
        emit = _SseEmitter(writer, self._chunk)
        await _stream(behavior, _OpenAIChunks(api, request, behavior), truth, emit, writer, self._slicer)

    async def _sagemaker(
        self,
        scenario: str,
        headers: dict[str, str],
        body: bytes,
        received_at: float,
        writer: asyncio.StreamWriter,
    ) -> None:
        behavior, error_applies = self._behavior(scenario)
        if behavior is None:
            behavior, error_applies = Behavior(sagemaker_error="ValidationError"), True
        if behavior.sagemaker_error is not None and error_applies:
            status, payload = _SAGEMAKER_ERRORS[behavior.sagemaker_error]
            self._respond(
                writer,
                status,
                json.dumps(payload).encode(),
                {
                    "Content-Type": "application/json",
                    "x-amzn-errortype": f"{behavior.sagemaker_error}:http://x/",
                    "x-amzn-RequestId": "stand-in",
                },
            )
            return
        request = json.loads(body)
        params = _params(request)
        params["inference_component"] = headers.get("x-amzn-sagemaker-inference-component")
        params["content_type"] = headers.get("content-type")
        truth = Truth(
            scenario, "sagemaker", headers.get("x-amzn-sagemaker-inference-id"), received_at, params=params
        )
        self.truth.append(truth)
        lmi = "inputs" in request
        self._start_chunked(
            writer,
            "application/vnd.amazon.eventstream",
            {
                "x-amzn-RequestId": "stand-in",
                "X-Amzn-SageMaker-Content-Type": "application/jsonlines" if lmi else "text/event-stream",
            },
        )
        chunks: _Chunks = (
            _LmiChunks(request, behavior) if lmi else _OpenAIChunks("chat/completions", request, behavior)
        )
        emit = _EventStreamEmitter(writer, self._chunk, behavior)
        await _stream(behavior, chunks, truth, emit, writer, self._slicer)


def _params(request: dict[str, Any]) -> dict[str, Any]:
    keys = ("max_tokens", "min_tokens", "ignore_eos", "stream", "stream_options", "model", "temperature")
    params = {k: request[k] for k in keys if k in request}
    if "parameters" in request:
        params["lmi_parameters"] = request["parameters"]
    if "messages" in request:
        params["roles"] = [m.get("role") for m in request["messages"]]
        params["prompt_words"] = sum(len(str(m.get("content", "")).split()) for m in request["messages"])
    else:
        params["prompt_words"] = len(str(request.get("prompt", request.get("inputs", ""))).split())
    return params


# Response bodies -----------------------------------------------------------------------------


class _Chunks:
    """Bytes of each step of a response in one API's format."""

    output_tokens: int

    def role(self) -> bytes | None: ...

    def content(self, index: int, tokens: int, last: bool) -> bytes: ...

    def tail(self) -> bytes: ...

    def error(self) -> bytes: ...


class _OpenAIChunks(_Chunks):
    def __init__(self, api: str, request: dict[str, Any], behavior: Behavior) -> None:
        self._chat = api == "chat/completions"
        self._behavior = behavior
        self._usage = behavior.usage and bool((request.get("stream_options") or {}).get("include_usage"))
        self.output_tokens = behavior.output_tokens or int(request.get("max_tokens") or 16)
        self._prompt_tokens = _params(request)["prompt_words"]

    def _event(self, obj: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"

    def role(self) -> bytes | None:
        if not (self._chat and self._behavior.role_chunk):
            return None
        choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
        return self._event({"id": "x", "object": "chat.completion.chunk", "choices": [choice]})

    def content(self, index: int, tokens: int, last: bool) -> bytes:
        finish = "length" if last and not self._behavior.omit_done else None
        return _openai_content(self._chat, self._behavior.text, tokens, finish)

    def tail(self) -> bytes:
        if self._behavior.omit_done:
            return b""
        out = b""
        if self._usage:
            usage = {
                "prompt_tokens": self._prompt_tokens,
                "completion_tokens": self.output_tokens,
                "total_tokens": self._prompt_tokens + self.output_tokens,
            }
            usage.update(self._behavior.usage_override or {})
            out += self._event({"id": "x", "choices": [], "usage": usage})
        return out + b"data: [DONE]\n\n"

    def error(self) -> bytes:
        return self._event({"error": {"object": "error", "message": "stand-in stream error", "code": 500}})


@functools.lru_cache(maxsize=256)
def _openai_content(chat: bool, text: str, tokens: int, finish: str | None) -> bytes:
    """A content chunk's bytes: the same for every chunk of a kind, so built once (a stand-in that spends
    its time encoding is late to read the requests it is the truth for)."""
    delta = {"index": 0, "delta": {"content": text * tokens}, "finish_reason": finish}
    plain = {"index": 0, "text": text * tokens, "finish_reason": finish}
    obj = {
        "id": "x",
        "object": "chat.completion.chunk" if chat else "text_completion",
        "choices": [delta if chat else plain],
    }
    return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"


class _LmiChunks(_Chunks):
    def __init__(self, request: dict[str, Any], behavior: Behavior) -> None:
        parameters = request.get("parameters") or {}
        self._behavior = behavior
        self.output_tokens = behavior.output_tokens or int(parameters.get("max_new_tokens") or 30)
        self._details = behavior.usage and bool(parameters.get("details"))
        self._prompt_tokens = len(str(request.get("inputs", "")).split())
        self._text: list[str] = []

    def _line(self, obj: dict[str, Any]) -> bytes:
        prefix = b"data:" if self._behavior.lmi_sse else b""
        return prefix + json.dumps(obj, ensure_ascii=False).encode() + b"\n"

    def role(self) -> bytes | None:
        return None

    def content(self, index: int, tokens: int, last: bool) -> bytes:
        text = self._behavior.text * tokens
        self._text.append(text)
        obj: dict[str, Any] = {
            "token": {"id": index, "text": text, "log_prob": -0.1},
            "generated_text": None,
            "details": None,
        }
        if last and not self._behavior.omit_done:
            obj["generated_text"] = "".join(self._text)
            if self._details:
                obj["details"] = {
                    "finish_reason": "length",
                    "generated_tokens": self.output_tokens,
                    "input_length": self._prompt_tokens,
                }
                obj["details"].update(self._behavior.usage_override or {})
        return self._line(obj)

    def tail(self) -> bytes:
        return b""

    def error(self) -> bytes:
        return self._line(
            {
                "token": {"id": -1, "text": "", "log_prob": -1, "special_token": True},
                "generated_text": "",
                "details": {"finish_reason": "error", "generated_tokens": None},
            }
        )


# Emitters: how a step's bytes go on the wire ---------------------------------------------------

_ChunkWriter = Callable[[asyncio.StreamWriter, bytes], Any]


class _SseEmitter:
    def __init__(self, writer: asyncio.StreamWriter, chunk: _ChunkWriter) -> None:
        self._writer = writer
        self._chunk = chunk

    async def data(self, data: bytes) -> None:
        if data:
            await self._chunk(self._writer, data)

    async def stream_error(self, data: bytes) -> None:
        await self.data(data)

    async def end(self) -> None:
        self._writer.write(b"0\r\n\r\n")


class _EventStreamEmitter(_SseEmitter):
    def __init__(self, writer: asyncio.StreamWriter, chunk: _ChunkWriter, behavior: Behavior) -> None:
        super().__init__(writer, chunk)
        self._behavior = behavior

    async def data(self, data: bytes) -> None:
        if not data:
            return
        await self._chunk(self._writer, _payload_parts(data, self._behavior.part_size))

    async def stream_error(self, data: bytes) -> None:
        code = (
            "ModelInvocationTimeExceeded" if self._behavior.stream_error_type == "ModelStreamError" else None
        )
        await self._chunk(
            self._writer, exception_event(self._behavior.stream_error_type, "stand-in failure", code)
        )


@functools.lru_cache(maxsize=1024)
def _payload_parts(data: bytes, part_size: int | None) -> bytes:
    """PayloadPart events carrying ``data`` (cut into ``part_size`` pieces), built once per distinct chunk."""
    size = part_size or len(data)
    return b"".join(payload_part(data[i : i + size]) for i in range(0, len(data), size))


async def _sleep_until_precisely(due: float) -> None:
    """asyncio wakes timers up to ~1 ms late (epoll's millisecond timeouts): for the first token,
    whose timing is the TTFT truth, sleep short and yield to the loop until the exact moment.
    Only the first chunk does this, so even hundreds of streams spin for a few ms per second."""
    if (delay := due - time.perf_counter() - 0.0015) > 0:
        await asyncio.sleep(delay)
    while time.perf_counter() < due:
        await asyncio.sleep(0)


async def _stream(
    behavior: Behavior,
    chunks: _Chunks,
    truth: Truth,
    emit: _SseEmitter,
    writer: asyncio.StreamWriter,
    slicer: _TurnSlicer,
) -> None:
    """Emit a response on the configured schedule, recording when each content chunk went out. Every
    chunk but the first (the TTFT truth, written on time whatever else is due) takes its turn in the
    slicer, so bursts of writes leave the loop free to stamp arriving requests."""
    start = truth.received_at
    role = chunks.role()
    if role:
        await emit.data(role)
    total = chunks.output_tokens
    per_chunk = behavior.tokens_per_chunk
    n_chunks = max(1, -(-total // per_chunk))
    truth.output_tokens = total
    for i in range(n_chunks):
        # Absolute schedule: lateness of one write does not shift the following ones.
        due = start + behavior.ttft_s + i * behavior.chunk_interval_s
        if i == 0:
            await _sleep_until_precisely(due)
        else:
            if (delay := due - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            await slicer.turn()
        tokens = min(per_chunk, total - i * per_chunk)
        await emit.data(chunks.content(i, tokens, last=i == n_chunks - 1))
        now = time.perf_counter()
        truth.max_lateness_ms = max(truth.max_lateness_ms, (now - due) * 1000)
        if truth.first_content_at is None:
            truth.first_content_at = now
        truth.last_content_at = now
        truth.content_chunks += 1
        sent = i + 1
        if behavior.break_after_chunks == sent:
            writer.transport.abort()
            raise _Disconnect
        if behavior.stall_after_chunks == sent:
            await asyncio.sleep(3600)
        if behavior.error_event_after_chunks == sent:
            await emit.stream_error(chunks.error())
            await emit.end()
            return
    await emit.data(chunks.tail())
    await emit.end()


# Running it ---------------------------------------------------------------------------------


class ServerThread:
    """The server on its own event loop in a daemon thread (shares the GIL with the caller)."""

    def __init__(self, scenarios: dict[str, Behavior]) -> None:
        self.server = StandInServer(scenarios)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stand-in-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self.server.start())
        self._ready.set()
        self._loop.run_forever()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.port}"


class ServerProcess:
    """The server in a child process (its own GIL and, with ``cpu``, its own core)."""

    def __init__(self, scenarios: dict[str, Behavior], cpu: int | None = None) -> None:
        self._scenarios = {name: b.to_json() for name, b in scenarios.items()}
        self._cpu = cpu
        self._proc: Any = None
        self.port = 0

    def __enter__(self) -> ServerProcess:
        import subprocess

        root = Path(__file__).resolve().parents[3]
        cmd = [
            sys.executable,
            "-m",
            "tests.benchmark.stand_ins.server",
            "--scenarios",
            json.dumps(self._scenarios),
        ]
        if self._cpu is not None:
            cmd += ["--cpu", str(self._cpu)]
        self._proc = subprocess.Popen(cmd, cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self._proc.stdout.readline()
        if not line.startswith("PORT "):
            self._proc.kill()
            raise RuntimeError(f"stand-in server did not start: {line!r}")
        self.port = int(line.split()[1])
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.stdin.close()  # the child exits when its stdin closes
            try:
                self._proc.wait(5)
            except Exception:
                self._proc.kill()
                self._proc.wait(5)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def truth(self, clear: bool = True) -> list[dict[str, Any]]:
        url = f"{self.base_url}/_truth" + ("?clear=1" if clear else "")
        with urllib.request.urlopen(url, timeout=10) as resp:  # loopback only
            data: list[dict[str, Any]] = json.loads(resp.read())
            return data


async def _serve(scenarios: dict[str, Behavior]) -> None:
    server = StandInServer(scenarios)
    await server.start()
    print(f"PORT {server.port}", flush=True)
    loop = asyncio.get_running_loop()
    # Exit when the parent closes our stdin (or dies): no orphaned servers.
    await loop.run_in_executor(None, sys.stdin.read)
    await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="Stand-in LLM server (OpenAI SSE + SageMaker event stream)")
    parser.add_argument("--scenarios", default="{}", help="JSON object: scenario name -> Behavior fields")
    parser.add_argument("--cpu", type=int, default=None, help="pin the server to this CPU")
    args = parser.parse_args()
    if args.cpu is not None:
        import os

        os.sched_setaffinity(0, {args.cpu})
    scenarios = {name: Behavior.from_json(cfg) for name, cfg in json.loads(args.scenarios).items()}
    asyncio.run(_serve(scenarios))


if __name__ == "__main__":
    main()
