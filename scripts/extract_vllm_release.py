#!/usr/bin/env python3
"""Extract per-release vLLM knowledge from vLLM's own released wheels.

For each vLLM version this script downloads the wheel (``pip download --no-deps
--only-binary=:all:``), hashes it, and reads the Python sources inside it *statically*
with :mod:`ast`. vLLM (and torch) are never imported.

What is extracted:

* every ``vllm serve`` flag: the serve parser is rebuilt by symbolically running
  ``make_arg_parser`` (found through ``vllm/entrypoints/cli/serve.py``), which calls
  ``FrontendArgs.add_cli_args`` and ``AsyncEngineArgs.add_cli_args`` (and thereby
  ``EngineArgs.add_cli_args``). ``get_kwargs(SomeConfig)`` is reproduced statically from
  the config dataclass's fields and type hints, following the same rules as vLLM's
  ``_compute_kwargs`` (bool -> ``BooleanOptionalAction``, ``Literal`` -> choices, ...).
* ``SpeculativeConfig``: field names, the values allowed for ``method``, the EAGLE3
  target allow-list (where one exists), and whether unknown keys are rejected.

Run ``python scripts/extract_vllm_release.py --all`` to regenerate
``speculative_infra/catalog/data/vllm/*.json`` and
``python scripts/extract_vllm_release.py --print-table`` to print the summary table.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The extractor is a package next to this command (scripts/vllm_release_extractor/), one job per module.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vllm_release_extractor.command import main
from vllm_release_extractor.constants import DEFAULT_VERSIONS, version_key
from vllm_release_extractor.dataclass_fields import compute_field_kwargs
from vllm_release_extractor.extractor import Extractor
from vllm_release_extractor.records import dump_json, extract_release
from vllm_release_extractor.release import extract_serve_flags, extract_speculative
from vllm_release_extractor.source_tree import SourceTree
from vllm_release_extractor.tables import long_option_count, methods_table, release_table
from vllm_release_extractor.values import ArgType, ExtRef

__all__ = [
    "DEFAULT_VERSIONS",
    "ArgType",
    "ExtRef",
    "Extractor",
    "SourceTree",
    "compute_field_kwargs",
    "dump_json",
    "extract_release",
    "extract_serve_flags",
    "extract_speculative",
    "long_option_count",
    "main",
    "methods_table",
    "release_table",
    "version_key",
]

if __name__ == "__main__":
    sys.exit(main())
