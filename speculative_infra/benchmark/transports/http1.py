"""A small HTTP/1.1 client on asyncio protocols, built for timing many streams on one core.

Why not aiohttp here: with a few hundred streams whose chunks arrive in the same millisecond, a client
that parses each chunk when it reads it timestamps the last stream's chunk only after parsing every
other one (milliseconds of error at C=256). Here ``data_received`` only stamps the time and keeps the
bytes; parsing runs later, in slices of at most half a millisecond (``ParsePump``) between which the
event loop polls its sockets again, so a read is never stamped after more than one slice of parsing of
earlier reads. Sends are one ``transport.write`` of pre-formatted bytes.

What it does: keep-alive connections per origin (plain or TLS; one resent on a new connection when the
server closed it as it was reused, before any answer), ``Content-Length``, chunked and until-close
bodies, 1xx responses skipped. What it does not: proxies, redirects, compression, HTTP/2
(the streaming endpoints it talks to need none of them).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit

from ..clock import Clock


class HttpError(Exception):
    """The connection broke or the response was not valid HTTP/1.1; ``started`` if body bytes had arrived."""

    def __init__(self, message: str, *, started: bool, connect: bool = False) -> None:
        super().__init__(message)
        self.started = started
        self.connect = connect


class ResponseSink(Protocol):
    """Receives one response. ``body`` returns False to stop reading (the connection is then closed)."""

    def head(self, status: int, headers: dict[str, str]) -> None: ...

    def body(self, data: bytes, at: float) -> bool: ...

    def end(self, at: float) -> None: ...


class Origin:
    """Where requests go: scheme, host and port of a base URL, and the Host header to send."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        default_port = 443 if self.tls else 80
        self.port = parts.port or default_port
        # As botocore signs it: the port only when it is not the scheme's default.
        self.host_header = self.host if self.port == default_port else f"{self.host}:{self.port}"
        self.base_path = parts.path.rstrip("/")


def request_head(method: str, path: str, origin: Origin, headers: dict[str, str], body_length: int) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {origin.host_header}", f"Content-Length: {body_length}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


_HEAD, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILER, _LENGTH, _UNTIL_CLOSE, _DONE = range(8)


class ParsePump:
    """Parses the stamped reads of many connections in slices, yielding to the event loop in between.

    asyncio runs every callback already queued before it polls sockets again: had each connection
    queued its own parse, a wave of 256 reads (tens of µs of parsing each) would hold the next wave's
    stamps back by milliseconds. One pump callback parses connections in arrival order until a slice
    of CPU time is spent, then queues itself behind the socket callbacks of the next poll.
    """

    SLICE_S = 0.0005

    def __init__(self) -> None:
        self._queue: deque[_Connection] = deque()
        self._scheduled = False

    def add(self, connection: _Connection) -> None:
        self._queue.append(connection)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        queue = self._queue
        # CPU time, not the run's clock: a slice of work, not a measurement.
        deadline = time.perf_counter() + self.SLICE_S
        while queue:
            queue.popleft().process()
            if time.perf_counter() >= deadline:
                break
        if queue:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._run)


