"""The `--check` / write step every docs generator shares: a page is rewritten, or checked to be current."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def write_or_check(target: Path, text: str, description: str) -> int:
    """`--check`: exit 1 if the page differs from `text` (used by `make test`); else write it."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help=f"fail if {target.name} is out of date")
    args = parser.parse_args()
    if args.check:
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            print(f"docs/{target.name} is out of date: run `make docs`", file=sys.stderr)
            return 1
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"wrote {target}")
    return 0
