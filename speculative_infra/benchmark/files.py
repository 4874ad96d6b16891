"""Result files: the JSON document, a CSV row per level, a JSONL line per request."""

from __future__ import annotations

import csv
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


def write_results(result: BenchmarkResult, path: Path) -> None:
    _atomic_write(path, result.model_dump_json(indent=2) + "\n")


def load_results(path: Path) -> BenchmarkResult:
    return BenchmarkResult.model_validate_json(path.read_text(encoding="utf-8"))


def _cell(value: object) -> object:
    if isinstance(value, dict):
        return ";".join(f"{k}={v}" for k, v in sorted(value.items()))
    if isinstance(value, float):
        return round(value, 6)
    return "" if value is None else value


def write_levels_csv(result: BenchmarkResult, path: Path) -> None:
    columns = ["label", *LevelResult.model_fields]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for level in result.levels:
            row = level.model_dump()
            writer.writerow([result.label, *(_cell(row[name]) for name in LevelResult.model_fields)])
    os.replace(tmp, path)


def append_request_records(records: Iterable[RequestRecord], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.model_dump(mode="json"), separators=(",", ":")) + "\n")


def write_all(result: BenchmarkResult, paths: OutputPaths, new_records: Iterable[RequestRecord] = ()) -> None:
    append_request_records(new_records, paths.requests_jsonl)
    write_levels_csv(result, paths.levels_csv)
    write_results(result, paths.results)
