"""Real prompts for the benchmark: ShareGPT files, JSON lines, and SageMaker data capture.

Speculative decoding's acceptance depends on the text, so a benchmark on random words says little
about a draft head on real traffic. Each loader returns the chat messages of one request and, where
the record says, how many tokens it asked for:

* ShareGPT (a JSON array of ``{"conversations": [{"from": "human", "value": ...}, {"from": "gpt", ...}]}``,
  or one such object per line, as SageMaker's EAGLE optimization reads it): the system and first human
  turn are the request; the first answer's length (in words, about one token each) is its output length.
* JSON lines of ``{"prompt": ...}`` or ``{"messages": [...]}``, with an optional ``max_tokens``; or
  OpenAI Batch API lines (``{"custom_id", "method", "url", "body": {...}}``, BatchInference's input),
  whose ``body`` is the request.
* SageMaker data capture (JSON lines with ``captureData.endpointInput``, as endpoint data capture
  writes them under ``s3://.../<endpoint>/<variant>/yyyy/mm/dd/hh/``): the captured request body,
  base64 or not, is replayed (its ``messages`` or ``prompt``, and its ``max_tokens``).

A local file or an ``s3://bucket/prefix`` (every object under it, read with boto3) can be given.
"""

from __future__ import annotations

import base64
import binascii
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ..safe_files import MAX_DATASET_BYTES, MIB, InputFileError, parse_json, read_text
from .config import MAX_TOKENS_PER_REQUEST, ConfigError, DatasetConfig

Message = dict[str, str]
_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system"}


@dataclass(frozen=True, slots=True)
class DatasetPrompt:
    messages: tuple[Message, ...]
    output_tokens: int | None  # what the record asked for (or answered), if it says

    @property
    def estimated_input_tokens(self) -> int:
        # One word is about one token for common BPE vocabularies; the chat template adds a few.
        return sum(len(m["content"].split()) for m in self.messages)


def dataset_prompts(config: DatasetConfig | None) -> tuple[DatasetPrompt, ...] | None:
    """The dataset's requests, read once per process (a sweep asks at every level)."""
    return None if config is None else _cached(config.path, config.format)


@functools.lru_cache(maxsize=4)
def _cached(path: str, format: str) -> tuple[DatasetPrompt, ...]:
    return tuple(load_dataset(DatasetConfig(path=path, format=format)))  # type: ignore[arg-type]


def load_dataset(config: DatasetConfig) -> list[DatasetPrompt]:
    """Every usable request of the dataset; raises :class:`ConfigError` naming the path on bad input."""
    texts = list(_read(config.path))
    prompts: list[DatasetPrompt] = []
    for name, text in texts:
        kind = config.format if config.format != "auto" else _detect(text)
        try:
            prompts += _sharegpt(text) if kind == "sharegpt" else list(_json_lines(text, kind))
        except ValueError as exc:
            raise ConfigError(
                "dataset.path", config.path, f"a readable {kind} dataset ({name}: {exc})"
            ) from None
    if not prompts:
        raise ConfigError("dataset.path", config.path, "a dataset with at least one request with text")
    return prompts


def _read(path: str) -> Iterator[tuple[str, str]]:
    if path.startswith("s3://"):
        yield from _read_s3(path)
        return
    try:
        yield path, read_text(path, max_bytes=MAX_DATASET_BYTES, what="dataset")
    except InputFileError as exc:
        raise ConfigError("dataset.path", path, "a readable UTF-8 file", message=str(exc)) from None


def _read_s3(uri: str) -> Iterator[tuple[str, str]]:
    """Every object under the prefix, at most MAX_DATASET_BYTES together (checked on the listed sizes
    and again on the bytes read: a body is never read past the limit)."""
    import boto3  # only for S3 datasets: the rest of the engine does not need it
    from botocore.exceptions import BotoCoreError, ClientError

    bucket, _, prefix = uri[len("s3://") :].partition("/")
    s3 = boto3.client("s3")
    size = f"{MAX_DATASET_BYTES // MIB} MiB" if MAX_DATASET_BYTES % MIB == 0 else f"{MAX_DATASET_BYTES} bytes"
    limit = f"at most {size} under the prefix together"
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        objects = [
            (obj["Key"], obj.get("Size", 0))
            for page in pages
            for obj in page.get("Contents", [])
            if not obj["Key"].endswith("/")
        ]
        listed = sum(size for _, size in objects if isinstance(size, int))
        if listed > MAX_DATASET_BYTES:
            raise ConfigError(
                "dataset.path",
                uri,
                limit,
                message=f"{uri}: the objects hold {listed} bytes; allowed: {limit}",
            )
        left = MAX_DATASET_BYTES
        for key, _ in sorted(objects):
            name = f"s3://{bucket}/{key}"
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read(left + 1)
            if len(body) > left:
                raise ConfigError("dataset.path", uri, limit, message=f"{name}: larger than allowed: {limit}")
            left -= len(body)
            try:
                text = body.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise ConfigError(
                    "dataset.path", uri, "UTF-8 text", message=f"{name}: not UTF-8 text (offset {exc.start})"
                ) from None
            yield name, text
    except (BotoCoreError, ClientError) as exc:
        raise ConfigError("dataset.path", uri, f"an S3 prefix this role can list and read ({exc})") from None


