"""Incremental decoders: events survive any split of the byte stream, including inside UTF-8."""

from __future__ import annotations

import json
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from speculative_infra.benchmark.sse import JsonLinesDecoder, SseDecoder


def feed_all(decoder: SseDecoder | JsonLinesDecoder, pieces: list[bytes]) -> list[bytes]:
    events: list[bytes] = []
    for piece in pieces:
        events += decoder.feed(piece)
    return events + decoder.close()


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in pairwise(bounds)]


def test_vllm_stream_in_one_piece() -> None:
    body = b'data: {"a": 1}\n\ndata: {"b": "\xc3\xa9"}\n\ndata: [DONE]\n\n'
    assert feed_all(SseDecoder(), [body]) == [b'{"a": 1}', b'{"b": "\xc3\xa9"}', b"[DONE]"]


def test_crlf_cr_comments_and_multiline_data() -> None:
    body = b": keep-alive\r\ndata: one\r\ndata:two\r\n\r\nevent: x\rdata: three\r\r"
    assert feed_all(SseDecoder(), [body]) == [b"one\ntwo", b"three"]


def test_crlf_split_between_pieces() -> None:
    # A CR at the end of one piece and the LF at the start of the next are one line break.
    assert feed_all(SseDecoder(), [b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == [b"a", b"b"]


def test_unterminated_event_is_discarded_at_end_of_stream() -> None:
    assert feed_all(SseDecoder(), [b"data: done\n\ndata: partial"]) == [b"done"]


def test_multibyte_character_split_across_pieces() -> None:
    event = 'data: {"t": "漢🙂"}\n\n'.encode()
    for cut in range(1, len(event)):
        decoded = feed_all(SseDecoder(), [event[:cut], event[cut:]])
        assert [json.loads(e) for e in decoded] == [{"t": "漢🙂"}]


def test_json_lines_with_and_without_data_prefix() -> None:
    body = b'{"token": {"text": "a"}}\ndata:{"token": {"text": "b"}}\n\n{"generated_text": "ab"}'
    assert feed_all(JsonLinesDecoder(), [body]) == [
        b'{"token": {"text": "a"}}',
        b'{"token": {"text": "b"}}',
        b'{"generated_text": "ab"}',
    ]


_texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=150, deadline=None)
@given(
    payloads=st.lists(
        st.dictionaries(st.sampled_from(["content", "x", "é"]), _texts, max_size=3), min_size=1, max_size=8
    ),
    newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_sse_any_split_any_line_ending(
    payloads: list[dict[str, str]], newline: bytes, cuts: list[int]
) -> None:
    docs = [json.dumps(p, ensure_ascii=False).encode() for p in payloads]
    body = b"".join(b"data: " + d + newline + newline for d in docs)
    assert feed_all(SseDecoder(), split_at(body, cuts)) == docs


@settings(max_examples=100, deadline=None)
@given(
    payloads=st.lists(
        st.dictionaries(st.sampled_from(["token", "é"]), _texts, max_size=3), min_size=1, max_size=8
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_json_lines_any_split(payloads: list[dict[str, str]], cuts: list[int]) -> None:
    docs = [json.dumps(p, ensure_ascii=False).encode() for p in payloads]
    body = b"\n".join(docs) + b"\n"
    assert feed_all(JsonLinesDecoder(), split_at(body, cuts)) == docs


@pytest.mark.parametrize("decoder", [SseDecoder, JsonLinesDecoder])
def test_an_event_that_never_ends_is_refused_at_the_limit(decoder):
    from speculative_infra.benchmark.sse import MAX_EVENT_BYTES, BadChunk

    d = decoder()
    d.feed(b"data: " + b"x" * (MAX_EVENT_BYTES - 6))  # exactly the limit: still buffered
    with pytest.raises(BadChunk, match="without its end"):
        d.feed(b"x")


def test_an_event_of_endless_data_lines_is_refused():
    from speculative_infra.benchmark.sse import MAX_EVENT_BYTES, BadChunk

    d = SseDecoder()
    line = b"data: " + b"x" * 1_000_000 + b"\n"
    with pytest.raises(BadChunk):
        for _ in range(MAX_EVENT_BYTES // 1_000_000 + 2):
            d.feed(line)
