"""A bad argument found after parsing, reported the way argparse reports its own: usage, then the error."""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2


def usage_error(parser: argparse.ArgumentParser, message: str) -> int:
    parser.print_usage(sys.stderr)
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return EXIT_USAGE
