"""The integer parsers against each vLLM release's own code: tests/golden/vllm_human_readable_int.json
holds what every release's human_readable_int returned for each probe (scripts/probe_vllm_human_int.py
ran the function out of each wheel). Nothing here reads the catalog entry to find the expectation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog.vllm_release import available_vllm_versions
from speculative_infra.check import check
from speculative_infra.human_int import parse_human_int, parses_as_int
from speculative_infra.rules.engine_args import reads_tera_suffixes
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads(
    (Path(__file__).resolve().parents[1] / "golden" / "vllm_human_readable_int.json").read_text(
        encoding="utf-8"
    )
)["releases"]
CASES = [
    pytest.param(version, probe, verdict, id=f"{version}-{probe!r}")
    for version, entry in GOLDEN.items()
    for probe, verdict in entry["verdicts"].items()
]


def test_every_catalogued_release_was_probed() -> None:
    assert set(available_vllm_versions()) <= set(GOLDEN)


@pytest.mark.parametrize(("version", "probe", "verdict"), CASES)
def test_parse_human_int_reads_what_the_release_reads(version: str, probe: str, verdict: Any) -> None:
    expected = None if verdict == "refused" else verdict
    assert parse_human_int(probe, tera=reads_tera_suffixes(version)) == expected


def test_the_tera_boundary_is_where_the_releases_change() -> None:
    """The first release that reads "1t" is the first one reads_tera_suffixes allows, and none before."""
    ordered = sorted(GOLDEN, key=lambda v: tuple(map(int, v.split("."))))
    reads = [GOLDEN[v]["verdicts"]["1t"] != "refused" for v in ordered]
    assert reads == sorted(reads) and any(reads)  # one boundary: refused, then read, never back
    first = ordered[reads.index(True)]
    assert reads_tera_suffixes(first) and not reads_tera_suffixes(ordered[reads.index(True) - 1])


@pytest.mark.parametrize(
    ("text", "accepted"),
    [("8", True), ("-1", True), ("+8", True), ("1_000", True), (" 8 ", True), ("8k", False), ("1.0", False),
     ("0x10", False), ("", False), ("\u00b2", False)],
)  # fmt: skip
def test_plain_int_flags_take_what_int_takes(text: str, accepted: bool) -> None:
    assert parses_as_int(text) is accepted


def _codes(engine: dict[str, Any], version: str) -> set[str]:
    spec = deep_merge(REFERENCE_SPEC, {"engine": engine, "container": {"version": version}})
    return {f.code for f in check(spec).findings if f.code == "SI502"}


def test_si502_refuses_a_tera_size_only_where_the_release_does() -> None:
    ordered = sorted(GOLDEN, key=lambda v: tuple(map(int, v.split("."))))
    catalogued = [v for v in ordered if v in available_vllm_versions()]
    before = [v for v in catalogued if GOLDEN[v]["verdicts"]["1T"] == "refused"]
    after = [v for v in catalogued if GOLDEN[v]["verdicts"]["1T"] != "refused"]
    assert before and after
    engine = {"max_num_batched_tokens": "1T"}
    assert _codes(engine, before[-1]) == {"SI502"} and _codes(engine, after[0]) == set()


def test_si502_takes_a_signed_or_underscored_plain_integer() -> None:
    assert _codes({"seed": "-1"}, "0.15.1") == set() and _codes({"seed": "1_000"}, "0.15.1") == set()
    assert _codes({"seed": "1.5"}, "0.15.1") == {"SI502"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("9" * 400 + "k", None),  # float overflow: vLLM raises OverflowError, the server does not start
        ("9" * 300 + "k", int(float("9" * 300) * 1000)),  # the largest finite ones still read
        ("9" * 5000, None),  # past Python's int() digit limit: ValueError in vLLM as here
    ],
)
def test_sizes_too_large_for_a_float_or_int_are_refused_not_crashed(text: str, expected: Any) -> None:
    assert parse_human_int(text) == expected
