"""An incremental decoder for AWS's ``application/vnd.amazon.eventstream`` framing.

The SageMaker asyncio transport decodes every streamed message on the event loop, where each
microsecond is taken from every other open stream. botocore's ``EventStreamBuffer`` builds several
objects per message; this decoder does the same checks (prelude and message CRC32, lengths) with
``struct`` and ``zlib`` and returns plain tuples. tests/benchmark/test_eventstream.py holds it to
botocore's decoder on random messages.

Message layout (big-endian): total length (4), headers length (4), prelude CRC32 (4), headers,
payload, message CRC32 (4). A header: name length (1), name, value type (1), value.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

_PRELUDE = struct.Struct("!III")
_U8, _I8, _I16, _I32, _I64, _U16 = (struct.Struct(f) for f in ("!B", "!b", "!h", "!i", "!q", "!H"))
_MAX_MESSAGE = 16 * 1024 * 1024  # the format's own limit
_MAX_HEADERS = 128 * 1024

HeaderValue = bool | int | bytes | str


class EventStreamError(ValueError):
    """The bytes are not a valid event stream (length, checksum or header type)."""


def _headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    at, end = 0, len(data)
    while at < end:
        name_length = data[at]
        name = data[at + 1 : at + 1 + name_length].decode("utf-8")
        at += 1 + name_length
        kind = data[at]
        at += 1
        value: HeaderValue
        if kind == 7 or kind == 6:  # string, byte array
            length = _U16.unpack_from(data, at)[0]
            raw = data[at + 2 : at + 2 + length]
            value = raw.decode("utf-8") if kind == 7 else bytes(raw)
            at += 2 + length
        elif kind == 0 or kind == 1:
            value = kind == 0
        elif kind == 2:
            value = _I8.unpack_from(data, at)[0]
            at += 1
        elif kind == 3:
            value = _I16.unpack_from(data, at)[0]
            at += 2
        elif kind == 4:
            value = _I32.unpack_from(data, at)[0]
            at += 4
        elif kind == 5 or kind == 8:  # long, timestamp (milliseconds since the epoch)
            value = _I64.unpack_from(data, at)[0]
            at += 8
        elif kind == 9:  # UUID: its 16 bytes, as botocore returns it
            value = bytes(data[at : at + 16])
            at += 16
        else:
            raise EventStreamError(f"unknown header value type {kind}")
        headers[name] = value
    if at != end:
        raise EventStreamError("headers overrun their declared length")
    return headers


# Every PayloadPart of a stream carries the same header bytes: parse each distinct block once. The
# dicts are shared, so callers must not change them.
_HEADER_CACHE: dict[bytes, dict[str, HeaderValue]] = {}
_HEADER_CACHE_SIZE = 64


def _cached_headers(block: bytes) -> dict[str, HeaderValue]:
    headers = _HEADER_CACHE.get(block)
    if headers is None:
        headers = _headers(block)
        if len(_HEADER_CACHE) >= _HEADER_CACHE_SIZE:
            _HEADER_CACHE.clear()
        _HEADER_CACHE[block] = headers
    return headers


class EventStreamDecoder:
    """Feed network reads with :meth:`feed`; it yields ``(headers, payload)`` for each complete message."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> Iterator[tuple[dict[str, HeaderValue], bytes]]:
        buffer = self._buffer
        buffer += chunk
        start = 0
        available = len(buffer)
        try:
            while available - start >= 16:
                total, headers_length, prelude_crc = _PRELUDE.unpack_from(buffer, start)
                if zlib.crc32(buffer[start : start + 8]) != prelude_crc:
                    raise EventStreamError("prelude checksum mismatch")
                if total > _MAX_MESSAGE or headers_length > _MAX_HEADERS or total < 16 + headers_length:
                    raise EventStreamError(f"invalid lengths (message {total}, headers {headers_length})")
                if available - start < total:
                    break
                end = start + total
                message_crc = _I32.unpack_from(buffer, end - 4)[0] & 0xFFFFFFFF
                if zlib.crc32(buffer[start : end - 4]) != message_crc:
                    raise EventStreamError("message checksum mismatch")
                headers_end = start + 12 + headers_length
                headers = _cached_headers(bytes(buffer[start + 12 : headers_end]))
                yield headers, bytes(buffer[headers_end : end - 4])
                start = end
        finally:
            del buffer[:start]
