"""SI205: a compressed-tensors checkpoint's sparsity_config, held to each release's own code run on probes
(tests/golden/vllm_sparse_checkpoints.json, written by scripts/probe_vllm_sparse_checkpoints.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The probes' inputs, as the probe script defines them (imported so the two cannot drift apart).
from scripts.probe_vllm_sparse_checkpoints import QUANTIZATION, SPARSITY
from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.check import check
from speculative_infra.quantization_methods import checkpoint_sparsity
from speculative_infra.rules.finding import Severity
from speculative_infra.rules.sparsity import sparse_checkpoint_problem
from speculative_infra.spec import DeploymentSpec
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_sparse_checkpoints.json").read_text())
RELEASES: dict[str, Any] = GOLDEN["releases"]

CHECKS = load_catalog().vllm.sparse_checkpoint_checks


def _hub_config(sparsity: dict[str, Any] | None, quant: tuple[Any, Any]) -> dict[str, Any]:
    """A checkpoint's quantization_config with this sparsity_config and this first config group."""
    config: dict[str, Any] = {"quant_method": "compressed-tensors"}
    if sparsity is not None:
        config["sparsity_config"] = sparsity
    weights, inputs = quant
    if weights is not None or inputs is not None:
        group: dict[str, Any] = {"targets": ["Linear"]}
        if weights is not None:
            group["weights"] = weights
        if inputs is not None:
            group["input_activations"] = inputs
        config["config_groups"] = {"group_0": group}
    return config


def test_the_probe_covers_every_release_and_every_verdict_kind() -> None:
    assert len(RELEASES) == 38
    kernels = {json.dumps(r["sparse_24_scheme"], sort_keys=True) for r in RELEASES.values()}
    assert len(kernels) == 3  # a floor, a refusal, no such scheme
    assert any(v.get("returns") is True for r in RELEASES.values() for v in r["supports_cutlass_24"].values())


@pytest.mark.parametrize("release", list(RELEASES))
def test_the_2_4_kernel_choice_is_each_release_own(release: str) -> None:
    # supports_cutlass_24 of the release, on every sparsity x quantization probe, against the reading of the
    # Hub config the library makes; and whether the layers then run CompressedTensors24.
    record = RELEASES[release]
    asks = record["get_scheme_asks_cutlass_24"] and isinstance(record["sparse_24_scheme"], dict)
    for key, verdict in record["supports_cutlass_24"].items():
        s_name, q_name = key.split(" | ")
        ours = checkpoint_sparsity(_hub_config(SPARSITY[s_name], QUANTIZATION[q_name]))
        assert (ours == "2:4") == (verdict == {"returns": True}), (release, key)
    floor = record["sparse_24_scheme"].get("returns") if asks else None
    assert CHECKS.runs_sparse_24_scheme(release, "2:4") == isinstance(floor, int), release
    if isinstance(floor, int):
        assert f"{floor // 10}.{floor % 10}" == CHECKS.sparse_24_min_capability
    assert not CHECKS.runs_sparse_24_scheme(release, "other")


@pytest.mark.parametrize("release", list(RELEASES))
def test_refusals_are_each_release_own(release: str) -> None:
    record = RELEASES[release]
    assert record["from_config_parses_sparsity"]
    for name, outcome in record["parse_sparsity_config"].items():
        sparsity = checkpoint_sparsity(_hub_config(SPARSITY[name], (None, None)))
        # A sparsity_config without targets is no sparsity to the library: vLLM's map is empty.
        assert (sparsity is None) == (
            outcome.get("returns", {}).get("targets") == [] and "raises" not in outcome
        )
        refused_at_config = "raises" in outcome
        if sparsity is not None:
            assert (CHECKS.refusal(release, "other") is not None) == refused_at_config, (release, name)
        if refused_at_config:
            assert outcome["message"] == CHECKS.sparsity_config_refusal
    scheme = record["sparse_24_scheme"]
    expected_2_4 = (
        CHECKS.sparsity_config_refusal
        if any("raises" in o for o in record["parse_sparsity_config"].values())
        else scheme.get("message")
        if isinstance(scheme, dict)
        else None
    )
    assert CHECKS.refusal(release, "2:4") == expected_2_4, release


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (_hub_config(SPARSITY["2:4 sparse-24-bitmask"], (None, None)), "2:4"),
        # compressed-tensors infers the strategy from group_size (-1: channel) and defaults num_bits to 8.
        (
            _hub_config(
                SPARSITY["2:4 dense"],
                (
                    {"type": "float", "group_size": -1},
                    {"type": "float", "strategy": "TOKEN", "dynamic": True},
                ),
            ),
            "2:4",
        ),
        (
            _hub_config(SPARSITY["2:4 dense"], ({"type": "int", "num_bits": 8, "group_size": 128}, None)),
            "other",
        ),
        # supports_cutlass_24 asks for 8-bit weights and 8-bit activations alike.
        (
            _hub_config(
                SPARSITY["2:4 dense"],
                ({"type": "int", "num_bits": 8, "strategy": "channel"}, {"type": "int", "num_bits": 4}),
            ),
            "other",
        ),
        (_hub_config(SPARSITY["unstructured dense no targets"], (None, None)), None),
        ({"quant_method": "compressed-tensors", "sparsity_config": "odd"}, None),
        (None, None),
    ],
)
def test_hub_config_reading(config: Any, expected: Any) -> None:
    assert checkpoint_sparsity(config) == expected