def _json(text: str, where: str) -> Any:
    """A JSON document without NaN, huge integers or deep nesting (safe_files.parse_json)."""
    try:
        return parse_json(text, source=where)
    except InputFileError as exc:
        raise ValueError(f"{where} is not JSON: {exc.problem}") from None


def _detect(text: str) -> str:
    stripped = text.lstrip()
    if stripped.startswith("["):
        return "sharegpt"
    first = stripped.split("\n", 1)[0]
    if '"captureData"' in first:
        return "datacapture"
    return "sharegpt" if '"conversations"' in first else "jsonl"


def _sharegpt(text: str) -> list[DatasetPrompt]:
    if text.lstrip().startswith("["):
        data = _json(text, "the file")
    else:  # JSON lines, one conversation per line
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            item = _json(line, f"line {number}")
            if not isinstance(item, dict) or not isinstance(item.get("conversations"), list):
                raise ValueError(
                    f"line {number} is not a ShareGPT conversation (a JSON array of conversations, or one "
                    '{"conversations": [...]} per line)'
                )
            data.append(item)
    if not isinstance(data, list):
        raise ValueError("a ShareGPT file is a JSON array of conversations, or one conversation per line")
    prompts = []
    for item in data:
        turns = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(turns, list):
            continue
        messages: list[Message] = []
        answer: str | None = None
        for turn in turns:
            if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
                continue
            role = _ROLES.get(str(turn.get("from", "")).lower())
            if role == "assistant":
                if any(m["role"] == "user" for m in messages):
                    answer = turn["value"]
                    break
            elif role is not None and turn["value"].strip():
                messages.append({"role": role, "content": turn["value"]})
        if any(m["role"] == "user" for m in messages):
            length = len(answer.split()) if answer else None
            prompts.append(DatasetPrompt(tuple(messages), length or None))
    return prompts


def _json_lines(text: str, kind: str) -> Iterable[DatasetPrompt]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        record = _json(line, f"line {number}")
        if not isinstance(record, dict):
            raise ValueError(f"line {number} is not a JSON object")
        if kind == "datacapture":
            request = _captured_request(record, number)
        else:  # an OpenAI Batch API line carries its request in "body"
            request = record["body"] if isinstance(record.get("body"), dict) else record
        prompt = _request_prompt(request)
        if prompt is not None:
            yield prompt


def _captured_request(record: dict[str, Any], number: int) -> dict[str, Any]:
    """The request body of one data-capture record (``captureData.endpointInput``)."""
    capture = record.get("captureData")
    endpoint_input = capture.get("endpointInput") if isinstance(capture, dict) else None
    if not isinstance(endpoint_input, dict) or not isinstance(endpoint_input.get("data"), str):
        raise ValueError(f"line {number} has no captureData.endpointInput.data")
    data = endpoint_input["data"]
    if endpoint_input.get("encoding") == "BASE64":
        try:
            data = base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise ValueError(f"line {number}: the captured request is not base64 of UTF-8 text") from None
    try:
        body = parse_json(data, source=f"line {number}")
    except InputFileError:
        raise ValueError(f"line {number}: the captured request is not a JSON body") from None
    return body if isinstance(body, dict) else {}


def _request_prompt(request: dict[str, Any]) -> DatasetPrompt | None:
    """A chat request (``messages``), a completions request (``prompt``) or an LMI one (``inputs``)."""
    messages: list[Message] = []
    if isinstance(request.get("messages"), list):
        for message in request["messages"]:
            if isinstance(message, dict) and isinstance(message.get("content"), str) and message["content"]:
                messages.append({"role": str(message.get("role", "user")), "content": message["content"]})
    else:
        text = request.get("prompt", request.get("inputs"))
        if isinstance(text, str) and text.strip():
            messages.append({"role": "user", "content": text})
    if not messages:
        return None
    parameters = request.get("parameters")
    if not isinstance(parameters, dict):
        parameters = {}
    limit = request.get("max_tokens", request.get("max_completion_tokens", parameters.get("max_new_tokens")))
    # A record's own length is used only when it is a plausible count (true is not 1 token).
    plausible = type(limit) is int and 0 < limit <= MAX_TOKENS_PER_REQUEST
    return DatasetPrompt(tuple(messages), limit if plausible else None)
