"""A local stand-in for the Hugging Face Hub's HTTP API: the two routes `facts fetch` reads.

  GET /api/models/{repo}/revision/{revision}?blobs=true -> {"sha", "gated", "siblings": [{rfilename, size}],
                                                           "safetensors": {"total"}}
  GET /{repo}/resolve/{revision}/config.json            -> the config
Gated repositories answer 401 without a bearer token, 403 with one that was not granted access.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse


@dataclass
class HubRepo:
    config: dict[str, Any]
    files: dict[str, int]  # file name -> size in bytes
    parameters: int | None = None
    gated: bool | str = False
    sha: str = "0123456789abcdef0123456789abcdef01234567"
    granted_tokens: set[str] = field(default_factory=set)


@contextmanager
def hub_stand_in(repos: dict[str, HubRepo]) -> Iterator[tuple[str, list[str]]]:
    """Serve the repositories on 127.0.0.1; yields (endpoint URL, request log)."""
    log: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            path = unquote(urlparse(self.path).path)
            log.append(path)
            if path.startswith("/api/models/"):
                repo_id, _, _revision = path.removeprefix("/api/models/").partition("/revision/")
                route = "info"
            elif "/resolve/" in path:
                repo_id, _, rest = path.lstrip("/").partition("/resolve/")
                route = "config" if rest.endswith("/config.json") else "other"
            else:
                self._send(404, {"error": "not found"})
                return
            repo = repos.get(repo_id)
            if repo is None:
                self._send(404, {"error": "Repository not found"})
                return
            if repo.gated and route == "config":
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                if not token:
                    self._send(401, {"error": "Access to this model is restricted"})
                    return
                if token not in repo.granted_tokens:
                    self._send(403, {"error": "not in the authorized list"})
                    return
            if route == "info":
                body: dict[str, Any] = {
                    "id": repo_id,
                    "sha": repo.sha,
                    "gated": repo.gated,
                    "siblings": [{"rfilename": n, "size": s} for n, s in repo.files.items()],
                }
                if repo.parameters is not None:
                    body["safetensors"] = {"total": repo.parameters}
                self._send(200, body)
            elif route == "config":
                self._send(200, repo.config)
            else:
                self._send(404, {"error": "Entry not found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", log
    finally:
        server.shutdown()
        server.server_close()
