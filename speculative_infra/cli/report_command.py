"""`speculative-infra report`: plots and report.md from `bench` results files, or from a load test's results."""

from __future__ import annotations

import argparse
import re
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from speculative_infra.cli.usage import usage_error
from speculative_infra.safe_files import (
    MAX_RESULTS_BYTES,
    MIB,
    InputFileError,
    output_problem,
    read_json,
    write_text,
)

if TYPE_CHECKING:
    from speculative_infra.benchmark.results import BenchmarkResult

EXIT_OK = 0
EXIT_NOT_RUN = 3


def add_report_command(subparsers: Any) -> None:
    report = subparsers.add_parser(
        "report",
        help="plots and a Markdown summary from results files",
        description="Render PNG plots and report.md from one or more `bench` results files (several = compared).",
        epilog="exit status: 0 written; 2 a results file is missing, unreadable, not a results document or past "
        "the limits (docs/security.md, Hostile input), or --out cannot be written there; 3 a disk error while "
        "writing.",
    )
    report.add_argument("results", nargs="+", type=Path, metavar="results.json")
    report.add_argument("--out", type=Path, required=True, metavar="DIR")
    report.set_defaults(handler=lambda args: run_report(args, report))


def run_report(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    # The engine loads to report, not to build the parser of every command.
    from speculative_infra.benchmark.files import load_results
    from speculative_infra.benchmark.report_markdown import result_problem, results_problem

    for path in args.results:
        if (problem := _input_problem(path)) is not None:
            return usage_error(parser, f"argument results.json: {path}: {problem}")
    if (problem := _output_problem(args.out)) is not None:
        return usage_error(parser, f"argument --out: {args.out}: {problem}")
    load_test = _load_test_result(args.results)
    if load_test is not None:
        return _report_load_test(parser, load_test, args)
    results: list[BenchmarkResult] = []
    for path in args.results:
        try:
            results.append(load_results(path))
        except InputFileError as exc:  # bad input, as every command reports it: exit 2
            if exc.problem.startswith("cannot read"):  # missing, no permission
                return usage_error(parser, f"argument results.json: {exc}")
            return usage_error(
                parser,
                f"argument results.json: {path} is not a bench results file: {_json_problem(exc.problem)}",
            )
        except ValueError as exc:  # ConfigError: valid JSON of the wrong shape
            return usage_error(parser, f"argument results.json: {path} is not a bench results file: {exc}")
        if (problem := result_problem(results[-1])) is not None:
            return usage_error(parser, f"argument results.json: {path}: {problem}")
    if (problem := results_problem(results)) is not None:
        return usage_error(parser, f"argument results.json: {problem}")
    try:
        try:
            from speculative_infra.benchmark.report import render_report  # matplotlib only when reporting
        except ModuleNotFoundError as exc:
            if exc.name is None or not exc.name.startswith("matplotlib"):
                raise
            return _report_without_matplotlib(results, args.out)
        files = render_report(results, args.out)
    except InputFileError as exc:  # an output file that is no regular file (a link, a FIFO, a folder)
        return usage_error(parser, f"argument --out: {exc}")
    except OSError as exc:
        print(f"error: cannot write the report in {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_NOT_RUN
    print(f"wrote {files.markdown} and {len(files.images)} plots", file=sys.stderr)
    return EXIT_OK


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def _input_problem(path: Path) -> str | None:
    """A results path that is no file to read (a directory, FIFO, device) or over the size limit: a bad
    argument (exit 2). A missing file or one that is not a results document exits 3, as before."""
    try:
        info = path.stat()
    except OSError:
        return None  # load_results says why
    if not stat.S_ISREG(info.st_mode):
        return f"is {_file_kind(info.st_mode)}; expected a results.json file (bench --output)"
    if info.st_size > MAX_RESULTS_BYTES:
        return (
            f"the results file has {info.st_size} bytes; allowed: at most {MAX_RESULTS_BYTES // MIB} MiB "
            "(a results file of thousands of levels is a few MiB)"
        )
    return None


def _output_problem(out_dir: Path) -> str | None:
    try:
        mode = out_dir.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot use it: {exc.strerror or exc}"
    if stat.S_ISLNK(mode) and not out_dir.is_dir():
        return "is a symbolic link to something that is not a folder; --out names a folder"
    if not out_dir.is_dir():
        return "is not a folder; --out names a folder (made when missing) to write report.md and plots into"
    markdown = out_dir / "report.md"
    if (problem := output_problem(markdown)) is not None:
        return f"{markdown} {problem}"
    return None


def _json_problem(problem: str) -> str:
    """safe_files' "not valid JSON (line 1, column 2: Expecting ...)" in the json module's own words."""
    match = re.fullmatch(r"not valid JSON \(line (\d+), column (\d+): (.*)\)", problem, re.DOTALL)
    return f"{match[3]}: line {match[1]} column {match[2]} (not valid JSON)" if match else problem


def _report_without_matplotlib(results: list[BenchmarkResult], out_dir: Path) -> int:
    """A plain install has no matplotlib: the same tables with the post-deploy Lambda's SVG charts."""
    from speculative_infra.benchmark.report_markdown import render_markdown
    from speculative_infra.benchmark.report_svg import sweep_charts

    out_dir.mkdir(parents=True, exist_ok=True)
    charts = sweep_charts(results)
    for name, svg in charts.items():
        write_text(out_dir / name, svg, what="chart")
    markdown = out_dir / "report.md"
    write_text(markdown, render_markdown(results), what="report")
    print(
        f"wrote {markdown} and {len(charts)} SVG charts (PNG plots need matplotlib: "
        "pip install 'speculative-infra[bench]')",
        file=sys.stderr,
    )
    return EXIT_OK


def _load_test_result(paths: list[Path]) -> Any:
    """A distributed load test's results.json (only ever reported alone), or None for bench results."""
    from speculative_infra.benchmark.distributed.merge import RESULT_KIND

    for path in paths:
        try:
            document = read_json(path, max_bytes=MAX_RESULTS_BYTES, what="results file")
        except (InputFileError, ValueError):
            continue  # the bench path reports it
        if isinstance(document, dict) and document.get("kind") == RESULT_KIND:
            return (path, document, len(paths))
    return None


def _report_load_test(parser: argparse.ArgumentParser, found: Any, args: argparse.Namespace) -> int:
    from speculative_infra.benchmark.distributed.report import load_test_charts, render_load_test_markdown

    path, document, count = found
    if count > 1:
        return usage_error(parser, f"argument results.json: {path} is a load test's results: report it alone")
    try:
        files = {"report.md": render_load_test_markdown(document), **load_test_charts(document)}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return usage_error(
            parser,
            f"argument results.json: {path} is not a complete load test results file ({type(exc).__name__}: {exc})",
        )
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            write_text(args.out / name, text)
    except InputFileError as exc:
        return usage_error(parser, f"argument --out: {exc}")
    except OSError as exc:
        print(f"error: cannot write the report in {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_NOT_RUN
    print(f"wrote {args.out / 'report.md'} and {len(files) - 1} charts", file=sys.stderr)
    return EXIT_OK
