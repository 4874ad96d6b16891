"""SI416: speculative.max_model_len against the target's max_model_len, held to each release's own
SpeculativeConfig._maybe_override_draft_max_model_len (tests/golden/vllm_speculative_max_len.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.rules.speculative_max_len import speculative_max_len_refusal
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_speculative_max_len.json").read_text())
CASES = [
    pytest.param(release, probe["inputs"], probe["verdict"], id=f"{release}-{i}")
    for release, record in GOLDEN["releases"].items()
    for i, probe in enumerate(record["probes"])
    if probe["inputs"]["speculative"] is not None
]


def test_the_golden_table_refuses_both_ways_in_every_release() -> None:
    for release, record in GOLDEN["releases"].items():
        messages = {p["verdict"].get("message", "") for p in record["probes"]}
        assert any("draft_max_model_len" in m for m in messages), release
        assert any("target_max_model_len" in m for m in messages), release


@pytest.mark.parametrize(("release", "inputs", "verdict"), CASES)
def test_the_refusal_matches_the_release(
    release: str, inputs: dict[str, int], verdict: dict[str, Any]
) -> None:
    found = speculative_max_len_refusal(
        release, inputs["speculative"], target=inputs["target"], draft=inputs["draft"]
    )
    assert (found[1] if found else None) == verdict.get("message")


def test_the_methods_without_a_draft_are_those_the_releases_skip() -> None:
    skipped = load_catalog().vllm.speculative_max_model_len_checks.methods_without_draft
    named: set[str] = set()
    for record in GOLDEN["releases"].values():
        guards = " ".join(record["reached_when"])
        assert "self.model is not None" in guards
        named |= {m for m in skipped if repr(m) in guards}
    assert named == skipped


def _si416(speculative: dict[str, Any], engine: dict[str, Any] | None = None) -> Any:
    spec = deep_merge(REFERENCE_SPEC, {"speculative": speculative, "engine": engine or {}})
    return next((f for f in check(spec).findings if f.code == "SI416"), None)


def test_boundary_at_the_target_max_model_len() -> None:
    # The reference spec serves max_model_len 4096.
    assert _si416({"max_model_len": 4096}) is None
    assert _si416({"max_model_len": "4096"}) is None  # pydantic reads a string of digits
    found = _si416({"max_model_len": 4097})
    assert found is not None and found.field == "speculative.max_model_len"
    assert "speculative_max_model_len=4097 cannot be larger than target_max_model_len=4096" in found.message
    assert "at most 4096" in found.fix
    assert _si416({"max_model_len": 8192}, {"max_model_len": 8192}) is None


@pytest.mark.parametrize("value", [0, -1, True, "4k", 1.5, [4096]])
def test_a_value_vllm_cannot_read_is_named(value: Any) -> None:
    found = _si416({"max_model_len": value})
    assert found is not None and "positive integer" in found.message and repr(value) in found.message


def test_a_long_value_is_shortened_in_the_message() -> None:
    found = _si416({"max_model_len": "x" * 10_000})
    assert found is not None and len(found.message) < 200


def test_methods_without_a_draft_skip_the_comparison() -> None:
    ngram = {"method": "ngram", "model": None, "prompt_lookup_max": 4, "max_model_len": 100_000}
    assert _si416(ngram) is None
