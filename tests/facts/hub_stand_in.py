"""A local stand-in for the Hugging Face Hub's HTTP API: the two routes `facts fetch` reads.

  GET /api/models/{repo}/revision/{revision}?blobs=true -> {"sha", "gated", "siblings": [{rfilename, size}],
                                                           "safetensors": {"total"}}
  GET /{repo}/resolve/{revision}/config.json            -> the config
Gated repositories answer 401 without a bearer token, 403 with one that was not granted access.

A hostile Hub is a repository whose `info_answer` or `config_answer` writes what it likes to the socket:
the answers below send broken HTTP, trickle or stall, cut the connection, or redirect elsewhere. A second
server on another port (`origin_stand_in`) is another origin, e.g. a CDN or an attacker a redirect names.
Every server logs each request's path and Authorization header, so tests can tell where the token went.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

# Writes an answer to one request (the handler's wfile is unbuffered: bytes leave as written).
Answer = Callable[[BaseHTTPRequestHandler], None]

_stopping = threading.Event()  # set while a server shuts down: stalled and trickling answers give up


@dataclass
class HubRepo:
    config: Any
    files: dict[str, int]  # file name -> size in bytes
    parameters: int | None = None
    gated: bool | str = False
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    granted_tokens: set[str] = field(default_factory=set)
    info_answer: Answer | None = None  # replaces the file listing's answer
    config_answer: Answer | None = None  # replaces config.json's answer (after the gated check)


class RequestLog(list[str]):
    """The paths requested, in order; `authorizations` holds each one's Authorization header (or None)."""

    def __init__(self) -> None:
        super().__init__()
        self.authorizations: list[str | None] = []

    def record(self, path: str, authorization: str | None) -> None:
        self.append(path)
        self.authorizations.append(authorization)


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


# --- answers ------------------------------------------------------------------------------------------


def json_answer(value: Any, status: int = 200) -> Answer:
    """Any JSON value (NaN and infinity as Python's json writes them)."""
    return lambda handler: send_json(handler, status, value)


def body_answer(body: bytes, *, content_length: int | None = -1, status: int = 200) -> Answer:
    """`body` after a status line; Content-Length is the body's (-1), a lie (a number) or absent (None:
    the body ends when the connection closes)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        if content_length is not None:
            handler.send_header("Content-Length", str(len(body) if content_length == -1 else content_length))
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.wfile.write(body)
        handler.close_connection = True

    return answer


def raw_answer(data: bytes) -> Answer:
    """These bytes and nothing else: status line and headers included, then the connection closes."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.wfile.write(data)
        handler.close_connection = True

    return answer


def trickle_answer(body: bytes, interval: float) -> Answer:
    """A correct answer whose body arrives one byte every `interval` seconds."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        for i in range(len(body)):
            if _stopping.wait(interval):
                break
            handler.wfile.write(body[i : i + 1])
        handler.close_connection = True

    return answer


def stall_answer(seconds: float, *, after_headers: bool = False) -> Answer:
    """Nothing for `seconds` (or headers, then nothing), then the connection closes."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if after_headers:
            handler.send_response(200)
            handler.send_header("Content-Length", "100")
            handler.end_headers()
        _stopping.wait(seconds)
        handler.close_connection = True

    return answer


def reset_answer() -> Answer:
    """The connection is reset (RST) instead of answered."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True

    return answer


def redirect_answer(location: str, status: int = 302) -> Answer:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(status)
        handler.send_header("Location", location)
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return answer


# --- servers ------------------------------------------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up mid-answer: nothing to print (tests assert on captured output)


@contextmanager
def _serve(respond: Callable[[BaseHTTPRequestHandler, str], None]) -> Iterator[tuple[str, RequestLog]]:
    log = RequestLog()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            path = unquote(urlparse(self.path).path)
            log.record(path, self.headers.get("Authorization"))
            respond(self, path)

    server = _QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        _stopping.set()
        server.shutdown()
        server.server_close()
        time.sleep(0.01)  # stalled answers see the event before the next server clears it
        _stopping.clear()


@contextmanager
def origin_stand_in(routes: dict[str, Answer]) -> Iterator[tuple[str, RequestLog]]:
    """Another origin: answers the paths in `routes`, 404 for the rest; yields (base URL, request log)."""

    def respond(handler: BaseHTTPRequestHandler, path: str) -> None:
        answer = routes.get(path)
        if answer is None:
            send_json(handler, 404, {"error": "not found"})
        else:
            answer(handler)

    with _serve(respond) as served:
        yield served


@contextmanager
def hub_stand_in(
    repos: dict[str, HubRepo], routes: dict[str, Answer] | None = None
) -> Iterator[tuple[str, RequestLog]]:
    """Serve the repositories on 127.0.0.1 (and `routes`, exact paths answered as given); yields
    (endpoint URL, request log)."""

    def respond(handler: BaseHTTPRequestHandler, path: str) -> None:
        if routes and path in routes:
            routes[path](handler)
            return
        if path.startswith("/api/models/"):
            repo_id, _, _revision = path.removeprefix("/api/models/").partition("/revision/")
            route = "info"
        elif "/resolve/" in path:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            route = "config" if rest.endswith("/config.json") else "other"
        else:
            send_json(handler, 404, {"error": "not found"})
            return
        repo = repos.get(repo_id)
        if repo is None:
            send_json(handler, 404, {"error": "Repository not found"})
            return
        if repo.gated and route == "config":
            token = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
            if not token:
                send_json(handler, 401, {"error": "Access to this model is restricted"})
                return
            if token not in repo.granted_tokens:
                send_json(handler, 403, {"error": "not in the authorized list"})
                return
        if route == "info":
            if repo.info_answer is not None:
                repo.info_answer(handler)
                return
            body: dict[str, Any] = {
                "id": repo_id,
                "sha": repo.sha,
                "gated": repo.gated,
                "siblings": [{"rfilename": n, "size": s} for n, s in repo.files.items()],
            }
            if repo.parameters is not None:
                body["safetensors"] = {"total": repo.parameters}
            send_json(handler, 200, body)
        elif route == "config":
            if repo.config_answer is not None:
                repo.config_answer(handler)
            else:
                send_json(handler, 200, repo.config)
        else:
            send_json(handler, 404, {"error": "Entry not found"})

    with _serve(respond) as served:
        yield served
