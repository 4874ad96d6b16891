"""The stand-in's event-stream encoder satisfies botocore's own decoder (else the tests prove nothing)."""

from __future__ import annotations

import json

import pytest
from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

from .stand_ins.eventstream import exception_event, payload_part


def decode(data: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    return [(dict(m.headers), m.payload) for m in buffer]


def test_payload_part_round_trips_through_botocore() -> None:
    raw = "data: é\n\n".encode()
    [(headers, payload)] = decode(payload_part(raw))
    assert headers[":event-type"] == "PayloadPart"
    assert headers[":message-type"] == "event"
    assert payload == raw


def test_exception_event_round_trips() -> None:
    [(headers, payload)] = decode(exception_event("ModelStreamError", "boom", "StreamBroken"))
    assert headers[":message-type"] == "exception"
    assert headers[":exception-type"] == "ModelStreamError"
    assert json.loads(payload) == {"Message": "boom", "ErrorCode": "StreamBroken"}


def test_corrupted_message_fails_crc() -> None:
    message = bytearray(payload_part(b"abc"))
    message[-5] ^= 0xFF
    with pytest.raises(ChecksumMismatch):
        decode(bytes(message))
