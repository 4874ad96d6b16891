"""`bench -o results.json`: the result files, written after each level once the run has started.

A run that never started writes no results file, and leaves one from an earlier run where it was: the
client could not be set up (no region, an endpoint URL it cannot use), or every request was refused for
its credentials (none found, so none signed, or a signature the runtime refused). Those are problems of
the client's own set-up; what the target does (refusing connections, answering with errors) is measured
and kept.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from speculative_infra.benchmark.failures import FailureClass
from speculative_infra.benchmark.files import OutputPaths, write_all, write_results
from speculative_infra.benchmark.results import BenchmarkResult, RequestRecord
from speculative_infra.benchmark.sweep import LevelReport
from speculative_infra.safe_files import output_problem as safe_output_problem

# Failures of the client's own set-up: no request of the run can reach the model.
_SET_UP_FAILURES = frozenset({FailureClass.CREDENTIALS_ERROR.value})


def started(records: Iterable[RequestRecord]) -> bool:
    """Whether any request got past the client's set-up: answered, or failed for another reason than
    credentials. Cancelled requests do not count (nothing came back)."""
    return any(
        r.status == "ok" or (r.status == "failed" and r.failure_class not in _SET_UP_FAILURES)
        for r in records
    )


def _nearest_existing(path: Path) -> Path:
    return next(p for p in (path, *path.parents) if p.exists())


class ResultFiles:
    """The results, CSV and per-request files of one run (benchmark.files.OutputPaths)."""

    def __init__(self, paths: OutputPaths) -> None:
        self.paths = paths
        self.started = False  # a request got past the set-up: the files hold this run

    def output_problem(self) -> str | None:
        """Why one of the three files must not be written (a directory, FIFO, device or symbolic link
        stands there): a bad --output, reported before a request is spent. None when all may be."""
        for path in (self.paths.results, self.paths.levels_csv, self.paths.requests_jsonl):
            try:
                os.lstat(path)
            except OSError:
                continue  # missing (written new), or a folder that cannot hold it: check_writable says
            if (problem := safe_output_problem(path)) is not None:
                return f"{path} {problem}"
        return None

    def check_writable(self) -> None:
        """Raise OSError now if the results cannot be written, before a request is spent; writes nothing."""
        for path in (self.paths.results, self.paths.levels_csv, self.paths.requests_jsonl):
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        where = _nearest_existing(self.paths.results.parent)
        if not where.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(where))
        if not os.access(where, os.W_OK | os.X_OK):
            raise PermissionError(errno.EACCES, "not writable", str(where))

    def after_level(self, report: LevelReport) -> None:
        if not self.started:
            if not started(report.records):
                return
            self.started = True
            self.paths.requests_jsonl.unlink(missing_ok=True)  # appended per level: this run's alone
        write_all(report.state.result, self.paths, report.records)

    def at_end(self, result: BenchmarkResult) -> Path | None:
        """The results file with the run's final status, or None when the run never started (none written)."""
        if not self.started:
            return None
        write_results(result, self.paths.results)
        return self.paths.results
