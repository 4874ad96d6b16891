"""Encoder for AWS's ``application/vnd.amazon.eventstream`` messages.

Layout of one message (big-endian): total length (4 bytes), headers length (4), CRC32 of those
8 bytes (4), headers, payload, CRC32 of everything before it (4). A header is name length (1),
name, value type (1; 7 = string), value length (2), value. botocore's
``botocore.eventstream.EventStreamBuffer`` is the decoder this must satisfy.
"""

from __future__ import annotations

import json
import struct
import zlib

_STRING = 7


def _header(name: str, value: str) -> bytes:
    raw_name = name.encode()
    raw_value = value.encode()
    return (
        struct.pack("!B", len(raw_name)) + raw_name + struct.pack("!BH", _STRING, len(raw_value)) + raw_value
    )


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    header_bytes = b"".join(_header(k, v) for k, v in headers.items())
    total = 12 + len(header_bytes) + len(payload) + 4
    prelude = struct.pack("!II", total, len(header_bytes))
    prelude += struct.pack("!I", zlib.crc32(prelude) & 0xFFFFFFFF)
    message = prelude + header_bytes + payload
    return message + struct.pack("!I", zlib.crc32(message) & 0xFFFFFFFF)


def payload_part(data: bytes) -> bytes:
    """A PayloadPart event. ``Bytes`` is the event payload (``eventpayload`` blob): raw bytes, not JSON."""
    return encode_message(
        {":event-type": "PayloadPart", ":content-type": "application/octet-stream", ":message-type": "event"},
        data,
    )


def exception_event(exception_type: str, message: str, error_code: str | None = None) -> bytes:
    """ModelStreamError / InternalStreamFailure: an ``exception`` message with a JSON body."""
    body: dict[str, str] = {"Message": message}
    if error_code:
        body["ErrorCode"] = error_code
    return encode_message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        json.dumps(body).encode(),
    )
