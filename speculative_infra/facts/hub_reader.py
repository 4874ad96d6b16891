"""Read a repository's config.json, size and gated flag from the Hugging Face Hub or a local folder.

The Hub is reached over its public HTTP API (the endpoint is HF_ENDPOINT, as huggingface_hub reads it):
  GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true  -> gated flag, files and their sizes
  GET {endpoint}/{repo}/resolve/{revision}/config.json            -> the config
Both accept a token (Authorization: Bearer) for gated repositories.

The Hub, a mirror named by HF_ENDPOINT or anything between may answer with anything, so:
- the token goes only to the endpoint's origin (scheme, host and port): a redirect elsewhere, or from
  https to http, drops it for the rest of the chain (as `requests` does); at most MAX_REDIRECTS redirects,
  to http or https URLs only;
- the whole fetch (every request and redirect together) has a deadline: each socket operation waits at
  most the time left, and the body is read in chunks with the deadline checked between them, so a server
  that trickles bytes cannot hold the command;
- answers are read up to a size (MAX_LISTING_BYTES, safe_files.MAX_CONFIG_BYTES) and parsed by
  safe_files.parse_json (no NaN or infinity, bounded integers and nesting); wrong JSON types, broken
  HTTP and cut connections are FactsFetchError, never an exception of the transport.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import stat
import string
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from email.message import Message
from pathlib import Path
from typing import IO, Any

from speculative_infra import safe_files
from speculative_infra.facts.hub_config import (
    MAX_PARAMETERS,
    MAX_WEIGHTS_BYTES,
    ConfigError,
    FetchedFacts,
    IdError,
    facts_from_config,
    validate_repo_id,
    validate_revision,
)

DEFAULT_ENDPOINT = "https://huggingface.co"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")

# Limits of the fetch (docs/security.md, "Hostile input").
DEFAULT_DEADLINE_S = 60.0  # the whole fetch: two small JSON answers take well under a second on the Hub
DEFAULT_TIMEOUT_S = 30.0  # one socket operation (connect, one read), within the deadline
MAX_DEADLINE_S = 3600.0
MAX_REDIRECTS = 5  # the Hub redirects at most twice (a renamed repository, then its CDN)
# The file listing of a repository: ~100 bytes a file; the largest repositories list a few thousand files
# (~1 MiB). 16 MiB leaves room for 100,000 files and still bounds the memory a hostile answer can take.
MAX_LISTING_BYTES = 16 * safe_files.MIB
MAX_CONFIG_BYTES = safe_files.MAX_CONFIG_BYTES
_CHUNK_BYTES = 64 * 1024
_REDIRECT_CODES = (301, 302, 303, 307, 308)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class FactsFetchError(Exception):
    """The repository could not be read, or its config lacks what the rules need.

    kind: "access" (401/403: gated or private), "not_found", "network" (no connection, or the deadline
    passed), "answer" (not JSON, the wrong JSON, broken HTTP, other HTTP errors), "config" (read, but
    without the facts the checks need) or "input" (a repository id, revision, endpoint or folder that
    cannot be used).
    """

    def __init__(self, message: str, kind: str = "answer") -> None:
        # A server's words (a status line, a reason phrase) may hold escape sequences: shown escaped.
        super().__init__("".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in message))
        self.kind = kind


def check_ids(repo_id: str, revision: str) -> None:
    """FactsFetchError (kind "input") unless the id and revision are what the Hub accepts."""
    try:
        validate_repo_id(repo_id)
        validate_revision(revision)
    except IdError as err:
        raise FactsFetchError(str(err), "input") from None


def _origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; ValueError for anything else."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"{url!r} is not an http or https URL")
    return scheme, parts.hostname.lower(), parts.port or _DEFAULT_PORTS[scheme]


def check_endpoint(endpoint: str) -> str:
    """The endpoint without a trailing '/'; FactsFetchError unless it is an http(s) URL of a host."""
    try:
        _origin(endpoint)
        parts = urllib.parse.urlsplit(endpoint)
    except ValueError:
        parts = None
    if (
        parts is None
        or parts.query
        or parts.fragment
        or parts.username is not None
        or any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in endpoint)
    ):
        raise FactsFetchError(
            f"HF_ENDPOINT {endpoint[:200]!r} cannot be used; allowed: an http:// or https:// URL of a host "
            "(with an optional path), without credentials, query or fragment",
            "input",
        )
    return endpoint.rstrip("/")


class _Deadline:
    """The end of the whole fetch, and the socket of the request in flight (so each read waits at most the
    time left)."""

    def __init__(self, seconds: float, per_operation: float) -> None:
        self.seconds = seconds
        self.per_operation = per_operation
        self.end = time.monotonic() + seconds
        self.sock: socket.socket | None = None
        self._watchdog: threading.Timer | None = None

    def watch(self, sock: socket.socket) -> None:
        """Shut the connection down when the deadline passes. Socket timeouts bound each read, not a server
        that sends its status line and headers a byte at a time (http.client reads those itself)."""
        self.stop()
        self.sock = sock
        self._watchdog = threading.Timer(max(0.0, self.end - time.monotonic()), _shut, (sock,))
        self._watchdog.daemon = True
        self._watchdog.start()

    def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def remaining(self, url: str) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            raise FactsFetchError(
                f"{url}: no complete answer within {self.seconds:g} s, the deadline of the whole fetch; "
                "the Hub is slow or the answer stalled",
                "network",
            )
        return min(left, self.per_operation)

    def arm(self, url: str) -> None:
        """Before a read: the socket waits at most the time left."""
        left = self.remaining(url)
        if self.sock is not None:
            self.sock.settimeout(left)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing left to stop
        sock.shutdown(socket.SHUT_RDWR)


class _HTTPConnection(http.client.HTTPConnection):
    deadline: _Deadline

    def connect(self) -> None:
        super().connect()
        self.deadline.watch(self.sock)


class _HTTPSConnection(http.client.HTTPSConnection):
    deadline: _Deadline

    def connect(self) -> None:
        super().connect()
        self.deadline.watch(self.sock)


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        def connection(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            conn = _HTTPConnection(host, **kwargs)
            conn.deadline = self._deadline
            return conn

        return self.do_open(connection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        def connection(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            conn = _HTTPSConnection(host, **kwargs)  # the default context: certificates verified
            conn.deadline = self._deadline
            return conn

        return self.do_open(connection, req)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects come back as HTTPError: _Session follows them itself, deciding where the token goes."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Message,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


class _Session:
    def __init__(self, endpoint: str, token: str | None, deadline: _Deadline) -> None:
        self.origin = _origin(endpoint)
        self.token = token
        self.deadline = deadline
        self.opener = urllib.request.build_opener(
            _NoRedirects(), _HTTPHandler(deadline), _HTTPSHandler(deadline)
        )

    def get_json(self, url: str, *, max_bytes: int, what: str) -> Any:
        data = self._get(url, max_bytes=max_bytes, what=what)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise FactsFetchError(
                f"{url}: the {what} is not UTF-8 (byte {data[err.start]:#04x} at offset {err.start})"
            ) from None
        try:
            return safe_files.parse_json(text, source=url)
        except ValueError as err:
            raise FactsFetchError(f"the {what} cannot be used: {err}") from None

    def _get(self, url: str, *, max_bytes: int, what: str) -> bytes:
        current = url
        with_token = self.token is not None
        for _ in range(MAX_REDIRECTS + 1):
            # Once a redirect has left the endpoint's origin the token stays off, even back on the Hub.
            with_token = with_token and _origin(current) == self.origin
            request = urllib.request.Request(current, headers={"Accept": "application/json"})
            if with_token:
                request.add_unredirected_header("Authorization", f"Bearer {self.token}")
            try:
                timeout = self.deadline.remaining(current)
                self.deadline.sock = None
                with self.opener.open(request, timeout=timeout) as response:
                    return self._read(response, current, max_bytes, what)
            except urllib.error.HTTPError as err:
                try:
                    location = err.headers.get("Location") if err.code in _REDIRECT_CODES else None
                finally:
                    err.close()
                if location is None:
                    raise self._http_error(current, err.code, str(err.reason), bool(self.token)) from None
                current = _redirect_target(current, location, err.code)
            except FactsFetchError:
                raise
            except urllib.error.URLError as err:
                if isinstance(err.reason, TimeoutError):
                    self.deadline.remaining(current)  # the deadline's message where it has passed
                raise FactsFetchError(f"{current}: cannot connect ({err.reason})", "network") from None
            except TimeoutError:
                self.deadline.remaining(current)
                raise FactsFetchError(
                    f"{current}: no answer within {self.deadline.per_operation:g} s", "network"
                ) from None
            except http.client.HTTPException as err:
                self.deadline.remaining(current)  # shut down by the deadline's watchdog: say so
                raise FactsFetchError(
                    f"{current}: not a valid HTTP answer ({type(err).__name__}: {str(err)[:200]})"
                ) from None
            except OSError as err:
                self.deadline.remaining(current)
                raise FactsFetchError(f"{current}: the connection failed ({err})", "network") from None
            except ValueError as err:
                raise FactsFetchError(f"{current}: cannot be fetched ({str(err)[:200]})") from None
        raise FactsFetchError(f"{url}: more than {MAX_REDIRECTS} redirects; allowed: at most {MAX_REDIRECTS}")

    def _read(self, response: http.client.HTTPResponse, url: str, max_bytes: int, what: str) -> bytes:
        too_large = (
            f"{url}: the {what} is larger than {_size(max_bytes)}; allowed: at most {_size(max_bytes)}"
        )
        # Content-Length, where it counts (http.client ignores it beside chunked transfer): refused at once
        # when above the limit, compared with what arrived otherwise. Not trusted to stop reading.
        declared_text = (response.headers.get("Content-Length") or "").strip()
        declared = None
        if declared_text.isascii() and declared_text.isdigit() and not response.chunked:
            if len(declared_text) > 20 or int(declared_text) > max_bytes:
                raise FactsFetchError(too_large)
            declared = int(declared_text)
        chunks: list[bytes] = []
        total = 0
        while True:
            self.deadline.arm(url)
            chunk = response.read1(_CHUNK_BYTES)
            if not chunk:
                break
            total += len(chunk)
            if total > max_bytes:
                raise FactsFetchError(too_large)
            chunks.append(chunk)
        if declared is not None and total != declared:
            self.deadline.remaining(url)  # ended by the deadline's watchdog: say that, not "cut short"
            raise FactsFetchError(f"{url}: the {what} was cut short ({total} of {declared} bytes arrived)")
        return b"".join(chunks)

    @staticmethod
    def _http_error(url: str, code: int, reason: str, has_token: bool) -> FactsFetchError:
        if code in (401, 403):
            hint = "the repository is gated or private: set HF_TOKEN to a token that has access"
            if has_token:
                hint = "the token has no access: accept the model's licence on its Hub page with that account"
            return FactsFetchError(f"{url}: HTTP {code}; {hint}", "access")
        if code == 404:
            return FactsFetchError(f"{url}: HTTP 404; check the repository id and revision", "not_found")
        if 300 <= code < 400:
            return FactsFetchError(f"{url}: HTTP {code} without a Location to follow")
        return FactsFetchError(f"{url}: HTTP {code} {reason[:200]}")


def _redirect_target(url: str, location: str, code: int) -> str:
    # Quoted as urllib's own redirect handler does, so control characters cannot reach the request line.
    target = urllib.parse.quote(
        urllib.parse.urljoin(url, location.strip()), encoding="iso-8859-1", safe=string.punctuation
    )
    try:
        _origin(target)
    except ValueError:
        raise FactsFetchError(
            f"{url}: HTTP {code} redirects to {target[:200]!r}; allowed: http:// and https:// URLs only"
        ) from None
    return target


def _size(n: int) -> str:
    return f"{n // safe_files.MIB} MiB" if n >= safe_files.MIB and n % safe_files.MIB == 0 else f"{n} bytes"


def _weights_bytes(sizes: dict[str, int]) -> int | None:
    # Prefer safetensors: repositories often carry the same weights in two formats.
    for suffixes in ((".safetensors",), _WEIGHT_SUFFIXES):
        total = sum(size for name, size in sizes.items() if name.endswith(suffixes))
        if total:
            return total
    return None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _listing_facts(info: Any, url: str) -> tuple[dict[str, int], int | None, bool | None, str | None]:
    """(file sizes, parameter count, gated, commit) from the Hub's model info; FactsFetchError for the wrong
    JSON."""

    def wrong(where: str, value: Any, allowed: str) -> FactsFetchError:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:80] + "..."
        return FactsFetchError(f"{url}: the file listing's {where} is {shown}; allowed: {allowed}")

    if not isinstance(info, dict):
        raise wrong("answer", info, "a JSON object")
    siblings = info.get("siblings")
    if siblings is None:
        siblings = []
    if not isinstance(siblings, list):
        raise wrong("'siblings'", siblings, "a list of files")
    sizes: dict[str, int] = {}
    for index, sibling in enumerate(siblings):
        if not isinstance(sibling, dict) or not isinstance(sibling.get("rfilename"), str):
            raise wrong(f"file {index}", sibling, "an object with a string 'rfilename'")
        size = sibling.get("size")
        if size is None:
            continue  # listed without blobs: the size is not known
        if not _is_count(size) or size > MAX_WEIGHTS_BYTES:
            raise wrong(
                f"size of {sibling['rfilename']!r}", size, f"an integer from 0 to {MAX_WEIGHTS_BYTES}"
            )
        sizes[sibling["rfilename"]] = sizes.get(sibling["rfilename"], 0) + size
    safetensors = info.get("safetensors")
    if safetensors is None:
        safetensors = {}
    if not isinstance(safetensors, dict):
        raise wrong("'safetensors'", safetensors, "an object")
    parameters = safetensors.get("total")
    if parameters is not None and (not _is_count(parameters) or not 1 <= parameters <= MAX_PARAMETERS):
        raise wrong("'safetensors.total'", parameters, f"an integer from 1 to {MAX_PARAMETERS}")
    gated = info.get("gated")
    if gated is not None and gated not in (True, False, "auto", "manual"):
        raise wrong("'gated'", gated, "false, true, 'auto' or 'manual'")
    sha = info.get("sha")
    if sha is not None:
        if not isinstance(sha, str):
            raise wrong("'sha'", sha, "a commit id")
        try:
            validate_revision(sha)
        except IdError:
            raise wrong("'sha'", sha, "a commit id") from None
    return (
        sizes,
        parameters,
        None if gated is None else gated is not False,  # False, "auto" or "manual"
        sha or None,
    )


def read_hub_repository(
    repo_id: str,
    revision: str = "main",
    *,
    endpoint: str = DEFAULT_ENDPOINT,
    token: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    deadline: float = DEFAULT_DEADLINE_S,
) -> FetchedFacts:
    """The repository's facts; `deadline` seconds for the whole fetch, `timeout` for one socket operation."""
    check_ids(repo_id, revision)
    base = check_endpoint(endpoint)
    if token is not None:
        token = token.strip() or None  # a token file's trailing newline, as huggingface_hub drops it
    if token is not None and not all(0x21 <= ord(ch) <= 0x7E for ch in token):
        # Never shown: the message must not carry the token.
        raise FactsFetchError(
            "HF_TOKEN holds spaces, control or non-ASCII characters; copy the token again", "input"
        )
    session = _Session(base, token, _Deadline(deadline, timeout))
    try:
        return _fetch(session, base, repo_id, revision)
    finally:
        session.deadline.stop()


