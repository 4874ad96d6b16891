"""SI418: a draft whose rotary cache (its config's max_position_embeddings) is shorter than the target's
max_model_len, in the releases whose SpeculativeConfig does not raise it. Held to each wheel's own
function and call site (tests/golden/vllm_draft_rope_cache.json, written by
scripts/probe_vllm_draft_rope_cache.py), then boundaries through `check`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ConfigLengths, version_tuple
from speculative_infra.check import check
from speculative_infra.context_limit import rope_parameters
from speculative_infra.facts.hub_config import FetchedFacts
from tests.conftest import REFERENCE_SPEC, deep_merge, fetched_eagle3_head

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_draft_rope_cache.json").read_text())
FACTS = load_catalog().vllm.draft_rope_cache
METHODS = ("eagle", "eagle3", "dflash", "dspark", "draft_model", "mtp")


def _methods_raised(condition: str) -> set[str]:
    """The methods the call's guard admits: its last clause, `self.method in (...)` or `!= '...'`."""
    last = condition.rsplit(" and ", 1)[-1]
    if m := re.fullmatch(r"self\.method in \((.*)\)", last):
        return set(re.findall(r"'([^']+)'", m.group(1)))
    if m := re.fullmatch(r"self\.method != '([^']+)'", last):
        return {method for method in METHODS if method != m.group(1)}
    raise AssertionError(f"unread guard: {last}")


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_the_catalog_says_where_each_release_raises_the_draft_s_length(release: str) -> None:
    record = GOLDEN["releases"][release]
    raised = (
        set().union(*(_methods_raised(c) for c in record["raised_when"])) if record["raised_when"] else set()
    )
    for method in ("eagle", "eagle3", "dflash", "dspark"):
        since = FACTS.raised_since[method]
        assert (method in raised) is (version_tuple(release) >= version_tuple(since)), (release, method)
    # In every release the Llama decoder layer sizes its rotary cache with the draft's own config value.
    assert record["llama_rope_max_position"] == {
        "max_position": ["self.max_position_embeddings"],
        "max_position_embeddings": ["getattr(config, 'max_position_embeddings', 8192)"],
    }


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_reads_past_the_cache_exactly_where_the_release_leaves_it_short(release: str) -> None:
    for probe in GOLDEN["releases"][release]["probes"]:
        draft, target = probe["draft_max_position_embeddings"], probe["target_max_model_len"]
        if draft is None:
            assert probe.get("left") is None  # nothing to raise; the layer's default applies (not judged)
            continue
        rope = {probe["rope_type"]} if "rope_type" in probe else set()
        cache = probe.get("left", draft)  # the release's own function, where it has one
        short = cache < target and rope <= FACTS.rope_types_sized_by_max_position
        assert FACTS.reads_past_cache(release, "eagle3", draft, rope, target) is short, (release, probe)


def test_methods_that_do_not_share_the_target_s_positions_are_not_judged() -> None:
    for method in ("draft_model", "mtp", "ngram", None):
        assert not FACTS.reads_past_cache("0.15.1", method, 2048, set(), 8192)


LLAMA = {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}}
YUHUILI = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def _si418(version: str, max_model_len: int | None, **changes: Any) -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {**LLAMA, "container": {"version": version}, "speculative": {"model": YUHUILI}, **changes},
    )
    if max_model_len is None:
        del spec["engine"]["max_model_len"]
    else:
        spec["engine"]["max_model_len"] = max_model_len
    return next((f for f in check(spec).findings if f.code == "SI418"), None)


def test_boundary_at_the_2048_position_head() -> None:
    assert _si418("0.26.0", 2048) is None
    found = _si418("0.26.0", 2049)
    assert found is not None and found.severity.value == "error" and found.field == "speculative.model"
    assert "rotary cache of 2048 positions" in found.message and "max_model_len 2049" in found.message
    assert "#48894" in found.message and "device-side assert" in found.message
    assert "vLLM 0.27.1 or newer" in found.fix and "at most 2048" in found.fix


def test_the_releases_that_raise_the_length_pass_and_the_fix_passes() -> None:
    assert _si418("0.27.1", 131072) is None
    found = _si418("0.15.1", 8192)
    assert found is not None
    # Both suggested fixes pass the rule: the newer container, or the shorter context.
    assert _si418("0.27.1", 8192) is None and _si418("0.15.1", 2048) is None


def test_an_unset_max_model_len_is_the_derived_context_resolution_fills_in() -> None:
    found = _si418("0.15.1", None)
    assert found is not None and "max_model_len 131072" in found.message


HEAD = "acme/Llama-3.1-8B-head.eagle3"


def _fetched(lengths: ConfigLengths) -> dict[str, FetchedFacts]:
    return fetched_eagle3_head(
        HEAD, "meta-llama/Llama-3.1-8B-Instruct", lengths, hidden_size=4096, vocab_size=128256, size_gb=0.9
    )


def _fetched_si418(lengths: ConfigLengths, version: str = "0.26.0") -> Any:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            **LLAMA,
            "container": {"version": version},
            "engine": {"max_model_len": 8192},
            "speculative": {"model": HEAD},
        },
    )
    return next((f for f in check(spec, _fetched(lengths)).findings if f.code == "SI418"), None)


@pytest.mark.parametrize(("rope_type", "judged"), [("llama3", True), ("linear", False), ("yarn", False)])
def test_only_rope_types_whose_cache_is_max_position_embeddings_are_judged(
    rope_type: str, judged: bool
) -> None:
    rope = rope_parameters({"rope_type": rope_type, "factor": 4.0, "original_max_position_embeddings": 2048})
    assert rope is not None
    lengths = ConfigLengths(model_type="llama", max_position_embeddings=2048, rope=rope)
    assert (_fetched_si418(lengths) is not None) is judged


def test_a_fetched_head_without_the_key_is_not_judged() -> None:
    assert _fetched_si418(ConfigLengths(model_type="llama")) is None
    assert _fetched_si418(ConfigLengths(model_type="llama", max_position_embeddings=8192)) is None
    assert _fetched_si418(ConfigLengths(model_type="llama", max_position_embeddings=8191)) is not None
