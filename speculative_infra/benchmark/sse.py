"""Incremental decoders for streamed response bodies.

Bytes arrive in pieces that respect no boundary: an HTTP read or a SageMaker PayloadPart can end
in the middle of a line, of a JSON document or of a multi-byte UTF-8 character. The decoders
buffer bytes and only hand out complete events. They split on the byte ``\\n`` (0x0A), which never
occurs inside a multi-byte UTF-8 sequence, so an event is decoded only once all its bytes are in.
"""

from __future__ import annotations

# A streamed event (one token's JSON, a few hundred bytes) larger than this is a server that never ends
# its line: refused as a bad response instead of buffering until the request's timeout.
MAX_EVENT_BYTES = 16 * 1024 * 1024


class BadChunk(ValueError):
    """A streamed chunk that is not what the API promises (invalid JSON, an event without an end)."""


def _too_large(size: int) -> BadChunk:
    return BadChunk(f"a streamed event of more than {size} bytes without its end; allowed: {MAX_EVENT_BYTES}")


class SseDecoder:
    """Server-sent events (``text/event-stream``): returns the ``data`` of each complete event.

    Follows the WHATWG rules that matter here: lines end with LF, CRLF or CR; an empty line ends
    an event; several ``data:`` lines are joined with LF; one space after the colon is dropped;
    lines starting with ``:`` are comments; an event without data is not dispatched.
    """

    __slots__ = ("_buffer", "_data", "_data_bytes", "_pending_cr")

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[bytes] = []
        self._data_bytes = 0  # of the event being read, across its data: lines
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[bytes]:
        # Fast path for what vLLM sends: one whole "data: ...\n\n" event per read.
        if (
            not self._buffer
            and not self._data
            and not self._pending_cr
            and chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.count(b"\n") == 2
            and b"\r" not in chunk
        ):
            return [chunk[6:-2]]
        if self._pending_cr:
            # A CR ended the previous piece; if this piece starts with LF it was a CRLF.
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        buffer = self._buffer + chunk
        if b"\r" in buffer:
            if buffer.endswith(b"\r"):
                self._pending_cr = True
            buffer = buffer.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = buffer.rfind(b"\n")
        if end < 0:
            if len(buffer) > MAX_EVENT_BYTES:
                raise _too_large(len(buffer))
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 1 :]
        if len(self._buffer) > MAX_EVENT_BYTES:
            raise _too_large(len(self._buffer))
        events: list[bytes] = []
        for line in buffer[:end].split(b"\n"):
            self._line(line, events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                events.append(b"\n".join(self._data))
                self._data = []
                self._data_bytes = 0
            return
        if line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)
            self._data_bytes += len(value)
            if self._data_bytes > MAX_EVENT_BYTES:  # data: lines without the empty line that ends them
                raise _too_large(self._data_bytes)
        elif line == b"data":
            self._data.append(b"")
        # Comments (":...") and other fields (event, id, retry) carry nothing we measure.

    def close(self) -> list[bytes]:
        """End of stream: per the SSE rules an unterminated event is discarded."""
        self._buffer = b""
        self._data = []
        self._data_bytes = 0
        return []


class JsonLinesDecoder:
    """One JSON document per line (LMI streaming). A ``data:`` prefix (LMI's SSE formatter) is removed."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer + chunk
        end = buffer.rfind(b"\n")
        if end < 0:
            if len(buffer) > MAX_EVENT_BYTES:
                raise _too_large(len(buffer))
            self._buffer = buffer
            return []
        self._buffer = buffer[end + 1 :]
        if len(self._buffer) > MAX_EVENT_BYTES:
            raise _too_large(len(self._buffer))
        return [doc for line in buffer[:end].split(b"\n") if (doc := _strip_line(line))]

    def close(self) -> list[bytes]:
        """End of stream: a last line without a newline is still a complete document."""
        rest, self._buffer = self._buffer, b""
        doc = _strip_line(rest)
        return [doc] if doc else []


def _strip_line(line: bytes) -> bytes:
    line = line.strip()
    if line.startswith(b"data:"):
        line = line[5:].strip()
    return line
