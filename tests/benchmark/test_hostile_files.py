"""Hostile input, files: what `bench` and `report` read is bounded (a FIFO, a device, a directory or a
huge file is refused at once, exit 2) and what they write never replaces anything but a regular file,
nor writes through a symbolic link."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.benchmark import datasets as datasets_module
from speculative_infra.benchmark.config import ConfigError, DatasetConfig
from speculative_infra.benchmark.datasets import load_dataset
from speculative_infra.benchmark.files import (
    OutputPaths,
    append_request_records,
    load_results,
    write_all,
    write_results,
)
from speculative_infra.benchmark.results import BenchmarkResult, RequestRecord
from speculative_infra.cli.main import main
from speculative_infra.safe_files import MAX_DATASET_BYTES, MAX_RESULTS_BYTES, InputFileError, write_bytes

FIXTURES = Path(__file__).parent / "fixtures"
UNREACHABLE = ["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--quiet"]


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def within(seconds: float, call: Callable[[], Any], *, fifos: tuple[Path, ...] = ()) -> Any:
    """``call()`` in a thread that must end within ``seconds``: a read that blocks on a FIFO fails the
    test instead of hanging it (the FIFOs are then opened for writing once, which releases the reader)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        for fifo in fifos:
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
        pytest.fail(f"still running after {seconds} s (blocked on a FIFO?)")
    if "error" in box:
        raise box["error"]
    box["elapsed"] = time.monotonic() - started
    return box["value"]


def sparse(path: Path, size: int) -> Path:
    with path.open("wb") as handle:
        handle.truncate(size)  # no disk used: the bounded read must stop well before the end
    return path


def fixture_result() -> BenchmarkResult:
    return load_results(FIXTURES / "results_v1.json")


