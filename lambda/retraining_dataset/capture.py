"""One SageMaker data-capture line -> one conversation, or the reason it is dropped.

A capture line (Capture data from real-time endpoint, SageMaker developer guide):
``{"captureData": {"endpointInput": {"observedContentType", "mode": "INPUT", "data", "encoding"},
"endpointOutput": {...}}, "eventMetadata": {"eventId", "inferenceTime"}, "eventVersion": "0"}``;
``encoding`` is JSON (the payload as text) or BASE64. The request is an OpenAI chat request
(``messages``), a completions request (``prompt``) or an LMI one (``inputs``). A non-streamed answer is
an OpenAI response (``choices``) or LMI's (``generated_text``); a streamed one is not captured as a
whole, so those conversations keep the prompt with an empty answer, which the optimization job fills
with the target model's own (its sample data has empty assistant turns).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any

ROLES = {"system": "system", "user": "human", "assistant": "gpt"}


@dataclass(frozen=True)
class Conversation:
    turns: tuple[tuple[str, str], ...]  # (ShareGPT "from", "value")
    event_id: str

    def key(self) -> str:
        """What duplicates share: the same turns, whatever the event."""
        return json.dumps(self.turns, ensure_ascii=False)

    def chars(self) -> int:
        return sum(len(value) for _, value in self.turns)


class Dropped(Exception):
    """A line that yields no conversation; the message is the reason (counted in the manifest)."""


def _payload(part: Any, what: str) -> Any:
    if not isinstance(part, dict) or not isinstance(part.get("data"), str):
        raise Dropped(f"no {what}")
    data = part["data"]
    if part.get("encoding") == "BASE64":
        try:
            data = base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise Dropped(f"{what} not decodable") from None
    try:
        return json.loads(data)
    except ValueError:
        raise Dropped(f"{what} not JSON") from None


def _request_turns(request: Any) -> list[tuple[str, str]]:
    if not isinstance(request, dict):
        raise Dropped("request not an object")
    turns = []
    if isinstance(request.get("messages"), list):
        for message in request["messages"]:
            if not isinstance(message, dict):
                continue
            role, content = ROLES.get(str(message.get("role"))), message.get("content")
            if role is not None and isinstance(content, str) and content.strip():
                turns.append((role, content))
    else:
        text = request.get("prompt", request.get("inputs"))
        if isinstance(text, str) and text.strip():
            turns.append(("human", text))
    if not any(role == "human" for role, _ in turns):
        raise Dropped("empty request")
    return turns


def _answer(response: Any) -> str:
    if isinstance(response, dict):
        if isinstance(response.get("error"), (dict, str)) or response.get("object") == "error":
            raise Dropped("failed request")
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            first = choices[0]
            message = first.get("message")
            text = message.get("content") if isinstance(message, dict) else first.get("text")
            return text if isinstance(text, str) else ""
        generated = response.get("generated_text")
        if isinstance(generated, str):
            return generated
    return ""


def conversation(line: str) -> Conversation:
    try:
        record = json.loads(line)
    except ValueError:
        raise Dropped("line not JSON") from None
    if not isinstance(record, dict) or not isinstance(record.get("captureData"), dict):
        raise Dropped("not a capture record")
    capture = record["captureData"]
    turns = _request_turns(_payload(capture.get("endpointInput"), "request"))
    output = capture.get("endpointOutput")
    answer = ""
    if isinstance(output, dict) and isinstance(output.get("data"), str) and output["data"]:
        try:
            answer = _answer(_payload(output, "answer"))
        except Dropped as err:
            if str(err) == "failed request":
                raise
            answer = ""  # a streamed answer (server-sent events): not a JSON document
    turns.append(("gpt", answer))
    metadata = record.get("eventMetadata")
    event_id = metadata.get("eventId", "") if isinstance(metadata, dict) else ""
    return Conversation(tuple(turns), str(event_id))
