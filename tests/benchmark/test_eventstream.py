"""The event-stream decoder against botocore's own, on random messages cut at random places."""

from __future__ import annotations

import struct
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from speculative_infra.benchmark.transports.eventstream import EventStreamDecoder, EventStreamError

from .stand_ins.eventstream import encode_message, exception_event, payload_part

NAMES = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)
VALUES = st.one_of(
    st.tuples(st.just(0), st.just(b"")),  # true
    st.tuples(st.just(1), st.just(b"")),  # false
    st.tuples(st.just(2), st.integers(-128, 127).map(lambda v: struct.pack("!b", v))),
    st.tuples(st.just(3), st.integers(-(2**15), 2**15 - 1).map(lambda v: struct.pack("!h", v))),
    st.tuples(st.just(4), st.integers(-(2**31), 2**31 - 1).map(lambda v: struct.pack("!i", v))),
    st.tuples(st.just(5), st.integers(-(2**63), 2**63 - 1).map(lambda v: struct.pack("!q", v))),
    st.tuples(st.just(6), st.binary(max_size=40).map(lambda b: struct.pack("!H", len(b)) + b)),
    st.tuples(
        st.just(7), st.text(max_size=30).map(lambda t: struct.pack("!H", len(t.encode())) + t.encode())
    ),
    st.tuples(st.just(8), st.integers(0, 2**62).map(lambda v: struct.pack("!q", v))),
    st.tuples(st.just(9), st.uuids().map(lambda u: u.bytes)),
)


def _message(headers: list[tuple[str, tuple[int, bytes]]], payload: bytes) -> bytes:
    raw = b"".join(
        struct.pack("!B", len(name.encode())) + name.encode() + struct.pack("!B", kind) + value
        for name, (kind, value) in headers
    )
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack("!II", total, len(raw))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack("!I", zlib.crc32(body))


def _botocore(stream: bytes) -> list[tuple[dict[str, object], bytes]]:
    buffer = EventStreamBuffer()
    buffer.add_data(stream)
    return [(dict(m.headers), m.payload) for m in buffer]


def _ours(stream: bytes, cuts: list[int]) -> list[tuple[dict[str, object], bytes]]:
    decoder = EventStreamDecoder()
    out: list[tuple[dict[str, object], bytes]] = []
    previous = 0
    for cut in [*sorted(set(cuts)), len(stream)]:
        out += [(dict(h), p) for h, p in decoder.feed(stream[previous:cut])]
        previous = cut
    return out


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(
        st.tuples(
            st.lists(st.tuples(NAMES, VALUES), max_size=6, unique_by=lambda h: h[0]), st.binary(max_size=200)
        ),
        min_size=1,
        max_size=5,
    ),
    data=st.data(),
)
def test_same_messages_as_botocore_however_the_bytes_arrive(messages, data) -> None:
    stream = b"".join(_message(h, p) for h, p in messages)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8))
    assert _ours(stream, cuts) == _botocore(stream)


def test_the_stand_ins_sagemaker_events() -> None:
    stream = payload_part(b"data: {}\n\n") + exception_event("ModelStreamError", "boom", "StreamBroken")
    [(part, data), (error, body)] = _ours(stream, [3, 17])
    assert part[":event-type"] == "PayloadPart" and data == b"data: {}\n\n"
    assert error[":message-type"] == "exception" and error[":exception-type"] == "ModelStreamError"
    assert b"StreamBroken" in body


@pytest.mark.parametrize("offset", [2, 9, -2])
def test_a_flipped_bit_is_a_checksum_error(offset: int) -> None:
    stream = bytearray(encode_message({":message-type": "event"}, b"payload"))
    stream[offset] ^= 0x01
    with pytest.raises(EventStreamError, match=r"checksum|lengths"):
        list(EventStreamDecoder().feed(bytes(stream)))
