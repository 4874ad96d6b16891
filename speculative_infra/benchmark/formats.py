"""Request payloads and response chunks of the APIs the engine speaks.

* OpenAI chat completions (vLLM api_server, SageMaker vLLM DLC): SSE ``data: {...}`` chunks.
* OpenAI completions: same framing, text in ``choices[0].text``.
* LMI (DJL) ``{"inputs", "parameters", "stream"}``: JSON lines with ``token``, and on the last line
  ``generated_text`` plus ``details`` (``generated_tokens``) when ``details`` is requested.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Protocol

from .config import WorkloadConfig
from .recorder import StreamRecorder
from .sse import BadChunk, JsonLinesDecoder, SseDecoder
from .workload import Prompt

__all__ = ["BadChunk"]  # defined with the decoders, which raise it too

TokenSource = Literal["usage", "details"]


class Decoder(Protocol):
    def feed(self, chunk: bytes) -> list[bytes]: ...

    def close(self) -> list[bytes]: ...


class ApiFormat(Protocol):
    name: str
    content_type: str
    server_token_source: TokenSource
    """Where the server states the output token count for this API."""

    def body(self, prompt: Prompt) -> bytes: ...

    def decoder(self) -> Decoder: ...

    def consume(self, data: bytes, at: float, rec: StreamRecorder) -> None:
        """Interpret one complete event received at ``at``."""
        ...


def _loads(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data)
    except ValueError as exc:
        raise BadChunk(f"invalid JSON chunk {data[:80]!r}: {exc}") from exc
    if not isinstance(obj, dict):
        raise BadChunk(f"expected a JSON object, got {data[:80]!r}")
    return obj


def _error_text(obj: dict[str, Any]) -> str | None:
    error = obj.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error)
    if error:
        return str(error)
    if obj.get("object") == "error":
        return str(obj.get("message") or obj)
    return None


def _sampling(workload: WorkloadConfig, prompt: Prompt) -> dict[str, Any]:
    output_tokens = prompt.output_tokens or workload.output_tokens
    params: dict[str, Any] = {"max_tokens": output_tokens}
    if workload.force_output_length:
        # vLLM extensions: without them a model that emits EOS early makes requests shorter
        # than asked and every per-token figure wrong.
        params["ignore_eos"] = True
        params["min_tokens"] = output_tokens
    if workload.temperature is not None:
        params["temperature"] = workload.temperature
    return params


def _consume_openai(obj: dict[str, Any], at: float, rec: StreamRecorder, text_key: str) -> None:
    if (message := _error_text(obj)) is not None:
        rec.error_in_stream(message)
        return
    choices = obj.get("choices")
    if choices:
        choice = choices[0]
        if text_key == "delta":
            delta = choice.get("delta") or {}
            # A first chunk with only {"role": "assistant"} (content "" or absent) is not a token:
            # counting it as the first token makes TTFT look ~prefill-time too short.
            if delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"):
                rec.content(at)
        elif choice.get("text"):
            rec.content(at)
        rec.finish(choice.get("finish_reason"))
    usage = obj.get("usage")
    if isinstance(usage, dict):
        rec.usage(usage.get("prompt_tokens"), usage.get("completion_tokens"))


class OpenAIChatFormat:
    name = "openai-chat"
    content_type = "application/json"
    server_token_source: TokenSource = "usage"

    def __init__(self, workload: WorkloadConfig, model: str | None = None) -> None:
        self._workload = workload
        self._model = model

    def body(self, prompt: Prompt) -> bytes:
        messages: list[dict[str, str]] = []
        if prompt.messages is not None:
            messages = list(prompt.messages)
        elif prompt.shared_prefix:
            # The shared part goes in the system message, as in the reference benchmark, so it
            # is the same leading tokens for every request and the prefix cache can reuse it.
            messages.append({"role": "system", "content": prompt.shared_prefix})
        if prompt.messages is None:
            messages.append({"role": "user", "content": prompt.unique})
        payload: dict[str, Any] = {
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            **_sampling(self._workload, prompt),
        }
        if self._model:
            payload["model"] = self._model
        return json.dumps(payload).encode()

    def decoder(self) -> Decoder:
        return SseDecoder()

    def consume(self, data: bytes, at: float, rec: StreamRecorder) -> None:
        if data == b"[DONE]":
            rec.mark_done()
            return
        _consume_openai(_loads(data), at, rec, "delta")


class OpenAICompletionsFormat(OpenAIChatFormat):
    name = "openai-completions"

    def body(self, prompt: Prompt) -> bytes:
        payload: dict[str, Any] = {
            "prompt": prompt.text,
            "stream": True,
            "stream_options": {"include_usage": True},
            **_sampling(self._workload, prompt),
        }
        if self._model:
            payload["model"] = self._model
        return json.dumps(payload).encode()

    def consume(self, data: bytes, at: float, rec: StreamRecorder) -> None:
        if data == b"[DONE]":
            rec.mark_done()
            return
        _consume_openai(_loads(data), at, rec, "text")


class LmiFormat:
    """DJL LMI schema; with the vLLM async service LMI turns it into a vLLM completions request."""

    name = "lmi"
    content_type = "application/json"
    server_token_source: TokenSource = "details"

    def __init__(self, workload: WorkloadConfig) -> None:
        self._workload = workload

    def body(self, prompt: Prompt) -> bytes:
        output_tokens = prompt.output_tokens or self._workload.output_tokens
        params: dict[str, Any] = {"max_new_tokens": output_tokens, "details": True}
        if self._workload.force_output_length:
            # LMI maps ignore_eos_token to vLLM's ignore_eos and passes unknown keys through.
            params["ignore_eos_token"] = True
            params["min_tokens"] = output_tokens
        if self._workload.temperature is not None:
            params["temperature"] = self._workload.temperature
            params["do_sample"] = self._workload.temperature > 0
        payload = {"inputs": prompt.text, "parameters": params, "stream": True}
        return json.dumps(payload).encode()

    def decoder(self) -> Decoder:
        return JsonLinesDecoder()

    def consume(self, data: bytes, at: float, rec: StreamRecorder) -> None:
        if data == b"[DONE]":
            rec.mark_done()
            return
        obj = _loads(data)
        if "choices" in obj:
            # An LMI configured for the OpenAI schema streams OpenAI chunks.
            _consume_openai(obj, at, rec, "delta" if obj.get("object") == "chat.completion.chunk" else "text")
            return
        if (message := _error_text(obj)) is not None:
            rec.error_in_stream(message)
            return
        details = obj.get("details")
        token = obj.get("token")
        if isinstance(details, dict) and details.get("finish_reason") == "error":
            rec.error_in_stream("LMI reported finish_reason=error")
            return
        if isinstance(token, dict) and token.get("text"):
            rec.content(at)
        if isinstance(details, dict):
            rec.finish(details.get("finish_reason"))
            rec.usage(
                details.get("input_length"),
                details.get("generated_tokens"),
                ("details.input_length", "details.generated_tokens"),
            )
        if obj.get("generated_text") is not None:
            rec.mark_done()


def sagemaker_payload(
    container: Literal["vllm", "lmi"], workload: WorkloadConfig, model: str | None
) -> ApiFormat:
    """The payload a SageMaker container expects: OpenAI chat for the vLLM DLC, LMI's schema for LMI."""
    return LmiFormat(workload) if container == "lmi" else OpenAIChatFormat(workload, model)