def _fetch(session: _Session, base: str, repo_id: str, revision: str) -> FetchedFacts:
    quoted_repo = urllib.parse.quote(repo_id, safe="/")
    quoted_rev = urllib.parse.quote(revision, safe="")
    info_url = f"{base}/api/models/{quoted_repo}/revision/{quoted_rev}?blobs=true"
    info = session.get_json(info_url, max_bytes=MAX_LISTING_BYTES, what="file listing")
    sizes, parameters, gated, sha = _listing_facts(info, info_url)
    config_url = f"{base}/{quoted_repo}/resolve/{quoted_rev}/config.json"
    config = session.get_json(config_url, max_bytes=MAX_CONFIG_BYTES, what="config.json")
    if not isinstance(config, dict):
        raise FactsFetchError(f"{config_url}: config.json is not a JSON object", "config")
    try:
        return facts_from_config(
            config,
            repo_id=repo_id,
            revision=sha or revision,
            origin=f"{base}/{repo_id}",
            weights_bytes=_weights_bytes(sizes),
            parameters=parameters,
            gated=gated,
        )
    except ConfigError as err:
        raise FactsFetchError(str(err), "config") from None


def _local_weights(folder: Path) -> dict[str, int]:
    """Sizes of the weight files directly in the folder: regular files only (a symbolic link is followed to
    its target, as in the Hub's cache; FIFOs, devices, broken links and link loops are skipped)."""
    sizes: dict[str, int] = {}
    with os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.endswith(_WEIGHT_SUFFIXES):
                continue
            try:
                info = os.stat(entry.path)  # follows links; a loop is ELOOP, an OSError
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                sizes[entry.name] = info.st_size
    return sizes


