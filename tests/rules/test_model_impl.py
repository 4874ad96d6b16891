"""engine.model_impl as each release takes it: the command line's choices refuse an unknown value up to
0.10.2 (SI502); from 0.11.0 ModelConfig types it `str | ModelImpl` and nothing refuses one, and since the
registry compares it only with "auto", "transformers" and "terratorch", it loads as "vllm" does (no
Transformers fallback). Held to tests/golden/vllm_model_impl.json (scripts/probe_vllm_model_impl.py) and
to the extractor's flag records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_model_impl.json").read_text())[
    "releases"
]
FACTS = load_catalog().vllm.model_impl


@pytest.mark.parametrize("release", list(GOLDEN))
def test_the_values_and_where_they_are_checked_are_each_release_own(release: str) -> None:
    record = GOLDEN[release]
    choices = next(f.choices for f in load_vllm_release(release).serve_flags if f.dest == "model_impl")
    if FACTS.unchecked(release):
        assert choices is None and record["field_annotation"].replace(
            "Union[str, ModelImpl]", "str | ModelImpl"
        ) == ("str | ModelImpl")
        assert record["values"] == list(FACTS.values)
    else:
        assert choices is not None and sorted(choices) == sorted(record["values"])


@pytest.mark.parametrize("release", [r for r in GOLDEN if FACTS.unchecked(r)])
def test_an_unknown_value_takes_the_branches_vllm_takes(release: str) -> None:
    # Every comparison names a known value; the one that names "vllm" is the assert on the Transformers
    # backend's path (model_loader/utils.py), which neither "vllm" nor an unknown value reaches.
    for module, op, constant in GOLDEN[release]["comparisons"]:
        assert constant in FACTS.values, (release, module, constant)
        if constant == "vllm":
            assert module.endswith("model_loader/utils.py") and op == "NotEq", (release, module)


def _findings(engine: dict[str, Any], version: str = "0.15.1", **changes: Any) -> dict[str, Any]:
    spec = deep_merge(REFERENCE_SPEC, {"engine": engine, "container": {"version": version}, **changes})
    return {f.code: f for f in check(spec).findings}


@pytest.mark.parametrize("value", ["auto", "vllm", "transformers", "terratorch"])
def test_a_known_value_is_not_named(value: str) -> None:
    assert "SI342" not in _findings({"model_impl": value})


@pytest.mark.parametrize("value", ["Transformers", "vllmx", " auto", ""])
def test_an_unknown_value_is_named_with_what_vllm_does(value: str) -> None:
    found = _findings({"model_impl": value})["SI342"]
    assert found.severity.value == "warning" and found.field == "engine.model_impl"
    assert repr(value) in found.message and "as with model_impl vllm" in found.message
    assert "auto, vllm, transformers, terratorch" in found.message


def test_the_oldest_catalogued_release_already_takes_any_string() -> None:
    # Every catalogued container ships vLLM 0.11.0 or newer (DLC 0.11.0 first), where the choices are gone.
    assert (
        min(load_catalog().container_vllm_versions("vllm"), key=lambda v: tuple(map(int, v.split("."))))
        == "0.11.0"
    )
    assert "SI342" in _findings({"model_impl": "vllmx"}, version="0.11.0")


def test_an_unknown_value_on_an_unregistered_architecture_is_refused_as_vllm_would_be() -> None:
    model = {"architecture": "AcmeForCausalLM"}
    refused = _findings({"model_impl": "Transformers"}, model=model)
    assert "SI341" in refused and "'Transformers'" in refused["SI341"].message
    assert "SI340" not in refused
    assert "SI341" not in _findings({"model_impl": "transformers"}, model=model)
