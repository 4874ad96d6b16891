"""The command line of scripts/extract_vllm_release.py."""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from . import __doc__ as PACKAGE_DOC
from .constants import DEFAULT_OUT, DEFAULT_VERSIONS
from .records import process_version
from .tables import load_records, methods_table, release_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=PACKAGE_DOC, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--versions", nargs="+", metavar="X.Y.Z", help="vLLM versions to extract")
    group.add_argument("--all", action="store_true", help="every default release 0.10.0 .. 0.33.0")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory for <version>.json")
    parser.add_argument("--cache-dir", type=Path, default=None, help="where wheels go (default: a temp dir)")
    parser.add_argument("--keep-wheels", action="store_true", help="do not delete wheels after extraction")
    parser.add_argument("--jobs", type=int, default=3, help="versions processed in parallel (default 3)")
    parser.add_argument("--print-table", action="store_true", help="print the per-release summary table")
    parser.add_argument("--verbose", action="store_true", help="print every extraction warning")
    args = parser.parse_args(argv)

    versions: list[str] = list(DEFAULT_VERSIONS) if args.all else list(args.versions or [])
    if not versions and not args.print_table:
        parser.error("give --versions, --all or --print-table")

    out_dir: Path = args.out
    if versions:
        out_dir.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with contextlib.ExitStack() as stack:
            if args.cache_dir is None:
                cache_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="vllm-wheels-")))
            else:
                cache_dir = args.cache_dir
                cache_dir.mkdir(parents=True, exist_ok=True)
            failures = 0
            with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
                futures = {
                    pool.submit(process_version, v, cache_dir, out_dir, args.keep_wheels): v for v in versions
                }
                results: dict[str, dict[str, Any]] = {}
                for fut in concurrent.futures.as_completed(futures):
                    version = futures[fut]
                    try:
                        _, info = fut.result()
                    except Exception as exc:
                        failures += 1
                        print(f"{version}: FAILED: {exc!r}", file=sys.stderr)
                        continue
                    results[version] = info
                    print(
                        f"{version}: {info['flags']} serve flags "
                        f"(download {info['download_s']}s, total {info['total_s']}s, "
                        f"{len(info['warnings'])} warnings, unknown types {info['unknown_type']}, "
                        f"unknown choices {info['unknown_choices']})",
                        file=sys.stderr,
                    )
                    if args.verbose:
                        for w in info["warnings"]:
                            print(f"  warning: {w}", file=sys.stderr)
        elapsed = time.monotonic() - started
        print(f"extracted {len(results)} release(s) in {elapsed:.1f}s into {out_dir}", file=sys.stderr)
        if failures:
            return 1
    if args.print_table:
        records = load_records(out_dir)
        print(release_table(records))
        print()
        print(methods_table(records))
    return 0
