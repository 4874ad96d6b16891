"""Payloads ask for exactly the output length; chunk interpretation follows each API."""

from __future__ import annotations

import dataclasses
import json

import pytest

from speculative_infra.benchmark.config import WorkloadConfig
from speculative_infra.benchmark.formats import BadChunk, LmiFormat, OpenAIChatFormat, OpenAICompletionsFormat
from speculative_infra.benchmark.recorder import StreamRecorder
from speculative_infra.benchmark.workload import Prompt

WORKLOAD = WorkloadConfig(input_tokens=20, output_tokens=7, seed=1)
PROMPT = Prompt(shared_prefix="shared words", unique="unique words")


def test_chat_payload_forces_length_and_asks_for_usage() -> None:
    body = json.loads(OpenAIChatFormat(WORKLOAD, "m").body(PROMPT))
    assert body["max_tokens"] == 7
    assert body["min_tokens"] == 7
    assert body["ignore_eos"] is True
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["model"] == "m"
    assert body["messages"] == [
        {"role": "system", "content": "shared words"},
        {"role": "user", "content": "unique words"},
    ]
    assert "temperature" not in body


def test_chat_payload_without_forcing_or_model() -> None:
    workload = dataclasses.replace(WORKLOAD, force_output_length=False, temperature=0.0)
    body = json.loads(OpenAIChatFormat(workload).body(Prompt("", "u")))
    assert "ignore_eos" not in body and "min_tokens" not in body and "model" not in body
    assert body["temperature"] == 0.0
    assert body["messages"] == [{"role": "user", "content": "u"}]


def test_completions_payload_puts_prefix_first() -> None:
    body = json.loads(OpenAICompletionsFormat(WORKLOAD).body(PROMPT))
    assert body["prompt"].startswith("shared words")
    assert body["prompt"].endswith("unique words")
    assert body["ignore_eos"] is True


def test_lmi_payload() -> None:
    body = json.loads(LmiFormat(WORKLOAD).body(PROMPT))
    assert body["stream"] is True
    assert body["inputs"] == PROMPT.text
    assert body["parameters"] == {
        "max_new_tokens": 7,
        "details": True,
        "ignore_eos_token": True,
        "min_tokens": 7,
    }


def consume(fmt: OpenAIChatFormat | LmiFormat, events: list[bytes]) -> StreamRecorder:
    rec = StreamRecorder(dispatched_at=0.0)
    for i, event in enumerate(events):
        fmt.consume(event, float(i + 1), rec)
    return rec


def test_role_only_chunk_is_not_a_token() -> None:
    rec = consume(
        OpenAIChatFormat(WORKLOAD),
        [
            b'{"choices":[{"delta":{"role":"assistant","content":""}}]}',
            b'{"choices":[{"delta":{"role":"assistant"}}]}',
            b'{"choices":[{"delta":{"content":"Hi"}}]}',
            b'{"choices":[{"delta":{"reasoning_content":"hm"}}]}',
            b'{"choices":[{"delta":{"content":"!"},"finish_reason":"length"}]}',
            b'{"choices":[],"usage":{"prompt_tokens":25,"completion_tokens":7}}',
            b"[DONE]",
        ],
    )
    assert rec.content_times == [3.0, 4.0, 5.0]
    assert (rec.prompt_tokens, rec.completion_tokens, rec.finish_reason, rec.done_marker) == (
        25,
        7,
        "length",
        True,
    )


def test_in_stream_error_is_recorded() -> None:
    rec = consume(OpenAIChatFormat(WORKLOAD), [b'{"error":{"message":"overloaded","code":503}}'])
    assert rec.server_error == "overloaded"


def test_invalid_json_chunk_raises_bad_chunk() -> None:
    with pytest.raises(BadChunk):
        consume(OpenAIChatFormat(WORKLOAD), [b"{not json"])


def test_lmi_lines_use_details_for_token_count() -> None:
    rec = consume(
        LmiFormat(WORKLOAD),
        [
            b'{"token":{"id":1,"text":"a"},"generated_text":null,"details":null}',
            b'{"token":{"id":2,"text":"bc"},"generated_text":"abc",'
            b'"details":{"finish_reason":"length","generated_tokens":7,"input_length":25}}',
        ],
    )
    assert rec.content_times == [1.0, 2.0]
    assert (rec.completion_tokens, rec.prompt_tokens, rec.done_marker) == (7, 25, True)


def test_lmi_error_line() -> None:
    rec = consume(
        LmiFormat(WORKLOAD),
        [b'{"token":{"id":-1,"text":""},"generated_text":"","details":{"finish_reason":"error"}}'],
    )
    assert rec.server_error is not None
    assert rec.content_times == []
