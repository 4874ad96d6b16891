"""SI504: the draft slots a separate draft model or parallel drafting adds (from 0.33.0: the tokens drafting
looks ahead) must leave the batch room, held to each release's own VllmConfig._set_max_num_scheduled_tokens
and VllmConfig.num_lookahead_tokens (tests/golden/vllm_drafting_slots.json), and vllm serve's default
max_num_batched_tokens where the spec leaves it unset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from speculative_infra.rules.scheduler_limits import (
    drafting_lookahead,
    drafting_refusal,
    drafting_slots,
    drafting_slots_fit_batch,
)
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_drafting_slots.json").read_text())


def _cases() -> list[Any]:
    out = []
    for release, record in GOLDEN["releases"].items():
        for i, probe in enumerate(record.get("probes", [])):
            out.append(pytest.param(release, probe["inputs"], probe["verdict"], id=f"{release}-{i}"))
    return out


CASES = _cases()


def test_the_golden_table_has_refusals_in_both_forms() -> None:
    refused = {v["message"] for _, _, v in (c.values for c in CASES) if v != "ok"}
    assert len(CASES) > 2000
    assert any("max_num_scheduled_tokens is set" in r for r in refused)
    assert any("does not have enough slots" in r and "scheduled_token_delta" in r for r in refused)
    assert any("does not have enough slots" in r and "num_lookahead_tokens" in r for r in refused)


@pytest.mark.parametrize(("release", "inputs", "verdict"), CASES)
def test_verdict_matches_the_release(release: str, inputs: dict[str, int], verdict: Any) -> None:
    found = drafting_refusal(
        release,
        max_num_batched_tokens=inputs["max_num_batched_tokens"],
        max_num_seqs=inputs["max_num_seqs"],
        slots=inputs["slots"],
        # Where a release has no num_lookahead_tokens the probe's value is ignored there as here.
        lookahead=inputs["lookahead"] if drafting_lookahead(release, {}) is not None else None,
    )
    if verdict == "ok":
        assert found is None, found
    else:
        assert found is not None and found[1] == verdict["message"]


def test_slots_per_request_match_each_release() -> None:
    # SpeculativeConfig.max_num_new_slots_for_drafting, run from each wheel (0.17.0 on) on method x k x parallel.
    compared = 0
    for release, record in GOLDEN["releases"].items():
        for case in record.get("slots", []):
            assert drafting_slots(case["inputs"]) == case["slots"], (release, case)
            compared += 1
    assert compared >= 17 * 24


def test_lookahead_per_method_matches_each_release() -> None:
    # VllmConfig.num_lookahead_tokens, run from each wheel that has it on method x k.
    compared = 0
    for release, record in GOLDEN["releases"].items():
        cases = record.get("lookahead")
        if cases is None:
            assert drafting_lookahead(release, {"method": "eagle3", "num_speculative_tokens": 3}) is None, (
                release
            )
            continue
        for case in cases:
            assert drafting_lookahead(release, case["inputs"]) == case["lookahead"], (release, case)
            compared += 1
        # Model-specific MTP names become "mtp" in SpeculativeConfig.__post_init__: the rule's test for them.
        assert all(m.endswith("_mtp") or m == "mtp" for m in record["mtp_model_types"]), release
        methods = load_vllm_release(release).speculative.methods
        assert {m for m in methods if m.endswith("_mtp")} <= set(record["mtp_model_types"]), release
    assert compared >= 27


def test_lookahead_counts() -> None:
    assert drafting_lookahead("0.27.1", {"method": "eagle3", "num_speculative_tokens": 4}) is None
    assert drafting_lookahead("0.33.0", {"method": "eagle3", "num_speculative_tokens": 4}) == 4
    assert drafting_lookahead("0.33.0", {"method": "dflash", "num_speculative_tokens": 4}) == 5
    assert drafting_lookahead("0.33.0", {"method": "deepseek_mtp", "num_speculative_tokens": 2}) == 2
    assert drafting_lookahead("0.33.0", {"method": "ngram", "num_speculative_tokens": 4}) == 0


def _at_release(spec: dict[str, Any], release: str) -> Any:
    # No catalogued container ships 0.33.0 yet: the resolved deployment is given that release's engine.
    d = check(deep_merge(REFERENCE_SPEC, spec)).deployment
    return d.model_copy(update={"container": d.container.model_copy(update={"vllm_version": release})})


def test_lookahead_boundary_on_0_33_0() -> None:
    eagle3 = {"speculative": {"num_speculative_tokens": 4}, "engine": {"max_num_seqs": 1}}
    at_edge = deep_merge(eagle3, {"engine": {"max_num_batched_tokens": 5}})
    assert list(drafting_slots_fit_batch(_at_release(at_edge, "0.33.0"))) == []
    refused = deep_merge(eagle3, {"engine": {"max_num_batched_tokens": 4}})
    [found] = drafting_slots_fit_batch(_at_release(refused, "0.33.0"))
    assert "num_lookahead_tokens=4" in found.message and found.field == "engine.max_num_batched_tokens"
    assert "at least 5" in found.fix
    # 0.32.0 compares EAGLE3's 0 slots instead, and 0.27.1 max_num_seqs x 0.
    assert list(drafting_slots_fit_batch(_at_release(refused, "0.32.0"))) == []
    assert list(drafting_slots_fit_batch(_at_release(refused, "0.27.1"))) == []


def test_slots_per_request() -> None:
    assert drafting_slots({"method": "eagle3", "num_speculative_tokens": 5}) == 0
    assert drafting_slots({"method": "eagle3", "num_speculative_tokens": 5, "parallel_drafting": True}) == 4
    assert drafting_slots({"method": "draft_model", "num_speculative_tokens": 3}) == 1


PEAGLE_L40S = {
    "instance_type": "ml.g6e.xlarge",
    "container": {"version": "0.25.1"},
    "model": {"id": "openai/gpt-oss-20b"},
    "speculative": {
        "model": "amazon/GPT-OSS-20B-P-EAGLE",
        "num_speculative_tokens": 5,
        "parallel_drafting": True,
    },
    "engine": {"tensor_parallel_size": 1, "max_model_len": 8192},
}


def _si504(changes: dict[str, Any]) -> Any:
    spec = deep_merge(REFERENCE_SPEC, changes)
    return next((f for f in check(spec).findings if f.code == "SI504"), None)


def test_p_eagle_on_an_l40s_at_vllm_serve_defaults() -> None:
    # 4 slots x 512 sequences fill vllm serve's 2048-token default on a 46 GiB GPU.
    at_edge = deep_merge(PEAGLE_L40S, {"engine": {"max_num_seqs": 511}})
    assert _si504(at_edge) is None
    found = _si504(deep_merge(PEAGLE_L40S, {"engine": {"max_num_seqs": 512}}))
    assert found is not None and found.field == "engine.max_num_batched_tokens"
    assert "vllm serve uses 2048" in found.message and "at least 2049" in found.fix
    explicit = deep_merge(PEAGLE_L40S, {"engine": {"max_num_seqs": 512, "max_num_batched_tokens": 4096}})
    assert _si504(explicit) is None


def test_only_the_releases_that_refuse() -> None:
    full = deep_merge(PEAGLE_L40S, {"engine": {"max_num_seqs": 512}})
    assert _si504(deep_merge(full, {"container": {"version": "0.19.1"}})) is None
    assert _si504(deep_merge(full, {"container": {"version": "0.20.0"}})) is not None