class _Connection(asyncio.Protocol):
    def __init__(self, clock: Clock, on_free: Callable[[_Connection], None], pump: ParsePump) -> None:
        self._clock = clock
        self._on_free = on_free
        self._pump = pump
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._pending: list[tuple[float, bytes]] = []
        self._scheduled = False
        self._buffer = bytearray()
        self._state = _DONE
        self._remaining = 0
        self._keep_alive = True
        self._sink: ResponseSink | None = None
        self._done: asyncio.Future[None] | None = None
        self._started = False
        self.answered = False  # any byte of the current exchange's response arrived

    # asyncio callbacks ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        # Only the time and the bytes: the pump parses them once every socket ready now is stamped.
        self._pending.append((self._clock.now(), data))
        self.answered = True
        if not self._scheduled:
            self._scheduled = True
            self._pump.add(self)

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._pending:
            self.process()  # bytes that arrived with the close still count
        if self._state == _UNTIL_CLOSE and self._sink is not None:
            self._finish(self._clock.now())
        elif self._done is not None and not self._done.done():
            reason = f"{type(exc).__name__}: {exc}" if exc else "the server closed the connection"
            self._fail(HttpError(reason, started=self._started))

    # one exchange ------------------------------------------------------------------------------

    def start(self, head: bytes, body: bytes, sink: ResponseSink) -> asyncio.Future[None]:
        assert self.transport is not None and self._done is None
        self._sink = sink
        self._done = asyncio.get_running_loop().create_future()
        self._state = _HEAD
        self._started = False
        self.answered = False
        self._keep_alive = True
        self.transport.write(head + body)
        return self._done

    def abort(self) -> None:
        self.closed = True
        self._sink = None
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, error: HttpError) -> None:
        done = self._done
        self._sink, self._done = None, None
        self.abort()
        if done is not None and not done.done():
            done.set_exception(error)

    def _finish(self, at: float) -> None:
        sink, done = self._sink, self._done
        self._sink, self._done = None, None
        self._state = _DONE
        if sink is not None:
            sink.end(at)
        if not self._keep_alive or self.closed:
            self.abort()
        else:
            self._on_free(self)
        if done is not None and not done.done():
            done.set_result(None)

    def process(self) -> None:
        """Parse the stamped reads so far (the pump's call; a no-op when there are none)."""
        self._scheduled = False
        pending, self._pending = self._pending, []
        for at, data in pending:
            if self._sink is None:
                return  # nobody is reading (stopped or failed): the connection is being closed
            try:
                self._feed(at, data)
            except HttpError as error:
                self._fail(error)
                return

    def _feed(self, at: float, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while self._sink is not None:
            state = self._state
            if state == _HEAD:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    return
                status, headers = _parse_head(bytes(buffer[:end]))
                del buffer[: end + 4]
                if 100 <= status < 200:
                    continue
                self._keep_alive = headers.get("connection", "").lower() != "close"
                self._sink.head(status, headers)
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    self._state = _CHUNK_SIZE
                elif "content-length" in headers:
                    self._remaining = int(headers["content-length"])
                    self._state = _LENGTH
                else:
                    self._keep_alive = False
                    self._state = _UNTIL_CLOSE
            elif state == _CHUNK_SIZE:
                end = buffer.find(b"\r\n")
                if end < 0:
                    return
                try:
                    size = int(bytes(buffer[:end]).split(b";", 1)[0], 16)
                except ValueError:
                    raise HttpError("invalid chunk size", started=self._started) from None
                del buffer[: end + 2]
                self._remaining = size
                self._state = _CHUNK_DATA if size else _TRAILER
            elif state == _CHUNK_DATA:
                if not buffer:
                    return
                piece = bytes(buffer[: self._remaining])
                del buffer[: len(piece)]
                self._remaining -= len(piece)
                if self._remaining == 0:
                    self._state = _CHUNK_CRLF
                self._deliver(piece, at)
            elif state == _CHUNK_CRLF:
                if len(buffer) < 2:
                    return
                if buffer[:2] != b"\r\n":
                    raise HttpError("chunk not followed by CRLF", started=True)
                del buffer[:2]
                self._state = _CHUNK_SIZE
            elif state == _TRAILER:
                end = buffer.find(b"\r\n")
                if end < 0:
                    return
                del buffer[: end + 2]
                if end == 0:  # the empty line after the last chunk (and any trailers)
                    self._finish(at)
            elif state == _LENGTH:
                if self._remaining == 0:
                    self._finish(at)
                    return
                if not buffer:
                    return
                piece = bytes(buffer[: self._remaining])
                del buffer[: len(piece)]
                self._remaining -= len(piece)
                self._deliver(piece, at)
            elif state == _UNTIL_CLOSE:
                if buffer:
                    piece = bytes(buffer)
                    buffer.clear()
                    self._deliver(piece, at)
                return
            else:
                return

    def _deliver(self, data: bytes, at: float) -> None:
        assert self._sink is not None
        self._started = True
        if not self._sink.body(data, at):
            # The reader stopped (an error inside the stream): a half-read response cannot be reused.
            self._keep_alive = False
            self._finish(at)


def _parse_head(raw: bytes) -> tuple[int, dict[str, str]]:
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise HttpError(f"not an HTTP/1.1 status line: {lines[0][:80]!r}", started=False)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


class ConnectionPool:
    """Keep-alive connections to one origin; no limit (the load model bounds open requests)."""

    def __init__(self, origin: Origin, clock: Clock, *, connect_timeout_s: float) -> None:
        self.origin = origin
        self._clock = clock
        self._connect_timeout_s = connect_timeout_s
        self._idle: list[_Connection] = []
        self._pump = ParsePump()
        self._ssl = ssl.create_default_context() if origin.tls else None
        self.opened = 0

    def _release(self, connection: _Connection) -> None:
        self._idle.append(connection)

    async def _connection(self, reuse: bool = True) -> tuple[_Connection, bool]:
        """A connection, and whether it was reused from the idle ones."""
        while reuse and self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection, True
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout_s):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(self._clock, self._release, self._pump),
                    self.origin.host,
                    self.origin.port,
                    ssl=self._ssl,
                    server_hostname=self.origin.host if self._ssl else None,
                )
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise HttpError(
                f"cannot connect to {self.origin.host_header}: {exc}", started=False, connect=True
            ) from exc
        self.opened += 1
        return protocol, False

    async def exchange(
        self, head: bytes, body: bytes, sink: ResponseSink, on_sent: Callable[[float], None]
    ) -> None:
        """Send one request and feed its response to ``sink``; raises :class:`HttpError`.

        Cancelling the awaiting task closes the connection (a response cannot be abandoned halfway on it).
        A kept-alive connection the server closed just as it was reused (its idle timeout) fails before any
        answer: the request is sent once more on a new connection, as HTTP clients do.
        """
        connection, reused = await self._connection()
        while True:
            # Stamped as the bytes start to leave: TTFT then never undercuts the server's own (the server
            # may read the request before a stamp taken after the write returns).
            on_sent(self._clock.now())
            done = connection.start(head, body, sink)
            try:
                await done
                return
            except HttpError:
                if not reused or connection.answered:
                    raise
                connection, reused = await self._connection(reuse=False)
            except BaseException:
                if not done.done() or done.cancelled():
                    connection.abort()
                raise

    def close(self) -> None:
        for connection in self._idle:
            connection.abort()
        self._idle.clear()
