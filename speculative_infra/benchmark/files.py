"""Result files: the JSON document, a CSV row per level, a JSONL line per request.

Standard library only (``json``, ``csv``): the same writers run in the CLI and in a Lambda.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..safe_files import MAX_RESULTS_BYTES, InputFileError, output_problem, read_json, write_text
from .results import BenchmarkResult, LevelResult, RequestRecord

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO swapped in after the check: the open does not wait


@dataclass(frozen=True, slots=True)
class OutputPaths:
    results: Path
    levels_csv: Path
    requests_jsonl: Path

    @classmethod
    def for_results(cls, results: Path) -> OutputPaths:
        """``out/run.json`` -> ``out/run.csv`` and ``out/run.requests.jsonl``."""
        stem = results.with_suffix("") if results.suffix == ".json" else results
        return cls(
            results=results,
            levels_csv=stem.with_name(stem.name + ".csv"),
            requests_jsonl=stem.with_name(stem.name + ".requests.jsonl"),
        )


def results_json(result: BenchmarkResult) -> str:
    """The ``results.json`` text (without the final newline): indented, UTF-8 left unescaped."""
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False)


def write_results(result: BenchmarkResult, path: Path) -> None:
    """Rewritten after every level, atomically (a crash leaves the previous file whole); raises
    :class:`~speculative_infra.safe_files.InputFileError` for a path that is not a regular file or is a
    symbolic link (nothing is written through it)."""
    write_text(path, results_json(result) + "\n", what="results file")


def load_results(path: Path) -> BenchmarkResult:
    """Read a ``results.json``: a regular file of at most ``MAX_RESULTS_BYTES``, bounded JSON.

    Raises ``ValueError`` when it cannot be read or is not a results document:
    :class:`~speculative_infra.safe_files.InputFileError` (naming the file and the problem: missing,
    not a regular file, too large, not UTF-8, not JSON) or :class:`~.schema.ConfigError` (naming the
    field) for valid JSON of the wrong shape.
    """
    return BenchmarkResult.from_dict(read_json(path, max_bytes=MAX_RESULTS_BYTES, what="results file"))


def _cell(value: object) -> object:
    if isinstance(value, dict):
        return ";".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, float):
        return round(value, 6)
    return "" if value is None else value


LEVEL_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(LevelResult))
"""The ``LevelResult`` fields, in the order of the CSV columns after ``label``."""


def write_levels_csv(result: BenchmarkResult, path: Path) -> None:
    columns = ["label", *LEVEL_COLUMNS]
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(columns)
    for level in result.levels:
        row = level.to_dict()
        writer.writerow([result.label, *(_cell(row[name]) for name in LEVEL_COLUMNS)])
    write_text(path, text.getvalue(), what="levels CSV")


def append_request_records(records: Iterable[RequestRecord], path: Path) -> None:
    """Append one JSON line per record. The file is opened without following a symbolic link and must be
    a regular file (a FIFO would block, a device swallow or corrupt the lines)."""
    lines = "".join(json.dumps(record.to_dict(), separators=(",", ":")) + "\n" for record in records)
    problem = output_problem(path)
    if problem is not None:
        raise InputFileError(path, f"per-request records not written: {problem}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _NONBLOCK
        fd = os.open(path, flags, 0o644)
    except OSError as err:
        raise InputFileError(path, f"per-request records not written: {err.strerror or err}") from None
    with os.fdopen(fd, "a", encoding="utf-8") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the check and the open
            raise InputFileError(path, "per-request records not written: not a regular file")
        handle.write(lines)


def write_all(result: BenchmarkResult, paths: OutputPaths, new_records: Iterable[RequestRecord] = ()) -> None:
    append_request_records(new_records, paths.requests_jsonl)
    write_levels_csv(result, paths.levels_csv)
    write_results(result, paths.results)
