"""Result files: the JSON document, a CSV row per level, a JSONL line per request.

Standard library only (``json``, ``csv``): the same writers run in the CLI and in a Lambda.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .results import BenchmarkResult, LevelResult, RequestRecord


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


def _atomic_write(path: Path, text: str) -> None:
    # Rewritten after every level: never leave a half-written file if the process dies.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def results_json(result: BenchmarkResult) -> str:
    """The ``results.json`` text (without the final newline): indented, UTF-8 left unescaped."""
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False)


def write_results(result: BenchmarkResult, path: Path) -> None:
    _atomic_write(path, results_json(result) + "\n")


def load_results(path: Path) -> BenchmarkResult:
    """Read a ``results.json``.

    Raises ``OSError`` when the file cannot be read, ``ValueError`` when it is not a results
    document: :class:`~.schema.ConfigError` (naming the field) for valid JSON of the wrong shape,
    ``json.JSONDecodeError`` / ``UnicodeDecodeError`` for text that is not JSON.
    """
    return BenchmarkResult.from_dict(json.loads(path.read_text(encoding="utf-8")))


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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for level in result.levels:
            row = level.to_dict()
            writer.writerow([result.label, *(_cell(row[name]) for name in LEVEL_COLUMNS)])
    os.replace(tmp, path)


def append_request_records(records: Iterable[RequestRecord], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict(), separators=(",", ":")) + "\n")


def write_all(result: BenchmarkResult, paths: OutputPaths, new_records: Iterable[RequestRecord] = ()) -> None:
    append_request_records(new_records, paths.requests_jsonl)
    write_levels_csv(result, paths.levels_csv)
    write_results(result, paths.results)
