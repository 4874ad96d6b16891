"""SI205: a compressed-tensors checkpoint's sparsity_config, held to each release's own code run on probes
(tests/golden/vllm_sparse_checkpoints.json, written by scripts/probe_vllm_sparse_checkpoints.py)."""

from __future__ import annotations

import json
import re
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
from tests.conftest import REFERENCE_SPEC, deep_merge, llama_8b

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


SPARSE_LLAMA = llama_8b(
    "acme/sparse-llama-3.1-8b-2of4-fp8-dynamic",
    quantization="compressed-tensors",
    quantization_scheme="w8a8_fp8",
)
# int4 weights in the marlin-24 layout (SI206), here with a sparsity_config too.
MARLIN_LLAMA = llama_8b(
    "acme/llama-3.1-8b-2of4-marlin24", quantization="compressed-tensors", quantization_scheme="w4a16_sparse24"
)


def _spec(
    version: str,
    instance: str,
    sparsity: str | None,
    model: dict[str, Any] = SPARSE_LLAMA,
    framework: str = "vllm",
) -> dict[str, Any]:
    return deep_merge(
        REFERENCE_SPEC,
        {
            "instance_type": instance,
            "container": {"framework": framework, "version": version},
            "model": {**model, "sparsity": sparsity} if sparsity else model,
            "speculative": None,
            "engine": {"tensor_parallel_size": 1, "dtype": "float16", "max_model_len": 4096},
        },
    )


def _findings(spec: dict[str, Any], code: str) -> Any:
    return next((f for f in check(spec).findings if f.code == code), None)


def _finding(version: str, instance: str, sparsity: str | None, code: str = "SI205") -> Any:
    return _findings(_spec(version, instance, sparsity), code)


def _errors(spec: dict[str, Any]) -> list[str]:
    return [f.code for f in check(spec).findings if f.severity == Severity.ERROR]


H100, L40S, B200 = "ml.p5.48xlarge", "ml.g6e.xlarge", "ml.p6-b200.48xlarge"


def test_2_4_runs_up_to_0_18_1_on_hopper_only() -> None:
    assert _finding("0.18.1", H100, "2:4") is None
    refused = _finding("0.19.0", H100, "2:4")
    assert refused is not None and "Sparse24 models are no longer supported by vLLM" in refused.message
    assert "when it builds the model's layers" in refused.message
    assert refused.fix.startswith("use a container with vLLM 0.18.1,")
    below = _finding("0.18.1", L40S, "2:4")  # L40S: 8.9
    assert below is not None and "compute capability >= 9.0" in below.message and "has 8.9" in below.message
    assert "vLLM 0.18.1 on a family whose GPU loads it (p5, p5e, p5en)" in below.fix
    # Above Hopper the scheme's floor passes, but the kernel it dispatches to is built for sm_90a alone.
    above = _finding("0.18.1", B200, "2:4")  # B200: 10.0
    assert (
        above is not None
        and "for compute capability 9.0 alone" in above.message
        and "has 10.0" in above.message
    )
    assert "(p5, p5e, p5en)" in above.fix
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
    assert "when it reads the checkpoint's config" in refused.message and "has 8.9" not in refused.message
    assert refused.fix.startswith("use a container with vLLM 0.21.0,")
    assert "2:4" in (_finding("0.22.0", H100, "2:4") or refused).message
    assert _finding("0.27.1", L40S, None) is None


