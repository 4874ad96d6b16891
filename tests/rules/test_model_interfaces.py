"""SI414 (EAGLE3 needs the target class's interface) and SI415 (draft models and parallel drafting refuse
multimodal targets in some releases), from what each release's wheel registers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_model_interfaces.json").read_text())


def _codes(changes: dict[str, Any]) -> set[str]:
    return {f.code for f in check(deep_merge(REFERENCE_SPEC, changes)).findings}


QWEN3_CODER_EAGLE3 = {
    "instance_type": "ml.g6e.12xlarge",
    "model": {"id": "Qwen/Qwen3-Coder-30B-A3B-Instruct"},
    "engine": {"tensor_parallel_size": 4},
    "speculative": {"method": "eagle3", "model": "acme/qwen3-coder-eagle3", "num_speculative_tokens": 3},
}


def test_qwen3_moe_gains_the_eagle3_interface_in_0_11_1() -> None:
    # 0.11.0's allow-list lets qwen3_moe through, then the model class lacks SupportsEagle3.
    assert "SI414" in _codes({**QWEN3_CODER_EAGLE3, "container": {"version": "0.11.0"}})
    assert "SI414" not in _codes({**QWEN3_CODER_EAGLE3, "container": {"version": "0.11.1"}})


def test_message_and_fix_name_the_class_and_the_release() -> None:
    spec = deep_merge(REFERENCE_SPEC, {**QWEN3_CODER_EAGLE3, "container": {"version": "0.11.0"}})
    (found,) = [f for f in check(spec).findings if f.code == "SI414"]
    assert "Qwen3MoeForCausalLM" in found.message and "EAGLE3 interface" in found.message
    assert "0.11.1 or newer" in found.fix and found.field == "speculative.method"


def test_the_reference_deployments_pass() -> None:
    # Qwen3-32B + EAGLE3 on vLLM 0.15.1 ran in the public benchmark suite (observations.yaml).
    assert "SI414" not in _codes({})
    assert "SI414" not in _codes({"container": {"version": "0.15.1"}})


GEMMA3 = {
    "id": "acme/gemma3-vision-12b",
    "architecture": "Gemma3ForConditionalGeneration",
    "model_type": "gemma3",
    "parameters_billion": 12.2,
    "num_hidden_layers": 48,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "hidden_size": 3840,
    "max_position_embeddings": 131072,
}
DRAFT_MODEL = {"method": "draft_model", "model": "acme/gemma3-1b", "num_speculative_tokens": 3}


def _draft(version: str, speculative: dict[str, Any]) -> set[str]:
    return _codes(
        {
            "instance_type": "ml.g6e.12xlarge",
            "container": {"version": version},
            "model": GEMMA3,
            "engine": {"tensor_parallel_size": 4, "max_model_len": 8192},
            "speculative": speculative,
        }
    )


def test_draft_model_on_a_multimodal_target_from_0_15_to_0_20() -> None:
    assert "SI415" in _draft("0.15.1", DRAFT_MODEL)
    assert "SI415" in _draft("0.20.2", DRAFT_MODEL)
    assert "SI415" not in _draft("0.21.0", DRAFT_MODEL)  # a warning in vLLM from 0.21.0


def test_parallel_drafting_on_a_multimodal_target_from_0_16_to_0_20() -> None:
    peagle = {
        "method": "eagle3",
        "model": "acme/gemma3-peagle",
        "parallel_drafting": True,
        "num_speculative_tokens": 5,
    }
    assert "SI415" in _draft("0.16.0", peagle)
    assert "SI415" not in _draft("0.21.0", peagle)
    plain = {"method": "eagle3", "model": "acme/gemma3-eagle3", "num_speculative_tokens": 3}
    assert "SI415" not in _draft("0.16.0", plain)


def test_the_catalog_holds_what_the_wheels_register() -> None:
    catalog = load_vllm_model_interfaces().releases
    assert set(catalog) == set(GOLDEN["releases"])
    for version, record in GOLDEN["releases"].items():
        expected = set(record["eagle3_architectures"]) if record["eagle3_interface_check"] else None
        assert catalog[version].eagle3_architectures == expected, version
        assert catalog[version].multimodal_architectures == set(record["multimodal_architectures"]), version


def test_the_probe_and_the_extractor_agree_on_the_eagle3_allow_list() -> None:
    # Two readings of the same wheels by different code: the interface probe's, and the release extractor's
    # (speculative.eagle3_target_allowlist): an allow-list exists in exactly the same releases.
    for version, record in GOLDEN["releases"].items():
        extracted = load_vllm_release(version).speculative.eagle3_target_allowlist
        assert (record["eagle3_allowlist_check"] is not None) == (extracted is not None), version


def _si412(version: str, speculative: dict[str, Any]) -> list[str]:
    spec = deep_merge(REFERENCE_SPEC, {"container": {"version": version}, "speculative": speculative})
    return [f.field or "" for f in check(spec).findings if f.code == "SI412"]


def test_ngram_gpu_reads_the_prompt_lookup_keys() -> None:
    # vLLM 0.18.0's SpeculativeConfig sets prompt_lookup defaults 'if self.method in ("ngram", "ngram_gpu")'.
    keys = {"prompt_lookup_max": 4, "prompt_lookup_min": 2, "num_speculative_tokens": 3, "model": None}
    assert _si412("0.18.0", {**keys, "method": "ngram_gpu"}) == []
    assert _si412("0.18.0", {**keys, "method": "ngram"}) == []
    assert "speculative.prompt_lookup_max" in _si412("0.18.0", {**keys, "method": "suffix"})


def test_the_transformers_backend_is_judged_by_its_own_class() -> None:
    # With model_impl: transformers vLLM loads the Transformers backend's MoE class for this MoE model
    # (ModelConfig._get_transformers_backend_cls), which has the interface from 0.13.0.
    spec = deep_merge(QWEN3_CODER_EAGLE3, {"engine": {"model_impl": "transformers"}})
    found = [
        f
        for f in check(deep_merge(REFERENCE_SPEC, {**spec, "container": {"version": "0.12.0"}})).findings
        if f.code == "SI414"
    ]
    assert found and "TransformersMoEForCausalLM" in found[0].message and "0.13.0 or newer" in found[0].fix
    assert "SI414" not in _codes({**spec, "container": {"version": "0.13.0"}})


def test_multimodal_draft_refusal_releases_are_each_release_own():
    # SI415's release bounds (vllm.yaml multimodal_draft_refusals) against the raise each wheel holds: a
    # draft model is refused where a proposer raises for "draft models" from its constructor, parallel
    # drafting where that raise sits behind needs_extra_input_slots (draft model or parallel drafting).
    from speculative_infra.catalog import load_catalog

    refusals = load_catalog().vllm.multimodal_draft_refusals.refusals
    for release, record in GOLDEN["releases"].items():
        proposer_raises = [
            r
            for r in record["multimodal_draft_refusals"]
            if "draft models" in r["message"] and any("Proposer.__init__" in c for c in r["called_from"])
        ]
        draft_model = bool(proposer_raises)
        parallel = any("needs_extra_input_slots" in c for r in proposer_raises for c in r["called_from"])
        catalog = {r.applies_to for r in refusals if r.applies_to_release(release)}
        expected = {
            name
            for name, refused in (("draft_model", draft_model), ("parallel_drafting", parallel))
            if refused
        }
        assert catalog == expected, release