SPARSE_LLAMA = {
    "id": "acme/sparse-llama-3.1-8b-2of4-fp8-dynamic",
    "architecture": "LlamaForCausalLM",
    "model_type": "llama",
    "parameters_billion": 8.0,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 131072,
    "quantization": "compressed-tensors",
    "quantization_scheme": "w8a8_fp8",
}


def _spec(version: str, instance: str, sparsity: str | None) -> dict[str, Any]:
    model = {**SPARSE_LLAMA, "sparsity": sparsity} if sparsity else SPARSE_LLAMA
    return deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"version": version},
            "model": model,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "bfloat16", "max_model_len": 4096},
        },
    )


def _finding(version: str, instance: str, sparsity: str | None, code: str = "SI205") -> Any:
    return next((f for f in check(_spec(version, instance, sparsity)).findings if f.code == code), None)


def _errors(spec: dict[str, Any]) -> list[str]:
    return [f.code for f in check(spec).findings if f.severity == Severity.ERROR]


H100, L40S = "ml.p5.48xlarge", "ml.g6e.xlarge"


def test_2_4_runs_up_to_0_18_1_on_hopper_only() -> None:
    assert _finding("0.18.1", H100, "2:4") is None
    refused = _finding("0.19.0", H100, "2:4")
    assert refused is not None and "Sparse24 models are no longer supported by vLLM" in refused.message
    assert refused.fix.startswith("use a container with vLLM 0.18.1,")
    below = _finding("0.18.1", L40S, "2:4")  # L40S: 8.9
    assert below is not None and "compute capability >= 9.0" in below.message and "has 8.9" in below.message
    assert "vLLM 0.18.1 on a Hopper family (p5, p5e, p5en)" in below.fix
    # The group's own scheme (W8A8 FP8, 8.9) is not what runs: SI203 leaves it to SI205.
    assert _finding("0.18.1", L40S, "2:4", "SI203") is None
    assert _finding("0.18.1", L40S, None, "SI203") is None  # the dense path runs on 8.9
    # On a T4 (7.5) with vLLM 0.11.0 the dense path's floor fails too, but the 2:4 kernel is what would run:
    # one error, SI205's, not two.
    assert _finding("0.11.0", "ml.g4dn.xlarge", "2:4") is not None
    assert _finding("0.11.0", "ml.g4dn.xlarge", "2:4", "SI203") is None
    assert _finding("0.11.0", "ml.g4dn.xlarge", None, "SI203") is not None


def test_any_sparsity_config_is_refused_from_0_22_0() -> None:
    assert _finding("0.21.0", L40S, "other") is None  # read densely
    refused = _finding("0.22.0", L40S, "other")
    assert (
        refused is not None and "Sparsity support has been removed from compressed-tensors" in refused.message
    )
    assert refused.fix.startswith("use a container with vLLM 0.21.0,")
    assert "2:4" in (_finding("0.22.0", H100, "2:4") or refused).message
    assert _finding("0.27.1", L40S, None) is None


@pytest.mark.parametrize(
    ("version", "instance", "sparsity"),
    [("0.19.0", H100, "2:4"), ("0.18.1", L40S, "2:4"), ("0.22.0", L40S, "other"), ("0.27.1", H100, "2:4")],
)
def test_the_suggested_container_passes_every_rule(version: str, instance: str, sparsity: str) -> None:
    finding = _finding(version, instance, sparsity)
    assert finding is not None
    suggested = finding.fix.removeprefix("use a container with vLLM ").split(" ")[0].rstrip(",")
    fixed_instance = instance if "Hopper family" not in finding.fix else H100
    assert _errors(_spec(suggested, fixed_instance, sparsity)) == [], finding.fix


def test_every_catalog_release_and_family() -> None:
    # The verdict is the catalog's comparisons, for both kinds, at every DLC release and on every family.
    cat = load_catalog()
    for family, info in cat.families.items():
        cc = cat.gpus[info.gpu].compute_capability
        for version in cat.vllm_dlc_versions():
            v = version_tuple(version)
            for sparsity in ("2:4", "other"):
                problem = sparse_checkpoint_problem(version, sparsity, cc)
                loads = v < (0, 22, 0) and (
                    sparsity == "other" or (v < (0, 19, 0) and version_tuple(cc) >= (9, 0))
                )
                assert (problem is None) == loads, (family, version, sparsity)


def test_spec_names_an_unknown_sparsity() -> None:
    with pytest.raises(ValueError, match="sparsity"):
        DeploymentSpec.model_validate(_spec("0.18.1", H100, "3:4"))