# --- reading: bench --dataset -------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge", "device"])
def test_bench_refuses_a_dataset_that_is_no_regular_file_or_too_large(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind == "fifo":
        path = tmp_path / "prompts.jsonl"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "prompts"
        path.mkdir()
    elif kind == "huge":
        path = sparse(tmp_path / "prompts.jsonl", MAX_DATASET_BYTES + 1)
    else:
        path = Path("/dev/zero")  # endless: read without a bound it fills the memory
        if not path.exists():
            pytest.skip("no /dev/zero")
    out = tmp_path / "r.json"
    started = time.monotonic()
    code = within(
        10, lambda: exit_code([*UNREACHABLE, "--dataset", str(path), "--output", str(out)]), fifos=(path,)
    )
    assert time.monotonic() - started < 1.0
    err = capsys.readouterr().err
    assert code == 2 and "argument --dataset:" in err and str(path) in err
    expected = {"fifo": "FIFO", "directory": "a directory", "huge": "larger than", "device": "a device"}[kind]
    assert expected in err and "Traceback" not in err
    assert not out.exists()


def test_a_dataset_of_bad_json_nesting_or_shapes_is_a_config_error(tmp_path: Path) -> None:
    cases = {
        "deep.jsonl": "[" * 100_000 + "]" * 100_000 + "\n",  # RecursionError in a plain json.loads
        "nan.jsonl": '{"prompt": "hi", "max_tokens": NaN}\n',
        "capture.jsonl": '{"captureData": ["not", "an", "object"]}\n',
        "base64.jsonl": '{"captureData": {"endpointInput": {"data": "%%%", "encoding": "BASE64"}}}\n',
        "latin1.jsonl": b'{"prompt": "caf\xe9"}\n',
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(ConfigError) as info:
            load_dataset(DatasetConfig(path=str(path)))
        assert info.value.field == "dataset.path" and name in str(info.value), name


def test_implausible_record_lengths_are_not_sent_as_max_tokens(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    lines = [
        {"prompt": "a", "max_tokens": True},
        {"prompt": "b", "max_tokens": 10**40},
        {"prompt": "c", "max_tokens": 7},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [p.output_tokens for p in load_dataset(DatasetConfig(path=str(path)))] == [None, None, 7]


class _Body:
    def __init__(self, data: bytes, reads: list[int]) -> None:
        self._data = data
        self._reads = reads

    def read(self, amount: int | None = None) -> bytes:
        self._reads.append(-1 if amount is None else amount)
        return self._data if amount is None else self._data[:amount]


class _S3:
    """boto3's S3 client as far as the dataset reader uses it; ``sizes`` are what the listing says."""

    def __init__(self, objects: dict[str, bytes], sizes: dict[str, int]) -> None:
        self.objects, self.sizes, self.reads, self.gets = objects, sizes, [], 0

    def get_paginator(self, name: str) -> Any:
        client = self

        class Pages:
            def paginate(self, **kwargs: Any) -> list[dict[str, Any]]:
                return [{"Contents": [{"Key": k, "Size": client.sizes[k]} for k in client.objects]}]

        return Pages()

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        self.gets += 1
        return {"Body": _Body(self.objects[Key], self.reads)}


@pytest.mark.parametrize("honest_listing", [True, False])
def test_an_s3_dataset_is_read_up_to_the_limit_and_no_further(
    monkeypatch: pytest.MonkeyPatch, honest_listing: bool
) -> None:
    import boto3

    limit = 1000
    monkeypatch.setattr(datasets_module, "MAX_DATASET_BYTES", limit)
    big = b'{"prompt": "x"}\n' * 200  # 3,200 bytes
    s3 = _S3({"prefix/a.jsonl": big}, {"prefix/a.jsonl": len(big) if honest_listing else 10})
    monkeypatch.setattr(boto3, "client", lambda *a, **k: s3)
    datasets_module._cached.cache_clear()
    with pytest.raises(ConfigError) as info:
        load_dataset(DatasetConfig(path="s3://bucket/prefix/"))
    assert "s3://bucket/prefix/" in str(info.value) and "at most 1000 bytes" in str(info.value)
    if honest_listing:
        assert s3.gets == 0  # refused from the listing alone
    else:
        assert s3.reads == [limit + 1]  # a body that outgrew its listed size is still cut at the limit


# --- reading: report ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "directory", "huge", "device"])
def test_report_refuses_a_results_path_that_is_no_regular_file_or_too_large(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind == "fifo":
        path = tmp_path / "results.json"
        os.mkfifo(path)
    elif kind == "directory":
        path = tmp_path / "results.json"
        path.mkdir()
    elif kind == "huge":
        path = sparse(tmp_path / "results.json", MAX_RESULTS_BYTES + 1)
    else:
        path = Path("/dev/zero")
        if not path.exists():
            pytest.skip("no /dev/zero")
    started = time.monotonic()
    code = within(10, lambda: exit_code(["report", str(path), "--out", str(tmp_path / "rep")]), fifos=(path,))
    assert time.monotonic() - started < 1.0
    err = capsys.readouterr().err
    assert code == 2 and str(path) in err and "Traceback" not in err
    assert {"fifo": "FIFO", "directory": "a directory", "huge": "MiB", "device": "a device"}[kind] in err
    assert not (tmp_path / "rep").exists()


def test_load_results_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    os.mkfifo(path)
    with pytest.raises(InputFileError, match="FIFO"):
        within(5, lambda: load_results(path), fifos=(path,))


def test_load_results_refuses_json_that_is_not_json(tmp_path: Path) -> None:
    for text in ('{"a": NaN}', "[" * 10_000 + "]" * 10_000, '{"a": ' + "9" * 5000 + "}"):
        path = tmp_path / "r.json"
        path.write_text(text)
        with pytest.raises(ValueError):
            load_results(path)


# --- writing: bench -o -----------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["results", "csv", "jsonl"])
def test_bench_does_not_write_through_a_symbolic_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    out = tmp_path / "run" / "r.json"
    out.parent.mkdir()
    link = {"results": out, "csv": out.with_name("r.csv"), "jsonl": out.with_name("r.requests.jsonl")}[which]
    link.symlink_to(target)
    assert exit_code([*UNREACHABLE, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert (
        "argument --output:" in err and "symbolic link" in err and str(link) in err and "Traceback" not in err
    )
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_bench_refuses_an_output_that_is_a_directory_or_a_fifo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    out = tmp_path / "r.json"
    if kind == "directory":
        out.mkdir()
    else:
        os.mkfifo(out)
    code = within(10, lambda: exit_code([*UNREACHABLE, "--output", str(out)]), fifos=(out,))
    err = capsys.readouterr().err
    assert (
        code == 2 and "argument --output:" in err and ("directory" if kind == "directory" else "FIFO") in err
    )
    assert "Traceback" not in err


def test_the_writers_refuse_links_fifos_and_folders(tmp_path: Path) -> None:
    result = fixture_result()
    record = RequestRecord.from_dict(
        json.loads((FIXTURES / "results_v1.requests.jsonl").read_text().splitlines()[0])
    )
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    for name in ("r.json", "r.csv", "r.requests.jsonl", "plot.png"):
        (tmp_path / name).symlink_to(target)
    paths = OutputPaths.for_results(tmp_path / "r.json")
    with pytest.raises(InputFileError, match="symbolic link"):
        write_results(result, paths.results)
    with pytest.raises(InputFileError, match="symbolic link"):
        append_request_records([record], paths.requests_jsonl)
    with pytest.raises(InputFileError, match="symbolic link"):
        write_all(result, dataclass_replace_jsonl(paths, tmp_path / "fresh.jsonl"))
    with pytest.raises(InputFileError, match="symbolic link"):
        write_bytes(tmp_path / "plot.png", b"\x89PNG")
    assert target.read_text() == "keep me"
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match="FIFO"):
        within(5, lambda: append_request_records([record], fifo), fifos=(fifo,))
    folder = tmp_path / "folder.json"
    folder.mkdir()
    with pytest.raises(InputFileError, match="directory"):
        write_results(result, folder)


def dataclass_replace_jsonl(paths: OutputPaths, jsonl: Path) -> OutputPaths:
    return OutputPaths(results=paths.results, levels_csv=paths.levels_csv, requests_jsonl=jsonl)


def test_a_link_at_the_old_fixed_temporary_name_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "r.json.tmp").symlink_to(target)  # the name the writer used to write through
    (tmp_path / "r.csv.tmp").symlink_to(target)
    write_all(fixture_result(), OutputPaths.for_results(tmp_path / "r.json"))
    assert target.read_text() == "keep me"
    assert json.loads((tmp_path / "r.json").read_text())["label"] == fixture_result().label
    assert (tmp_path / "r.csv").read_text().startswith("label,")


def test_writing_keeps_regular_files_working(tmp_path: Path) -> None:
    paths = OutputPaths.for_results(tmp_path / "sub" / "r.json")
    record = RequestRecord.from_dict(
        json.loads((FIXTURES / "results_v1.requests.jsonl").read_text().splitlines()[0])
    )
    write_all(fixture_result(), paths, [record])
    write_all(fixture_result(), paths, [record])
    assert len(paths.requests_jsonl.read_text().splitlines()) == 2
    assert load_results(paths.results) == fixture_result()
    assert not [p for p in paths.results.parent.iterdir() if p.name.endswith(".tmp")]


# --- writing: report --out ------------------------------------------------------------------------


def test_report_out_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.write_text("a file")
    assert exit_code(["report", str(FIXTURES / "results_v1.json"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "argument --out:" in err and "not a folder" in err and "Traceback" not in err
    assert out.read_text() == "a file"


@pytest.mark.parametrize("name", ["report.md", "latency_vs_concurrency.png"])
def test_report_does_not_write_through_a_link_in_the_out_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    out = tmp_path / "rep"
    out.mkdir()
    (out / name).symlink_to(target)
    assert exit_code(["report", str(FIXTURES / "results_v1.json"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "argument --out:" in err and "symbolic link" in err and name in err and "Traceback" not in err
    assert target.read_text() == "keep me"


def test_report_does_not_block_on_a_fifo_in_the_out_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    out.mkdir()
    fifo = out / "report.md"
    os.mkfifo(fifo)
    code = within(
        60, lambda: exit_code(["report", str(FIXTURES / "results_v1.json"), "--out", str(out)]), fifos=(fifo,)
    )
    err = capsys.readouterr().err
    assert code == 2 and "FIFO" in err and "Traceback" not in err
