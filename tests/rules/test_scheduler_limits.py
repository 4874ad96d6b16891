"""SI503: the start-up checks of vLLM's SchedulerConfig, held to each release's own code.

tests/golden/vllm_startup_checks.json is each wheel's SchedulerConfig check run on boundary probes
(scripts/probe_vllm_startup_checks.py); the verdicts and messages below must match it exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.rules.scheduler_limits import scheduler_refusal
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_startup_checks.json").read_text())
# What scheduler_refusal models: the settings a spec's engine block carries. Probes of encoder-decoder,
# pooling or multimodal models, of lookahead slots or scheduler steps (gone with V0), of an unset
# max_num_batched_tokens (vLLM sizes it) and of values pydantic refuses before the check runs are left out.
MODELLED = {
    "max_num_batched_tokens",
    "max_model_len",
    "max_num_seqs",
    "enable_chunked_prefill",
    "max_num_partial_prefills",
    "max_long_partial_prefills",
    "long_prefill_token_threshold",
    "max_num_active_seqs",
}


def _cases() -> list[Any]:
    cases = []
    for release, record in GOLDEN["releases"].items():
        for i, probe in enumerate(record["probes"]):
            inputs = probe["inputs"]
            if set(inputs) - MODELLED or "max_num_batched_tokens" not in inputs:
                continue
            if probe.get("field_constraints_violated"):
                continue
            cases.append(pytest.param(release, inputs, probe["verdict"], id=f"{release}-{i}"))
    return cases


CASES = _cases()


def test_the_golden_table_covers_every_release_and_check() -> None:
    assert len(GOLDEN["releases"]) >= 38
    assert len(CASES) > 3000
    refused = [(r, i) for r, i, v in (c.values for c in CASES) if v != "ok"]
    assert len(refused) > 500
    # Every check in the catalog is exercised by some refused probe of the releases it applies to.
    hit = {found[0].id for r, i in refused if (found := scheduler_refusal(r, i)) is not None}
    assert hit == {c.id for c in load_catalog().vllm.scheduler_checks.checks}


@pytest.mark.parametrize(("release", "inputs", "verdict"), CASES)
def test_verdict_matches_the_release(release: str, inputs: dict[str, Any], verdict: Any) -> None:
    found = scheduler_refusal(release, inputs)
    if verdict == "ok":
        assert found is None, found
    else:
        assert found is not None, verdict["message"]
        assert found[1] == verdict["message"]


def _finding(engine: dict[str, Any], version: str = "0.15.1") -> Any:
    spec = deep_merge(REFERENCE_SPEC, {"container": {"version": version}, "engine": engine})
    return next((f for f in check(spec).findings if f.code == "SI503"), None)


def test_boundary_batched_tokens_against_max_num_seqs() -> None:
    assert _finding({"max_num_batched_tokens": 256, "max_num_seqs": 256}) is None
    found = _finding({"max_num_batched_tokens": 255, "max_num_seqs": 256})
    assert found is not None and found.field == "engine.max_num_batched_tokens"
    assert "must be greater than or equal to max_num_seqs (256)" in found.message
    assert "at least 256" in found.fix


def test_boundary_batched_tokens_against_model_len_without_chunked_prefill() -> None:
    off = {"enable_chunked_prefill": False, "max_model_len": 8192}
    assert _finding({**off, "max_num_batched_tokens": 8192}) is None
    assert _finding({**off, "max_num_batched_tokens": 8191}) is not None
    # With chunked prefill a batch may be shorter than a sequence.
    assert _finding({**off, "enable_chunked_prefill": True, "max_num_batched_tokens": 8191}) is None


def test_up_to_0_11_0_chunked_prefill_is_forced_on() -> None:
    off = {"enable_chunked_prefill": False, "max_model_len": 8192, "max_num_batched_tokens": 4096}
    assert _finding(off, "0.11.0") is None
    assert _finding(off, "0.11.1") is not None


def test_human_readable_values_are_read_as_vllm_reads_them() -> None:
    assert _finding({"max_num_batched_tokens": "8k", "max_num_seqs": 8001}) is not None
    assert _finding({"max_num_batched_tokens": "8K", "max_num_seqs": 8001}) is None  # 8192


def test_active_seqs_only_from_0_31_0() -> None:
    # No container ships vLLM >= 0.28 yet, so the check is exercised through the function only.
    engine = {"max_num_active_seqs": 300, "max_num_seqs": 256}
    assert _finding(engine, "0.27.1") is None
    assert scheduler_refusal("0.31.0", {**engine, "max_model_len": 4096, "enable_chunked_prefill": True})
    assert (
        scheduler_refusal("0.30.0", {**engine, "max_model_len": 4096, "enable_chunked_prefill": True}) is None
    )


def test_an_unset_batch_size_is_vllm_serves_default() -> None:
    # vllm serve sizes max_num_batched_tokens at 2048 on a 46 GiB L40S: 2049 sequences do not fit it.
    l40s = {"instance_type": "ml.g6e.xlarge", "engine": {"tensor_parallel_size": 1, "max_model_len": 8192}}
    spec = deep_merge(REFERENCE_SPEC, {**l40s, "model": {"id": "Qwen/Qwen3-8B"}, "speculative": None})
    at_edge = deep_merge(spec, {"engine": {"max_num_seqs": 2048}})
    over = deep_merge(spec, {"engine": {"max_num_seqs": 2049}})
    assert not [f for f in check(at_edge).findings if f.code == "SI503"]
    found = next(f for f in check(over).findings if f.code == "SI503")
    assert "vllm serve uses 2048 on the L40S" in found.message
