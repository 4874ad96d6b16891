"""SI313 and the pipeline-parallel memory plan, held to each release's own ParallelConfig.__post_init__ and
get_pp_indices (tests/golden/vllm_parallel_world.json, scripts/probe_vllm_parallel_world.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.check import check
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.sizing import MIB, stage_layers, stage_weights_mib, weights_mib
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_parallel_world.json").read_text())
CHECKS = load_catalog().vllm.parallel_world_checks
# The reference model on a 4-GPU instance with room for it at any of these layouts.
FOUR_GPUS = {"instance_type": "ml.g6e.12xlarge"}


def _world(release: str, sizes: dict[str, int]) -> int:
    """The world the catalog says the release counts."""
    world = sizes["tensor_parallel_size"] * sizes["pipeline_parallel_size"]
    if CHECKS.counts_prefill_context(release):
        world *= sizes.get("prefill_context_parallel_size", 1)
    return world


def test_every_default_release_was_probed() -> None:
    releases = list(GOLDEN["releases"])
    assert releases[0] == "0.10.0" and releases[-1] == "0.33.0" and len(releases) == 38


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_the_world_and_its_refusal_match_the_release(release: str) -> None:
    record = GOLDEN["releases"][release]
    ray_path = version_tuple(release) <= version_tuple(CHECKS.ray_fallback_until)
    refusal = CHECKS.refusal(release)
    assert (refusal is None) == ray_path
    for probe in record["probes"]:
        inputs, verdict = probe["inputs"], probe["verdict"]
        sizes = {k: v for k, v in inputs.items() if k.endswith("_parallel_size")}
        world = _world(release, sizes)
        assert verdict["world_size"] == world, (release, inputs)
        if world <= inputs["gpus"]:
            assert "error" not in verdict and verdict["executor"] != "ray", (release, inputs)
        elif ray_path:
            # Up to ray_fallback_until: Ray where it is installed, else vLLM stops at once.
            if inputs["ray_found"]:
                assert verdict["executor"] == "ray", (release, inputs)
            else:
                assert verdict["message"].startswith("Unable to load Ray"), (release, inputs)
        else:
            assert refusal is not None
            expected = refusal.message.format(world=world, gpus=inputs["gpus"])
            assert verdict["message"].startswith(expected), (release, inputs)


def test_the_catalog_names_each_release_s_counted_factors_and_timeouts() -> None:
    for release, record in GOLDEN["releases"].items():
        assert ("prefill_context_parallel_size" in record["world_size"]) == CHECKS.counts_prefill_context(
            release
        )
        ray = record["ray_placement_group"]
        assert ray["pg_wait_timeout_s"] == CHECKS.ray_placement_wait_s
        assert any("Cannot provide a placement group" in r for r in ray["raises"])
        devices = record["data_parallel_devices"]
        assert devices["function"].startswith(CHECKS.data_parallel_devices)
        # Rank r starts at r x world: dp x world GPUs in all.
        assert devices["range"].startswith("range(local_dp_rank * world_size, ")


@pytest.mark.parametrize("release", list(GOLDEN["releases"]))
def test_stage_layers_is_the_largest_stage_of_get_pp_indices(release: str) -> None:
    for row in GOLDEN["releases"][release]["pipeline_stages"]:
        per_stage = row["per_stage"]
        assert sum(per_stage) == row["layers"]
        assert stage_layers(row["layers"], row["pipeline_parallel_size"]) == max(per_stage), row


def _findings(engine: dict[str, Any], version: str = "0.15.1", **changes: Any) -> dict[str, Any]:
    spec = deep_merge(
        REFERENCE_SPEC, {**FOUR_GPUS, "engine": engine, "container": {"version": version}, **changes}
    )
    return {f.code: f for f in check(spec).findings}


@pytest.mark.parametrize(
    ("engine", "refused"),
    [
        ({"tensor_parallel_size": 2, "pipeline_parallel_size": 2}, False),
        ({"tensor_parallel_size": 4, "pipeline_parallel_size": 2}, True),
        ({"tensor_parallel_size": 1, "pipeline_parallel_size": 4}, False),
        ({"tensor_parallel_size": 1, "pipeline_parallel_size": 5}, True),
        ({"tensor_parallel_size": 2, "prefill_context_parallel_size": 2}, False),
        ({"tensor_parallel_size": 4, "prefill_context_parallel_size": 2}, True),
        ({"tensor_parallel_size": 2, "data_parallel_size": 2}, False),
        ({"tensor_parallel_size": 2, "data_parallel_size": 3}, True),
        ({"tensor_parallel_size": 1, "data_parallel_size": 4}, False),
        ({"tensor_parallel_size": 1, "data_parallel_size": 5}, True),
        ({"tensor_parallel_size": 1, "pipeline_parallel_size": 2, "data_parallel_size": 2}, False),
        ({"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "data_parallel_size": 2}, True),
    ],
)
def test_boundary_at_the_instance_s_gpus(engine: dict[str, Any], refused: bool) -> None:
    found = _findings(engine)
    assert ("SI313" in found) == refused
    assert "SI310" not in found  # the tensor-parallel size alone fits


def test_the_message_is_the_release_s_own() -> None:
    engine = {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}
    newest = _findings(engine)["SI313"]
    assert newest.field == "engine.pipeline_parallel_size"
    assert "World size (8) is larger than the number of available GPUs (4) in this node." in newest.message
    assert "Tensor parallel size (8) cannot be larger than the number of available GPUs (4)." in (
        _findings(engine, "0.12.0")["SI313"].message
    )
    ray = _findings(engine, "0.11.0")["SI313"].message
    assert "Ray" in ray and f"waits {CHECKS.ray_placement_wait_s} s" in ray
    data = _findings({"tensor_parallel_size": 2, "data_parallel_size": 3})["SI313"]
    assert data.field == "engine.data_parallel_size"
    assert "needs 6 GPUs" in data.message and "rank 2's GPUs do not exist" in data.message


def test_prefill_context_ranks_count_only_where_the_release_counts_them() -> None:
    # 0.12.0 counts them (its flag arrives with the factor); a release before has no such flag (SI500).
    assert "SI313" in _findings({"tensor_parallel_size": 4, "prefill_context_parallel_size": 2}, "0.12.0")
    assert "SI500" in _findings({"tensor_parallel_size": 4, "prefill_context_parallel_size": 2}, "0.11.2")


@pytest.mark.parametrize(
    "engine",
    [
        {"tensor_parallel_size": 4, "pipeline_parallel_size": 2},
        {"tensor_parallel_size": 1, "pipeline_parallel_size": 7},
        {"tensor_parallel_size": 4, "prefill_context_parallel_size": 2},
        {"tensor_parallel_size": 2, "data_parallel_size": 3},
        {"tensor_parallel_size": 2, "data_parallel_size": 4},
        {"tensor_parallel_size": 2, "pipeline_parallel_size": 4, "data_parallel_size": 2},
        {"tensor_parallel_size": 4, "pipeline_parallel_size": 4, "prefill_context_parallel_size": 4},
    ],
)
def test_the_suggested_fix_passes_every_error_rule(engine: dict[str, Any]) -> None:
    found = _findings(engine)["SI313"]
    key = found.field.removeprefix("engine.")
    if "at most " in found.fix:
        changes = {key: int(found.fix.split("at most ")[1].split(",")[0])}
    else:
        assert found.fix.startswith("set engine.pipeline_parallel_size, prefill_context_parallel_size and ")
        changes = dict.fromkeys(
            ("pipeline_parallel_size", "prefill_context_parallel_size", "data_parallel_size"), 1
        )
    fixed = check(deep_merge(REFERENCE_SPEC, {**FOUR_GPUS, "engine": {**engine, **changes}}))
    assert [f.code for f in fixed.findings if f.severity.value == "error"] == []


@pytest.mark.parametrize("value", [2, "2", " 2"])
def test_a_size_is_read_as_vllm_s_command_line_reads_it(value: Any) -> None:
    assert "SI313" in _findings({"tensor_parallel_size": 4, "pipeline_parallel_size": value})


@pytest.mark.parametrize(
    "key", ["pipeline_parallel_size", "data_parallel_size", "prefill_context_parallel_size"]
)
@pytest.mark.parametrize("value", [0, -2, "-1"])
def test_a_size_below_one_is_named(key: str, value: Any) -> None:
    found = _findings({"tensor_parallel_size": 2, key: value})["SI313"]
    assert (
        found.field == f"engine.{key}"
        and "at least 1" in found.message
        and str(value).strip() in found.message
    )


def test_a_prefill_context_size_before_the_release_that_counts_it_is_not_a_data_parallel_error() -> None:
    found = _findings({"tensor_parallel_size": 4, "prefill_context_parallel_size": 2}, "0.11.2")
    assert "SI500" in found and "SI313" not in found


def test_data_parallel_ranks_on_this_node_must_be_all_of_them() -> None:
    # vLLM (every release read) refuses more local ranks than data_parallel_size, and with fewer it waits,
    # without a time limit, for the others to connect from nodes an endpoint instance does not have.
    assert "SI313" not in _findings(
        {"tensor_parallel_size": 2, "data_parallel_size": 2, "data_parallel_size_local": 2}
    )
    above = _findings({"tensor_parallel_size": 2, "data_parallel_size": 2, "data_parallel_size_local": 3})[
        "SI313"
    ]
    assert above.field == "engine.data_parallel_size_local"
    assert "'data_parallel_size_local (3) must be <= data_parallel_size (2)'" in above.message
    below = _findings({"tensor_parallel_size": 2, "data_parallel_size": 4, "data_parallel_size_local": 2})[
        "SI313"
    ]
    assert "waits, with no time limit, for the other 2" in below.message
    assert "never becomes healthy" in below.message


@pytest.mark.parametrize(
    "engine",
    [
        {"tensor_parallel_size": 2, "data_parallel_size": 2, "data_parallel_size_local": 3},
        {"tensor_parallel_size": 2, "data_parallel_size": 4, "data_parallel_size_local": 2},
        {"tensor_parallel_size": 2, "data_parallel_size": 1, "data_parallel_size_local": 4},
        {"tensor_parallel_size": 2, "data_parallel_size": 4, "data_parallel_size_local": 3},
    ],
)
def test_the_local_ranks_fix_passes_every_error_rule(engine: dict[str, Any]) -> None:
    found = _findings(engine)["SI313"]
    ranks = int(found.fix.split("data_parallel_size to ", 1)[1].split(" ", 1)[0])
    fixed = {k: v for k, v in engine.items() if k != "data_parallel_size_local"} | {
        "data_parallel_size": ranks
    }
    result = check(deep_merge(REFERENCE_SPEC, {**FOUR_GPUS, "engine": fixed}))
    assert [f.code for f in result.findings if f.severity.value == "error"] == []


@pytest.mark.parametrize(
    ("backend", "words"),
    [("ray", "waits 1800 s"), ("mp", "skips its GPU-count check"), (None, "World size (8) is larger")],
)
def test_a_named_executor_skips_vllm_s_own_check(backend: str | None, words: str) -> None:
    engine = {"tensor_parallel_size": 4, "pipeline_parallel_size": 2}
    if backend is not None:
        engine["distributed_executor_backend"] = backend
    assert words in _findings(engine)["SI313"].message


def test_the_inference_component_sees_the_accelerators_it_requests() -> None:
    spec = deep_merge(
        REFERENCE_SPEC,
        {**FOUR_GPUS, "container": {"framework": "lmi", "version": "0.36.0"}, "speculative": None},
    )
    lmi = check(deep_merge(spec, {"engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}))
    found = next(f for f in lmi.findings if f.code == "SI313")
    assert "the 2 accelerator(s) the inference component requests" in found.message
    # Lowering tensor_parallel_size lowers the accelerators with it: the fix does not offer it.
    assert found.fix == "set engine.pipeline_parallel_size to at most 1"
    fixed = check(deep_merge(spec, {"engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 1}}))
    assert "SI313" not in {f.code for f in fixed.findings}


def test_idle_gpus_count_every_rank() -> None:
    assert "SI312" not in _findings({"tensor_parallel_size": 2, "pipeline_parallel_size": 2})
    assert "SI312" not in _findings({"tensor_parallel_size": 1, "data_parallel_size": 4})
    idle = _findings({"tensor_parallel_size": 1, "data_parallel_size": 2})["SI312"]
    assert "tensor 1 x data 2" in idle.message and "use 2 of the 4 GPUs" in idle.message
    # Its fix leaves room for the data-parallel ranks: 2 x 2 fills the 4 GPUs.
    assert "raise engine.tensor_parallel_size to 2 " in idle.fix
    assert "SI313" not in _findings({"tensor_parallel_size": 2, "data_parallel_size": 2})
    alone = _findings({"tensor_parallel_size": 2})["SI312"]
    assert alone.message.startswith("tensor_parallel_size 2 uses 2 of the 4 GPUs")


def test_the_default_tensor_parallel_size_leaves_room_for_the_other_ranks() -> None:
    spec = deep_merge(
        REFERENCE_SPEC, {**FOUR_GPUS, "engine": {"tensor_parallel_size": None, "data_parallel_size": 2}}
    )
    result = check(spec)
    assert result.deployment.tensor_parallel_size == 2
    assert not [f for f in result.findings if f.code in ("SI310", "SI312", "SI313")]


def test_a_pipeline_stage_holds_its_share_of_the_layers_and_one_vocabulary_table() -> None:
    model = load_catalog().model("Qwen/Qwen3-32B")
    assert model is not None and model.vocab_size and model.hidden_size
    whole = weights_mib(model, 2)
    assert stage_weights_mib(model, 2, 1) == whole
    # Untied, an even split halves it exactly: the first stage's embedding weighs what the last's head does.
    assert not model.tie_word_embeddings and stage_weights_mib(model, 2, 2) == pytest.approx(whole / 2)
    # Tied, the last stage still loads its own head: more than half.
    tied = model.model_copy(update={"tie_word_embeddings": True})
    assert weights_mib(tied, 2) / 2 < stage_weights_mib(tied, 2, 2) < weights_mib(tied, 2)
    # More stages, less per stage, never below an even share of the whole.
    for stages in (2, 3, 4, 8):
        assert (
            whole / stages <= stage_weights_mib(model, 2, stages) <= stage_weights_mib(model, 2, stages - 1)
        )
    # Facts whose tables outweigh the checkpoint claim no split.
    odd = model.model_copy(update={"weights_gb": 0.5})
    assert stage_weights_mib(odd, 2, 4) == weights_mib(odd, 2)


def test_a_multimodal_target_is_counted_whole_on_each_stage() -> None:
    # vLLM builds a multimodal model's encoders on every stage; their size is not in the facts.
    spec = {
        **FOUR_GPUS,
        "model": {
            "id": "acme/vl-8b",
            "architecture": "Qwen2_5_VLForConditionalGeneration",
            "model_type": "qwen2_5_vl",
            "parameters_billion": 8.3,
            "num_hidden_layers": 28,
            "num_attention_heads": 28,
            "num_key_value_heads": 4,
            "head_dim": 128,
            "max_position_embeddings": 32768,
        },
        "speculative": None,
    }
    flat = check(deep_merge(REFERENCE_SPEC, {**spec, "engine": {"tensor_parallel_size": 2}})).deployment
    staged = check(
        deep_merge(
            REFERENCE_SPEC, {**spec, "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}
        )
    ).deployment
    assert flat.memory_plan() is not None and flat.memory_plan() == staged.memory_plan()


def _one_and_two_stages() -> tuple[ResolvedDeployment, ResolvedDeployment]:
    """The reference deployment on four GPUs at tensor parallel 2, with one pipeline stage and with two."""
    one = check(deep_merge(REFERENCE_SPEC, {**FOUR_GPUS, "engine": {"tensor_parallel_size": 2}})).deployment
    two = check(
        deep_merge(
            REFERENCE_SPEC, {**FOUR_GPUS, "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}}
        )
    ).deployment
    return one, two


def test_the_memory_plan_splits_layers_across_stages() -> None:
    one, two = _one_and_two_stages()
    plan_one, plan_two = one.memory_plan(), two.memory_plan()
    assert plan_one is not None and plan_two is not None
    assert plan_two.weights_mib < plan_one.weights_mib
    model = two.model
    assert model is not None
    # The target's layers halve; the draft's layer stays (it runs on the last stage).
    assert plan_one.full_layers - plan_two.full_layers == model.num_hidden_layers // 2


@pytest.mark.parametrize("release", sorted(GOLDEN["releases"]))
def test_an_eagle_head_shares_the_target_embedding_only_with_one_pipeline_stage(release: str) -> None:
    # What the memory model's extra table with more than one stage rests on (sizing.memory_plan), as each
    # release's own code tests it.
    sharing = GOLDEN["releases"][release]["draft_embedding_shared_if"]
    test = sharing["test"]
    assert test == "get_pp_group().world_size == 1" or test.startswith("get_pp_group().world_size == 1 and ")
    # From 0.11.1 a head's own embedding is dropped only where it equals the target's (vllm-project/vllm#28549).
    assert sharing["own_embedding_must_equal_target"] == (version_tuple(release) >= (0, 11, 1))
    v2 = sharing["v2_runner"]
    if v2 is None or v2["test"] is None:
        return  # no V2 runner, or an early one (0.17.0-0.21.0) with no pipeline test
    if v2["test"] == "get_pp_group().world_size == 1":
        assert version_tuple(release) < (0, 30, 0)
    else:
        # 0.30.0 on: V2 shares the embedding the target now builds on its last stage for the drafter, so that
        # stage still holds one table more than with one stage.
        assert version_tuple(release) >= (0, 30, 0) and v2["target_builds_embedding_for_drafter"]
        assert v2["test"].startswith("get_pp_group().world_size > 1 and ")


def test_with_more_stages_the_draft_keeps_its_own_embedding() -> None:
    # RedHatAI/Qwen3-32B-speculator.eagle3's file holds an input embedding of the target's shape; with one
    # stage vLLM hands the head the target's, with two it loads the head's own: one vocabulary x hidden
    # table in bfloat16 more, split over the draft's tensor-parallel ranks.
    one, two = _one_and_two_stages()
    plan_one, plan_two = one.memory_plan(), two.memory_plan()
    model = one.model
    assert plan_one is not None and plan_two is not None and model is not None
    assert model.vocab_size and model.hidden_size
    table_mib = model.vocab_size * model.hidden_size * 2 / MIB / 2
    assert plan_two.draft_mib - plan_one.draft_mib == pytest.approx(table_mib, rel=0.01)


def test_the_default_max_model_len_counts_the_draft_as_the_plan_does() -> None:
    # On four 24 GiB GPUs with two stages memory binds the length: the default must be the plan's own
    # longest fitting length (rounded down to 256 tokens, as the default is), own draft embedding included.
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": "ml.g5.12xlarge",
            "engine": {"tensor_parallel_size": 2, "pipeline_parallel_size": 2, "max_model_len": None},
        },
    )
    d = check(spec).deployment
    assert d.model is not None
    context = d.model.max_position_embeddings
    assert 0 < d.engine["max_model_len"] < context
    assert d.engine["max_model_len"] == d.longest_fitting_max_model_len(context) // 256 * 256
