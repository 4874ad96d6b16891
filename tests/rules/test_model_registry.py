"""SI340 / SI341 (an architecture the release's registry lacks loads through the Transformers backend, or not
at all with model_impl vllm) and SI414 judging such a target by the backend's class, from what each wheel
registers (tests/golden/vllm_model_interfaces.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.check import check
from speculative_infra.rules.model_registry import loaded_class
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_model_interfaces.json").read_text())

# Qwen3.5's dense class: the registry of vllm==0.27.0 has it, 0.26.0's does not (the probe's reading).
QWEN3_5 = {
    "id": "acme/qwen3.5-9b",
    "architecture": "Qwen3_5ForCausalLM",
    "model_type": "qwen3_5",
    "parameters_billion": 9.0,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 32768,
}
EAGLE3 = {"method": "eagle3", "model": "acme/qwen3.5-eagle3", "num_speculative_tokens": 3}


def _findings(version: str, engine: dict[str, Any] | None = None, speculative: Any = None) -> dict[str, Any]:
    spec = deep_merge(
        REFERENCE_SPEC,
        {
            "container": {"version": version},
            "model": QWEN3_5,
            "engine": {"max_model_len": 8192, **(engine or {})},
        },
    )
    spec["speculative"] = speculative
    return {f.code: f for f in check(spec).findings}


def test_the_golden_registry_has_the_architecture_from_0_27_0() -> None:
    assert "Qwen3_5ForCausalLM" not in GOLDEN["releases"]["0.26.0"]["registered_architectures"]
    assert "Qwen3_5ForCausalLM" in GOLDEN["releases"]["0.27.0"]["registered_architectures"]
    # The Transformers backend classes are registered in every release, the MoE one from 0.11.1.
    for version, record in GOLDEN["releases"].items():
        assert "TransformersForCausalLM" in record["registered_architectures"], version
    assert "TransformersMoEForCausalLM" not in GOLDEN["releases"]["0.11.0"]["registered_architectures"]
    assert "TransformersMoEForCausalLM" in GOLDEN["releases"]["0.11.1"]["registered_architectures"]


def test_the_catalog_holds_the_registry_the_wheels_have() -> None:
    catalog = load_vllm_model_interfaces().releases
    for version, record in GOLDEN["releases"].items():
        assert catalog[version].registered_architectures == set(record["registered_architectures"]), version
        backend = set(record["transformers_backend_architectures"])
        assert catalog[version].transformers_backend_architectures == backend, version


def test_an_unregistered_architecture_warns_and_names_the_release_that_registers_it() -> None:
    found = _findings("0.26.0")
    warning = found["SI340"]
    assert "does not register Qwen3_5ForCausalLM" in warning.message
    assert "TransformersForCausalLM" in warning.message and "are not supported for now" in warning.message
    assert warning.fix.startswith("use a container with vLLM 0.27.1 or newer") and warning.field == "model.id"
    assert "SI340" not in _findings("0.27.1")
    assert "SI340" not in _findings("0.26.0", {"model_impl": "transformers"})  # asked for the backend


@pytest.mark.parametrize(
    ("impl", "codes"), [("vllm", {"SI341"}), ("auto", {"SI340"}), ("transformers", set())]
)
def test_model_impl_vllm_refuses_what_the_registry_lacks(impl: str, codes: set[str]) -> None:
    found = _findings("0.26.0", {"model_impl": impl})
    assert {"SI340", "SI341"} & set(found) == codes
    if "SI341" in codes:
        assert (
            found["SI341"].field == "engine.model_impl"
            and "set engine.model_impl to auto" in found["SI341"].fix
        )
    assert "SI341" not in _findings("0.27.1", {"model_impl": "vllm"})


def test_eagle3_on_an_unregistered_architecture_is_judged_by_the_transformers_backend() -> None:
    # 0.26.0 loads Qwen3_5ForCausalLM as TransformersForCausalLM, which has the EAGLE3 interface from 0.13.0:
    # before, SI414 refused the architecture's own name.
    assert "SI414" not in _findings("0.26.0", speculative=EAGLE3)
    # 0.12.0's TransformersForCausalLM lacks the interface.
    refused = _findings("0.12.0", speculative=EAGLE3)["SI414"]
    assert "Qwen3_5ForCausalLM is not registered there" in refused.message
    assert "Transformers backend, TransformersForCausalLM" in refused.message
    assert "0.13.0 or newer" in refused.fix


def test_a_fix_names_only_releases_that_register_the_architecture() -> None:
    # Grok1ForCausalLM: not in 0.11.0's registry, in 0.14.0's to 0.24.0's, dropped from 0.25.0.
    grok = {**QWEN3_5, "id": "acme/grok-1", "architecture": "Grok1ForCausalLM", "model_type": "grok-1"}
    spec = deep_merge(REFERENCE_SPEC, {"container": {"version": "0.11.0"}, "model": grok})
    spec["speculative"] = None
    (found,) = [f for f in check(spec).findings if f.code == "SI340"]
    assert found.fix.startswith("use a container with vLLM 0.14.0 to 0.24.0, which registers it")


def test_one_expert_takes_the_moe_backend_from_0_14_0() -> None:
    # _get_transformers_backend_cls: get_num_experts() > 1 up to 0.13.0, is_moe (> 0) from 0.14.0. A spec
    # cannot give the expert count (catalog facts do): the resolved deployment is given it.
    spec = deep_merge(REFERENCE_SPEC, {"model": QWEN3_5})
    spec["speculative"] = None
    d = check(spec).deployment
    for experts, release, expected in [
        (1, "0.13.0", "TransformersForCausalLM"),
        (1, "0.14.0", "TransformersMoEForCausalLM"),
        (2, "0.13.0", "TransformersMoEForCausalLM"),
        (2, "0.11.0", "TransformersForCausalLM"),  # no MoE backend class registered yet
    ]:
        at = d.model_copy(update={"model": d.model.model_copy(update={"num_experts": experts})})
        assert loaded_class(at, release) == (expected, True), (experts, release)
