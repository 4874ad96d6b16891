"""The engine's HTTP/1.1 client against scripted servers: body framings, keep-alive, broken streams, TLS."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from speculative_infra.benchmark.clock import MonotonicClock
from speculative_infra.benchmark.transports.http1 import (
    ConnectionPool,
    HttpError,
    Origin,
    ParsePump,
    request_head,
)

Script = Callable[[bytes], list[bytes]]  # the request's bytes -> what the server writes, piece by piece


class Collect:
    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.data = bytearray()
        self.times: list[float] = []
        self.ended = False
        self.stop_after: int | None = None

    def head(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers

    def body(self, data: bytes, at: float) -> bool:
        self.data += data
        self.times.append(at)
        return self.stop_after is None or len(self.data) < self.stop_after

    def end(self, at: float) -> None:
        self.ended = True


async def _serve(script: Script, tls: ssl.SSLContext | None = None, close_after: bool = False):
    connections: list[int] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                body = await reader.readexactly(length)
                for piece in script(head + body):
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.001)
                if close_after:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
    return server, server.sockets[0].getsockname()[1], connections


async def _exchange(pool: ConnectionPool, sink: Collect, body: bytes = b"{}") -> None:
    head = request_head("POST", "/x", pool.origin, {"Content-Type": "application/json"}, len(body))
    await pool.exchange(head, body, sink, lambda at: None)


def _run(script: Script, requests: int = 1, **serve: object) -> tuple[list[Collect], int]:
    async def main() -> tuple[list[Collect], int]:
        server, port, connections = await _serve(script, **serve)  # type: ignore[arg-type]
        pool = ConnectionPool(Origin(f"http://127.0.0.1:{port}"), MonotonicClock(), connect_timeout_s=5)
        sinks = []
        for _ in range(requests):
            sink = Collect()
            await _exchange(pool, sink)
            sinks.append(sink)
        pool.close()
        server.close()
        return sinks, len(connections)

    return asyncio.run(main())


def test_chunked_body_with_extensions_and_trailers_split_anywhere() -> None:
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n"
    [sink], _ = _run(lambda request: [raw[i : i + 3] for i in range(0, len(raw), 3)])
    assert sink.status == 200 and bytes(sink.data) == b"hello world" and sink.ended


def test_keep_alive_reuses_the_connection_and_content_length_bodies_end_on_length() -> None:
    sinks, connections = _run(
        lambda request: [b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"], requests=3
    )
    assert [bytes(s.data) for s in sinks] == [b"abc"] * 3 and connections == 1


def test_connection_close_is_not_reused() -> None:
    reply = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
    sinks, connections = _run(lambda request: [reply], requests=2, close_after=True)
    assert [bytes(s.data) for s in sinks] == [b"ok", b"ok"] and connections == 2


def test_body_until_close_and_informational_responses_skipped() -> None:
    reply = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 404 Not Found\r\n\r\n", b"gone"]
    [sink], _ = _run(lambda request: reply, close_after=True)
    assert sink.status == 404 and bytes(sink.data) == b"gone" and sink.ended


def test_request_head_is_what_the_server_reads() -> None:
    seen: list[bytes] = []

    def script(request: bytes) -> list[bytes]:
        seen.append(request)
        return [b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"]

    _run(script)
    head, _, body = seen[0].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /x HTTP/1.1" and body == b"{}"
    assert "Content-Length: 2" in lines and "Content-Type: application/json" in lines
    assert any(line.startswith("Host: 127.0.0.1:") for line in lines)


@pytest.mark.parametrize(
    ("pieces", "started"),
    [
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"], True),  # cut inside a chunk
        ([b"garbage\r\n\r\n"], False),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], False),
    ],
)
def test_broken_or_invalid_responses_raise(pieces: list[bytes], started: bool) -> None:
    with pytest.raises(HttpError) as info:
        _run(lambda request: pieces, close_after=True)
    assert info.value.started is started


def test_a_reader_that_stops_gets_no_more_bytes_and_the_connection_is_dropped() -> None:
    async def main() -> tuple[bytes, int]:
        raw = (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"".join(b"1\r\nx\r\n" for _ in range(5))
            + b"0\r\n\r\n"
        )
        server, port, connections = await _serve(
            lambda request: [raw[i : i + 8] for i in range(0, len(raw), 8)]
        )
        pool = ConnectionPool(Origin(f"http://127.0.0.1:{port}"), MonotonicClock(), connect_timeout_s=5)
        first = Collect()
        first.stop_after = 2
        await _exchange(pool, first)
        await _exchange(pool, Collect())
        pool.close()
        server.close()
        return bytes(first.data), len(connections)

    data, connections = asyncio.run(main())
    assert data == b"xx" and connections == 2


def test_connecting_nowhere_is_a_connect_error() -> None:
    async def main() -> None:
        pool = ConnectionPool(Origin("http://127.0.0.1:9"), MonotonicClock(), connect_timeout_s=2)
        await _exchange(pool, Collect())

    with pytest.raises(HttpError) as info:
        asyncio.run(main())
    assert info.value.connect and not info.value.started


def test_origin_host_header_follows_the_signers_rule() -> None:
    assert Origin("https://runtime.sagemaker.us-east-1.amazonaws.com").host_header == (
        "runtime.sagemaker.us-east-1.amazonaws.com"
    )
    assert Origin("https://example.com:8443/base/").host_header == "example.com:8443"
    assert Origin("http://127.0.0.1:80").host_header == "127.0.0.1"
    assert Origin("http://h:8000/prefix/").base_path == "/prefix"
    with pytest.raises(ValueError, match="not an http"):
        Origin("ftp://h")


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls_with_certificate_verification(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = _self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts it through the default context
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)

    async def main(host: str) -> bytes:
        server, port, _ = await _serve(
            lambda request: [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], tls=server_tls
        )
        pool = ConnectionPool(Origin(f"https://{host}:{port}"), MonotonicClock(), connect_timeout_s=5)
        sink = Collect()
        try:
            await _exchange(pool, sink)
        finally:
            pool.close()
            server.close()
        return bytes(sink.data)

    assert asyncio.run(main("localhost")) == b"ok"
    monkeypatch.delenv("SSL_CERT_FILE")  # without the trust anchor, verification refuses the server
    with pytest.raises(HttpError, match="CERTIFICATE_VERIFY_FAILED") as info:
        asyncio.run(main("localhost"))
    assert info.value.connect


def test_a_kept_alive_connection_closed_by_the_server_is_replaced_once() -> None:
    """The server's idle timeout closes the connection just as it is reused: the request goes out again."""

    async def main() -> tuple[list[bytes], int]:
        served: list[int] = []

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            served.append(1)
            first_connection = len(served) == 1
            count = 0
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                await reader.readexactly(int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0]))
                count += 1
                if first_connection and count == 2:
                    writer.close()  # closed instead of answering the second request on it
                    return
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = ConnectionPool(Origin(f"http://127.0.0.1:{port}"), MonotonicClock(), connect_timeout_s=5)
        bodies = []
        for _ in range(2):
            sink = Collect()
            await _exchange(pool, sink)
            bodies.append(bytes(sink.data))
        pool.close()
        server.close()
        return bodies, len(served)

    bodies, connections = asyncio.run(main())
    assert bodies == [b"ok", b"ok"] and connections == 2


def test_the_parse_pump_lets_the_loop_poll_between_slices() -> None:
    # Twenty connections with 0.2 ms of parsing each (4 ms in all): a callback queued during the first
    # slice (as a socket read would be) must run before the pump has worked through all of them.
    order: list[object] = []

    class Busy:
        def __init__(self, index: int) -> None:
            self.index = index

        def process(self) -> None:
            end = time.perf_counter() + 0.0002
            while time.perf_counter() < end:
                pass
            order.append(self.index)
            if self.index == 0:
                asyncio.get_running_loop().call_soon(order.append, "read")

    async def main() -> None:
        pump = ParsePump()
        for i in range(20):
            pump.add(Busy(i))  # type: ignore[arg-type]
        while len(order) < 21:
            await asyncio.sleep(0)

    asyncio.run(main())
    assert [i for i in order if i != "read"] == list(range(20))  # every one parsed, in order
    assert order.index("read") < 20  # polled before the last connection was parsed
