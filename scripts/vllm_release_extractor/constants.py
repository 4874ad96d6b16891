"""Settings of the extraction: versions, output folder, the simulated process image."""

from __future__ import annotations

from pathlib import Path

# The command's --help text (scripts/extract_vllm_release.py's docstring).
DESCRIPTION = """Extract per-release vLLM knowledge from vLLM's own released wheels.

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
EXTRACTED_BY = "scripts/extract_vllm_release.py"


REPO_ROOT = Path(__file__).resolve().parents[2]


DEFAULT_OUT = REPO_ROOT / "speculative_infra" / "catalog" / "data" / "vllm"


# Every final vLLM release on PyPI from 0.10.0 through 0.33.0 (``pip index versions
# vllm``). Post releases and 4-part versions (0.10.1.1) are deliberately left out.
DEFAULT_VERSIONS: tuple[str, ...] = (
    "0.10.0", "0.10.1", "0.10.2",
    "0.11.0", "0.11.1", "0.11.2",
    "0.12.0", "0.13.0",
    "0.14.0", "0.14.1",
    "0.15.0", "0.15.1",
    "0.16.0", "0.17.0", "0.17.1",
    "0.18.0", "0.18.1",
    "0.19.0", "0.19.1",
    "0.20.0", "0.20.1", "0.20.2",
    "0.21.0", "0.22.0", "0.22.1",
    "0.23.0", "0.24.0", "0.25.0", "0.25.1",
    "0.26.0", "0.27.0", "0.27.1",
    "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)  # fmt: skip


# The process image the serve parser is built in: ``vllm serve ...`` on CPython 3.12
# (the SageMaker vLLM DLCs ship py312). Only used to decide ``if`` statements.
SIMULATED_ARGV = ["vllm", "serve"]


SIMULATED_PY = (3, 12, 0)


MAX_CALL_DEPTH = 12


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))
