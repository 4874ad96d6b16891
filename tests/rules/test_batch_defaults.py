"""What `vllm serve` sets an unset max_num_batched_tokens to, held to each release's own EngineArgs code run
on GPUs x settings (tests/golden/vllm_batch_defaults.json), and what SI503 / SI504 judge with it: the GPU's
memory tier, performance_mode throughput's doubling, the max_model_len floor and the max_num_seqs cap."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.check import check
from speculative_infra.rules.scheduler_limits import drafting_slots_fit_batch, scheduler_limits
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_batch_defaults.json").read_text())
GPUS = {g["id"]: g for g in GOLDEN["gpus"]}
TOKENS, SEQS, CHUNKED = (GOLDEN["columns"].index(c) for c in GOLDEN["columns"])
RELEASES = list(GOLDEN["releases"])


def _rows(release: str) -> list[tuple[dict[str, Any], list[Any]]]:
    return list(
        zip(GOLDEN["grid"], GOLDEN["result_sets"][GOLDEN["releases"][release]["results"]], strict=True)
    )


def _modelled(release: str, row: dict[str, Any], gpu: dict[str, Any] | None = None) -> int:
    gpu = gpu or GPUS[row["gpu"]]
    return load_catalog().vllm.api_server_batched_tokens_default.value(
        release,
        gpu_name=gpu["name"],
        gpu_memory_mib=gpu["memory_bytes"] / 2**20,
        compute_capability=".".join(str(part) for part in gpu["capability"]),
        chunked=row["enable_chunked_prefill"] or version_tuple(release) <= version_tuple(_forced_until()),
        max_model_len=row["max_model_len"],
        max_num_seqs=row["max_num_seqs"],
        performance_mode=row["performance_mode"],
    )


def _forced_until() -> str:
    return load_catalog().vllm.scheduler_checks.chunked_prefill_forced_on_until


def test_the_golden_table_covers_every_release_the_catalog_reads() -> None:
    folder = Path(__file__).resolve().parents[2] / "speculative_infra" / "catalog" / "data" / "vllm"
    catalogued = {p.stem for p in folder.glob("*.json")}
    assert catalogued and catalogued <= set(RELEASES)


def test_the_golden_table_has_each_behaviour() -> None:
    # Five different result sets: the tiers, the bounds, the doubling and GB10 each changed a release.
    assert len(set(GOLDEN["result_sets"])) == 5
    assert {r["reads_performance_mode"] for r in GOLDEN["releases"].values()} == {True, False}


@pytest.mark.parametrize("release", RELEASES)
def test_unset_batched_tokens_match_the_release(release: str) -> None:
    wrong = [
        (row, out[TOKENS], _modelled(release, row))
        for row, out in _rows(release)
        if row["max_num_batched_tokens"] is None and out[TOKENS] != _modelled(release, row)
    ]
    assert wrong == [], f"{len(wrong)} of the grid's rows differ, first: {wrong[:3]}"


@pytest.mark.parametrize("release", RELEASES)
def test_a_set_value_is_kept_and_chunked_prefill_forced_where_the_catalog_says(release: str) -> None:
    forced = version_tuple(release) <= version_tuple(_forced_until())
    for row, out in _rows(release):
        if row["max_num_batched_tokens"] is not None:
            assert out[TOKENS] == row["max_num_batched_tokens"], row  # the rules judge a set value as given
        assert out[CHUNKED] is (True if forced else row["enable_chunked_prefill"]), row


def test_catalog_gpu_names_pick_the_tier_vllms_device_names_do() -> None:
    # The rule passes the catalog's GPU name and memory; vLLM sees the device's own name ("NVIDIA
    # A100-SXM4-80GB"): both must land in the same tier.
    gpus = load_catalog().gpus
    shared = [gpu_id for gpu_id in GPUS if gpu_id in gpus]
    assert {"A100-80GB", "H100", "L40S", "B200"} <= set(shared)
    row = {"enable_chunked_prefill": True, "max_model_len": 32768, "max_num_seqs": 256}
    for release in RELEASES:
        for mode in ("balanced", "throughput"):
            for gpu_id in shared:
                gpu = gpus[gpu_id]
                ours = {
                    "name": gpu_id,
                    "memory_bytes": gpu.memory_mib * 2**20,
                    "capability": gpu.compute_capability.split("."),
                }
                case = {**row, "performance_mode": mode}
                expected = _modelled(release, case, GPUS[gpu_id])
                assert _modelled(release, case, ours) == expected, (release, gpu_id)


# The reference spec's GPU (RTX PRO 6000, 96 GB) takes the 8192 tier; DLC 0.25.1 has performance_mode.
DLC_0_25_1 = {"container": {"framework": "vllm", "version": "0.25.1"}}


def _deployment(engine: dict[str, Any], speculative: dict[str, Any] | None = None) -> Any:
    spec = deep_merge(REFERENCE_SPEC, {**DLC_0_25_1, "engine": engine})
    if speculative is not None:
        spec["speculative"] = speculative
    return check(spec).deployment


@pytest.mark.parametrize(
    ("mode", "passes", "refused"),
    [
        (None, 8192, 8193),
        ("balanced", 8192, 8193),
        ("interactivity", 8192, 8193),
        ("throughput", 16384, 16385),
    ],
)
def test_si503_judges_the_default_performance_mode_gives(mode: str | None, passes: int, refused: int) -> None:
    mode_key = {} if mode is None else {"performance_mode": mode}
    assert list(scheduler_limits(_deployment({"max_num_seqs": passes, **mode_key}))) == []
    [found] = scheduler_limits(_deployment({"max_num_seqs": refused, **mode_key}))
    assert found.field == "engine.max_num_batched_tokens"
    assert f"max_num_batched_tokens ({passes})" in found.message
    assert f"vllm serve uses {passes}" in found.message
    assert ("doubled by performance_mode throughput" in found.message) is (mode == "throughput")


def test_si504_judges_the_default_performance_mode_gives() -> None:
    # A separate draft model adds a slot per request; 0.25.1 refuses max_num_seqs x 1 >= the batch.
    draft = {"method": "draft_model", "model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}
    found = list(drafting_slots_fit_batch(_deployment({"max_num_seqs": 8192}, draft)))
    assert len(found) == 1 and "vllm serve uses 8192" in found[0].message
    assert list(drafting_slots_fit_batch(_deployment({"max_num_seqs": 8191}, draft))) == []
    throughput = {"performance_mode": "throughput"}
    assert list(drafting_slots_fit_batch(_deployment({"max_num_seqs": 8192, **throughput}, draft))) == []
    found = list(drafting_slots_fit_batch(_deployment({"max_num_seqs": 16384, **throughput}, draft)))
    assert len(found) == 1 and "vllm serve uses 16384" in found[0].message
