"""SI314: pipeline parallelism needs a model class with vLLM's SupportsPP interface. The catalog's per-release
lists come from the wheels (scripts/probe_vllm_model_interfaces.py); they are held here to vLLM's own
documentation of which architectures run with pipeline parallelism (tests/golden/vllm_docs_pipeline_parallel.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = Path(__file__).parent.parent / "golden"
DOCS = json.loads((GOLDEN / "vllm_docs_pipeline_parallel.json").read_text())
WHEELS = json.loads((GOLDEN / "vllm_model_interfaces.json").read_text())["releases"]
# The release whose registry names the documented architectures most nearly (all but five renamed OLMo and
# EXAONE entries): the documentation snapshot's era.
DOCS_RELEASE = "0.15.1"
# Documented with a tick, yet its class neither subclasses SupportsPP nor sets supports_pp: vLLM's own
# supports_pp() (an isinstance test against a runtime-checkable protocol on the class) is false, so
# ModelConfig.verify_with_parallel_config refuses it. The code is what runs.
DOCUMENTED_BUT_REFUSED = {"Mamba2ForCausalLM"}


def test_every_release_with_the_check_has_a_list_and_vllm_s_words() -> None:
    releases = load_vllm_model_interfaces().releases
    assert set(releases) == set(WHEELS)
    for version, release in releases.items():
        check_found = WHEELS[version]["pipeline_parallel_check"]
        assert check_found is not None and check_found["exception"] == "NotImplementedError", version
        assert "is_pp_supported_model" in check_found["condition"], version
        assert release.pipeline_parallel_refusal == check_found["message"], version
        assert release.architectures_without_pipeline_parallel is not None


def test_the_documented_pipeline_parallel_architectures_are_allowed() -> None:
    release = load_vllm_model_interfaces().releases[DOCS_RELEASE]
    ticked = [a for a in DOCS["pp_ticked"] if a in release.registered_architectures]
    assert len(ticked) >= 95  # the snapshot's names, nearly all registered in that release
    refused = {a for a in ticked if release.supports_pipeline_parallel(a) is False}
    assert refused == DOCUMENTED_BUT_REFUSED


def test_architectures_whose_bases_the_reading_could_not_follow_are_not_judged() -> None:
    releases = load_vllm_model_interfaces().releases
    for version, record in WHEELS.items():
        without = releases[version].architectures_without_pipeline_parallel or frozenset()
        assert not without & set(record["pipeline_parallel_unresolved"]), version
    # LlamaBidirectionalModel (0.30.0 on) is built by as_embedding_model(LlamaForCausalLM), a call the
    # reading does not follow.
    assert "LlamaBidirectionalModel" in WHEELS["0.33.0"]["pipeline_parallel_unresolved"]
    assert releases["0.33.0"].supports_pipeline_parallel("LlamaBidirectionalModel") is not False


def test_the_documented_exception_lacks_the_interface_in_every_release() -> None:
    for version, record in WHEELS.items():
        for arch in DOCUMENTED_BUT_REFUSED & set(record["registered_architectures"]):
            assert arch not in record["pipeline_parallel_architectures"], version


def test_architectures_documented_without_it_are_mostly_refused() -> None:
    # A blank in the docs is not a claim of refusal (HCXVision, IQuestCoder and StableLm implement it);
    # the rest are refused by the wheel too.
    release = load_vllm_model_interfaces().releases[DOCS_RELEASE]
    blank = [a for a in DOCS["pp_blank"] if a in release.registered_architectures]
    refused = {a for a in blank if release.supports_pipeline_parallel(a) is False}
    assert refused >= {
        "Gemma3nForCausalLM",
        "IQuestLoopCoderForCausalLM",
        "MiniMaxM1ForCausalLM",
        "MiniMaxText01ForCausalLM",
        "OuroForCausalLM",
        "Zamba2ForCausalLM",
    }


ZAMBA2 = {
    "id": "acme/zamba2-7b",
    "architecture": "Zamba2ForCausalLM",
    "model_type": "zamba2",
    "parameters_billion": 7.4,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "head_dim": 112,
    "max_position_embeddings": 4096,
}
FOUR_GPUS: dict[str, Any] = {"instance_type": "ml.g6e.12xlarge", "speculative": None}


def _si314(model: dict[str, Any] | None, engine: dict[str, Any]) -> Any:
    changes = {**FOUR_GPUS, "engine": {"max_model_len": 4096, **engine}}
    if model is not None:
        changes["model"] = model
    return next((f for f in check(deep_merge(REFERENCE_SPEC, changes)).findings if f.code == "SI314"), None)


def test_a_class_without_the_interface_is_refused_at_pipeline_parallel_two() -> None:
    found = _si314(ZAMBA2, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2})
    assert found is not None and found.field == "engine.pipeline_parallel_size"
    assert (
        "Zamba2ForCausalLM" in found.message
        and "Pipeline parallelism is not supported for this model" in found.message
    )
    assert "pipeline_parallel_size to 1" in found.fix
    # Boundary: at 1 nothing is asked of the class.
    assert _si314(ZAMBA2, {"tensor_parallel_size": 4, "pipeline_parallel_size": 1}) is None


def test_a_class_with_the_interface_passes() -> None:
    assert _si314(None, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}) is None  # Qwen3


def test_an_unregistered_architecture_is_judged_by_the_transformers_backend_class() -> None:
    unregistered = {**ZAMBA2, "architecture": "AcmeNewForCausalLM", "model_type": "acme"}
    # TransformersForCausalLM implements SupportsPP in the releases that have it.
    assert _si314(unregistered, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}) is None


@pytest.mark.parametrize(
    ("value", "refused"), [(1, False), (None, False), (2, True), ("2", True), (" 2 ", True)]
)
def test_a_size_is_read_as_vllm_s_command_line_reads_it(value: Any, refused: bool) -> None:
    # vLLM reads an integer flag with int(): "2" is 2 (the container passes strings anyway).
    engine = {"tensor_parallel_size": 2} | ({} if value is None else {"pipeline_parallel_size": value})
    assert (_si314(ZAMBA2, engine) is not None) == refused


def test_the_backend_class_decides_and_the_fix_names_a_release_that_allows_it(monkeypatch) -> None:
    # A stand-in table where 0.15.1's Transformers backend class lacks SupportsPP: the unregistered target is
    # then refused by that class's name, and the fix points at the next catalog release that allows it.
    real = load_vllm_model_interfaces()
    older = real.releases["0.15.1"]
    without = (older.architectures_without_pipeline_parallel or frozenset()) | {"TransformersForCausalLM"}
    patched = real.model_copy(
        update={
            "releases": {
                **real.releases,
                "0.15.1": older.model_copy(update={"architectures_without_pipeline_parallel": without}),
            }
        }
    )
    monkeypatch.setattr("speculative_infra.rules.parallelism.load_vllm_model_interfaces", lambda: patched)
    unregistered = {**ZAMBA2, "architecture": "AcmeNewForCausalLM", "model_type": "acme"}
    found = _si314(unregistered, {"tensor_parallel_size": 2, "pipeline_parallel_size": 2})
    assert found is not None
    assert (
        "AcmeNewForCausalLM is not registered" in found.message and "TransformersForCausalLM" in found.message
    )
    assert "vLLM 0.16.0 or newer" in found.fix
