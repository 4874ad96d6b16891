"""Settings of the extraction: versions, output folder, the simulated process image."""

from __future__ import annotations

from pathlib import Path

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


# str methods the interpreter may call on a known string, and that a lambda type= may chain.
SAFE_STR_METHODS = {"replace", "join", "lower", "upper", "strip", "lstrip", "rstrip", "split",
                    "startswith", "endswith", "removeprefix", "removesuffix", "format"}  # fmt: skip
