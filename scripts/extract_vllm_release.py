#!/usr/bin/env python3
"""Regenerate the per-release vLLM data from vLLM's wheels (`--help`, and the docstring of
scripts/vllm_release_extractor/, say what is extracted and how)."""

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