def read_local_folder(folder: Path, repo_id: str, *, gated: bool | None = None) -> FetchedFacts:
    """A downloaded repository (or any folder with its config.json and weights)."""
    check_ids(repo_id, "main")
    try:
        is_folder = stat.S_ISDIR(os.stat(folder).st_mode)
    except OSError as err:
        raise FactsFetchError(
            f"--from-folder {folder}: cannot be read ({err.strerror or err})", "input"
        ) from None
    if not is_folder:
        raise FactsFetchError(
            f"--from-folder {folder}: not a directory; name the folder that holds config.json", "input"
        )
    config_path = folder / "config.json"
    try:
        config = safe_files.read_json(config_path, max_bytes=MAX_CONFIG_BYTES, what="config.json")
        sizes = _local_weights(folder)
    except safe_files.InputFileError as err:
        raise FactsFetchError(str(err), "config") from None
    except OSError as err:
        raise FactsFetchError(
            f"--from-folder {folder}: cannot be read ({err.strerror or err})", "input"
        ) from None
    if not isinstance(config, dict):
        raise FactsFetchError(f"{config_path}: not a JSON object", "config")
    try:
        return facts_from_config(
            config,
            repo_id=repo_id,
            revision="local",
            origin=str(folder.resolve()),
            weights_bytes=_weights_bytes(sizes),
            gated=gated,
        )
    except ConfigError as err:
        raise FactsFetchError(str(err), "config") from None
