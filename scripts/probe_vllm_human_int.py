#!/usr/bin/env python3
"""Run each vLLM release's own human_readable_int on probe strings and write the golden table
tests/golden/vllm_human_readable_int.json (what every release accepts, and as what number).

    .venv/bin/python scripts/probe_vllm_human_int.py                    # every default release
    .venv/bin/python scripts/probe_vllm_human_int.py --versions 0.11.0  # some

Each wheel is downloaded (pip download --no-deps), the module that defines human_readable_int is read
from it, and that function alone is executed with the standard library's re and argparse (later
releases import the `regex` package as re; the probes use nothing where the two differ). The verdicts
are the wheels' code's own, never this library's parser: tests/rules/test_human_int.py holds the
parser to them.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import DEFAULT_VERSIONS
from scripts.vllm_release_extractor.records import download_wheel

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_human_readable_int.json"
# Digits, signs, underscores, spaces, every suffix in either case, decimals with each kind of suffix,
# IEC-style suffixes, and text int() or float() would take that a size parser might not.
PROBES = (
    "16",
    " 16 ",
    "0",
    "-1",
    "+8",
    "1_000",
    "007",
    "1k",
    "1K",
    "25.6k",
    "1.5K",
    "2m",
    "2M",
    "3g",
    "3G",
    "1t",
    "1T",
    "1.5t",
    "1Ki",
    "1Mi",
    "1e3",
    "1.0",
    "0x10",
    "k",
    "8 k",
    "",
    "auto",
    "inf",
    "nan",
    "\uff11\uff16",
    "\u00b2",
    "1kk",
    "-1k",
    "+1k",
)


def human_readable_int_source(wheel: Path) -> tuple[str, str]:
    """(module path in the wheel, source of the human_readable_int function)."""
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.startswith("vllm/") or not name.endswith(".py"):
                continue
            text = archive.read(name).decode("utf-8", errors="replace")
            if "def human_readable_int(" not in text:
                continue
            for node in ast.parse(text).body:
                if isinstance(node, ast.FunctionDef) and node.name == "human_readable_int":
                    return name, ast.get_source_segment(text, node) or ""
    raise RuntimeError(f"{wheel.name}: no human_readable_int")


def verdicts(source: str) -> dict[str, Any]:
    """probe -> the integer the function returns, or "refused" when it raises."""
    namespace: dict[str, Any] = {"re": re, "argparse": argparse}
    exec(compile(source, "human_readable_int", "exec"), namespace)  # the wheel's own function, alone
    function = namespace["human_readable_int"]
    out: dict[str, Any] = {}
    for probe in PROBES:
        try:
            out[probe] = int(function(probe))
        except (ValueError, TypeError, OverflowError, argparse.ArgumentTypeError):
            out[probe] = "refused"
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--versions", nargs="+", default=list(DEFAULT_VERSIONS))
    args = parser.parse_args()
    table = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {"releases": {}}
    for version in args.versions:
        folder = Path(tempfile.mkdtemp(prefix=f"vllm-{version}-"))
        try:
            wheel = download_wheel(version, folder)
            module, source = human_readable_int_source(wheel)
            table["releases"][version] = {
                "source": f"vllm=={version} wheel from PyPI, {module}: human_readable_int",
                "verdicts": verdicts(source),
            }
            print(f"{version}: {module}", file=sys.stderr)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    table["description"] = (
        "What each vLLM release's own human_readable_int returns for each probe (written by "
        "scripts/probe_vllm_human_int.py from the wheels)."
    )
    table["releases"] = dict(
        sorted(table["releases"].items(), key=lambda kv: tuple(map(int, kv[0].split("."))))
    )
    OUT.write_text(json.dumps(table, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