def _spec_after_fix(spec: dict[str, Any], fix: str) -> list[dict[str, Any]]:
    """The deployments the fix names: its container, on the deployment's instance or, where it names
    families, on the smallest size of each."""
    container = re.match(r"use (?:a container with vLLM (\S+?)|DJL LMI v(\d+) \(vLLM [^)]*\))[, ]", fix)
    assert container is not None, fix
    dlc, lmi = container.groups()
    changed = {
        "container": {"framework": "vllm", "version": dlc} if dlc else {"framework": "lmi", "version": lmi}
    }
    families = re.search(r" on (?:a|the) family whose GPU loads it \(([^)]*)\)", fix)
    if families is None:
        return [deep_merge(spec, changed)]
    sizes = load_catalog().families
    return [
        deep_merge(spec, {**changed, "instance_type": f"ml.{family}.{next(iter(sizes[family].sizes))}"})
        for family in families.group(1).split(", ")
    ]


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        (_spec("0.19.0", H100, "2:4"), "SI205"),
        (_spec("0.18.1", L40S, "2:4"), "SI205"),
        (_spec("0.18.1", B200, "2:4"), "SI205"),
        (_spec("0.22.0", L40S, "other"), "SI205"),
        (_spec("0.27.1", H100, "2:4"), "SI205"),
        # LMI v24 bundles vLLM 0.19.0: the fix names an LMI release, not a DLC.
        (_spec("24", H100, "2:4", framework="lmi"), "SI205"),
        # A marlin-24 checkpoint with a sparsity_config: SI205's fix (0.21.0 reads the config densely) must
        # also clear SI206 (no scheme for the layout from 0.16.0), and the reverse.
        (_spec("0.22.0", "ml.g5.xlarge", "other", MARLIN_LLAMA), "SI205"),
        (_spec("0.22.0", "ml.g5.xlarge", "other", MARLIN_LLAMA), "SI206"),
        (_spec("0.16.0", "ml.g4dn.xlarge", None, MARLIN_LLAMA), "SI206"),
        # On the RTX PRO 6000 (12.0) LMI v18-v20 (vLLM up to 0.15.1) are built with CUDA 12.8, below
        # FlashInfer's 12.9 there (SI201): no LMI release loads marlin-24 on g7e, the fix names families.
        (_spec("21", "ml.g7e.2xlarge", None, MARLIN_LLAMA, "lmi"), "SI206"),
    ],
)
def test_the_suggested_fix_passes_every_rule(spec: dict[str, Any], code: str) -> None:
    finding = _findings(spec, code)
    assert finding is not None
    for fixed in _spec_after_fix(spec, finding.fix):
        assert _errors(fixed) == [], (fixed["instance_type"], fixed["container"], finding.fix)


def test_a_marlin_24_fix_on_g7e_with_lmi_names_families_not_a_release() -> None:
    finding = _findings(_spec("21", "ml.g7e.2xlarge", None, MARLIN_LLAMA, "lmi"), "SI206")
    assert finding.fix.startswith("use DJL LMI v20 (vLLM 0.15.1) on a family whose GPU loads it (")
    assert "g7e" not in finding.fix.split("(", 2)[2].split(")")[0]


def test_every_catalog_release_and_family() -> None:
    # The verdict is the catalog's comparisons, for both kinds, at every DLC release and on every family.
    cat = load_catalog()
    for family, info in cat.families.items():
        cc = cat.gpus[info.gpu].compute_capability
        for version in cat.vllm_dlc_versions():
            v = version_tuple(version)
            for sparsity in ("2:4", "other"):
                problem = sparse_checkpoint_problem(version, sparsity, cc)
                loads = v < (0, 22, 0) and (sparsity == "other" or (v < (0, 19, 0) and cc == "9.0"))
                assert (problem is None) == loads, (family, version, sparsity)
                if problem is not None:
                    assert problem.gpu_bound == (v < (0, 19, 0) and sparsity == "2:4"), (family, version)


def test_a_spec_may_add_sparsity_to_facts_that_carry_the_method() -> None:
    # The spec gives only the id and the sparsity: the method comes with the fetched or catalog facts, so
    # the spec is not refused for it; the resolved facts are judged (SI331).
    added = deep_merge(REFERENCE_SPEC, {"model": {"id": "Qwen/Qwen3-32B", "sparsity": "2:4"}})
    DeploymentSpec.model_validate(added)
    finding = _findings(added, "SI331")
    assert finding is not None and "sparsity '2:4' is given for quantization None" in finding.message
    assert _findings(REFERENCE_SPEC, "SI331") is None


@pytest.mark.parametrize(
    "groups", [["group_0"], {"group_0": "Linear"}, {"group_0": None}], ids=["list", "string", "null"]
)
def test_config_groups_vllm_cannot_read_are_not_taken_for_the_2_4_kernel(groups: Any) -> None:
    config = {**_hub_config(SPARSITY["2:4 sparse-24-bitmask"], (None, None)), "config_groups": groups}
    assert checkpoint_sparsity(config) == "other"


def test_spec_names_an_unknown_sparsity() -> None:
    with pytest.raises(ValueError, match="sparsity"):
        DeploymentSpec.model_validate(_spec("0.18.1", H100, "3:4"))
