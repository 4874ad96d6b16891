"""Bounded reads and non-destructive writes of the files a user names (specs, results, datasets, outputs).

One reader for every command: a path must be a regular file (a FIFO would block the reader forever, a
device would stream without end), is read up to a documented size whatever `stat` reports, decoded as
UTF-8, and JSON is parsed with a nesting limit, without NaN or infinity and without integers longer
than Python converts. One writer: it replaces only regular files, never follows a symbolic link to
overwrite its target, and writes through a temporary file so a crash leaves the old file whole.

Standard library only: the benchmark Lambda carries this module beside the engine.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

MIB = 1024 * 1024

# Limits, with the reasoning behind each (docs/security.md, "Hostile input").
MAX_SPEC_BYTES = 1 * MIB  # a spec is a page of YAML
MAX_CONTEXT_BYTES = 16 * MIB  # cdk.context.json: CDK's own lookups plus one small entry per fetched model
MAX_RESULTS_BYTES = 64 * MIB  # a results.json of thousands of levels is a few MiB
MAX_DATASET_BYTES = 512 * MIB  # ShareGPT's V3 file is ~670 MB unfiltered; filtered copies are well below
MAX_CONFIG_BYTES = 4 * MIB  # a Hugging Face config.json (the largest in the catalog's models: ~10 KiB)
MAX_TEMPLATE_BYTES = 64 * MIB  # a cloud assembly's template (CloudFormation accepts 1 MB; CDK writes more)
MAX_NESTING = 64  # JSON/YAML containers inside containers; our deepest document nests 8
MAX_INT_DIGITS = 64  # an integer longer than this is not a count, a size or a token number


class InputFileError(ValueError):
    """A file the user named cannot be read safely; the message names the file, the problem and the limit."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_bytes(path: str | os.PathLike[str], *, max_bytes: int, what: str = "file") -> bytes:
    """At most `max_bytes` of a regular file; InputFileError for anything else."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputFileError(path, f"cannot read the {what}: {err.strerror or err}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputFileError(path, f"is {_kind(info.st_mode)}; expected the {what} as a regular file")
    too_large = InputFileError(
        path, f"the {what} is larger than {_size(max_bytes)}; allowed: at most {_size(max_bytes)}"
    )
    if info.st_size > max_bytes:  # refused at once; a file that grows while read is caught below
        raise too_large
    try:
        # O_NONBLOCK: should the path become a FIFO between stat and open, the open does not wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise InputFileError(path, f"cannot read the {what}: {err.strerror or err}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputFileError(path, f"is {_kind(os.fstat(fd).st_mode)}; expected a regular file")
        # Read one byte past the limit as well: st_size may change between stat and read.
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_large
    return data


def read_text(path: str | os.PathLike[str], *, max_bytes: int, what: str = "file") -> str:
    """A regular file's UTF-8 text (a leading byte-order mark is dropped), bounded as read_bytes."""
    data = read_bytes(path, max_bytes=max_bytes, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputFileError(
            path, f"not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}); save it as UTF-8"
        ) from None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows (NaN and infinity are refused)")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits; allowed: at most {MAX_INT_DIGITS} digits")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 overflows to infinity
        raise ValueError(f"the number {text[:40]} is outside a double's range")
    return value


def nesting_depth(value: Any, limit: int = MAX_NESTING) -> int:
    """How deeply containers nest in a parsed document, counted without recursion (stops past `limit`)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in children)
    return deepest


def parse_json(text: str, *, source: str, max_nesting: int = MAX_NESTING) -> Any:
    """JSON without NaN/Infinity, huge integers or deep nesting; InputFileError names `source`."""
    try:
        value = json.loads(
            text, parse_constant=_refuse_constant, parse_int=_bounded_int, parse_float=_finite_float
        )
    except RecursionError:
        raise InputFileError(
            source, f"JSON nested more deeply than Python parses; allowed: {max_nesting} levels"
        ) from None
    except json.JSONDecodeError as err:
        raise InputFileError(
            source, f"not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from None
    except ValueError as err:
        raise InputFileError(source, f"not valid JSON ({err})") from None
    if nesting_depth(value, max_nesting) > max_nesting:
        raise InputFileError(
            source, f"JSON nested more than {max_nesting} levels deep; allowed: {max_nesting}"
        )
    return value


def read_json(path: str | os.PathLike[str], *, max_bytes: int, what: str = "file") -> Any:
    """A bounded regular file parsed as bounded JSON."""
    return parse_json(read_text(path, max_bytes=max_bytes, what=what), source=str(path))


def output_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the CLI must not write `path` (None when it may): only a missing path or a regular file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"cannot write there: {err.strerror or err}"
    if stat.S_ISLNK(mode):
        target = os.path.realpath(path)
        return f"is a symbolic link (to {target}); name the file itself to write there"
    if not stat.S_ISREG(mode):
        return f"is {_kind(mode)}; the output must be a regular file or a new path"
    return None


def write_bytes(path: str | os.PathLike[str], data: bytes, *, what: str = "output") -> None:
    """Write `data` to a new or regular file, atomically; InputFileError for anything else."""
    problem = output_problem(path)
    if problem is not None:
        raise InputFileError(path, f"{what} not written: {problem}")
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as err:
        raise InputFileError(path, f"{what} not written: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        # mkstemp makes the file private; keep the mode of the file replaced, else the usual 0644.
        os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o644)
        problem = output_problem(path)  # checked again: the path may have changed while writing
        if problem is not None:
            raise InputFileError(path, f"{what} not written: {problem}")
        os.replace(tmp, target)
    except OSError as err:
        raise InputFileError(path, f"{what} not written: {err.strerror or err}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_text(path: str | os.PathLike[str], text: str, *, what: str = "output") -> None:
    """`write_bytes` of UTF-8 text, written as given (no newline translation)."""
    write_bytes(path, text.encode("utf-8"), what=what)


def _size(n: int) -> str:
    return f"{n // MIB} MiB" if n >= MIB and n % MIB == 0 else f"{n} bytes"
