"""The catalog loads, is consistent, and every fact carries its source and confidence."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import Draft, Sourced
from speculative_infra.catalog.vllm_release import available_vllm_versions


def _sourced_facts(obj, path="catalog"):
    if isinstance(obj, Sourced):
        yield path, obj
    if hasattr(obj, "__pydantic_fields__"):
        for name in type(obj).model_fields:
            yield from _sourced_facts(getattr(obj, name), f"{path}.{name}")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _sourced_facts(value, f"{path}[{key}]")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _sourced_facts(value, f"{path}[{i}]")


def test_every_fact_has_source_and_confidence():
    facts = list(_sourced_facts(load_catalog()))
    assert len(facts) > 60
    for path, fact in facts:
        assert fact.source.strip(), path
        assert fact.confidence in ("verified", "reported", "unverified"), path


def test_instance_sizes_match_domain():
    cat = load_catalog()
    assert cat.instance_type("ml.g7e.xlarge") is None  # no g7e.xlarge
    assert cat.instance_type("ml.g5.12xlarge").gpu_count == 4
    assert cat.instance_type("ml.g5.48xlarge").gpu_count == 8
    assert cat.instance_type("ml.g7e.12xlarge").gpu_count == 2
    assert cat.instance_type("ml.g6e.12xlarge").gpu.compute_capability == "8.9"
    assert cat.instance_type("ml.g4dn.xlarge").gpu.bf16 is False
    assert cat.instance_type("ml.g5.xlarge").default_host.driver == 470


# nvidia-smi totals from public outputs (pinned here, not read from the catalog): A10G 23028 MiB and L40S
# 46068 MiB (the sources in gpus.yaml), B200 183359 MiB (NVIDIA/TensorRT-LLM#10278), B300 275040 MiB (NVIDIA's
# aiconfigurator b300_sxm.yaml; EC2's p6-b300 data).
NVIDIA_SMI_MIB = {
    "ml.g5.xlarge": 23028,
    "ml.g6e.xlarge": 46068,
    "ml.p6-b200.48xlarge": 183359,
    "ml.p6-b300.48xlarge": 275040,
}


@pytest.mark.parametrize("instance_type", sorted(NVIDIA_SMI_MIB))
def test_gpu_memory_is_what_nvidia_smi_reports(instance_type: str) -> None:
    assert load_catalog().instance_type(instance_type).gpu.memory_mib == NVIDIA_SMI_MIB[instance_type]


def test_instance_types_are_real_sagemaker_types():
    """Every catalog instance type is in botocore's ProductionVariantInstanceType enum."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    enum = set(model.shape_for("ProductionVariantInstanceType").enum)
    assert set(load_catalog().instance_type_names()) <= enum


def test_host_images_are_the_api_enum():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    enum = set(model.shape_for("ProductionVariantInferenceAmiVersion").enum)
    assert set(load_catalog().amis) <= enum


def test_prices_are_overridable_data_with_date():
    price = load_catalog().price("ml.g7e.2xlarge")
    assert price.usd_per_hour == pytest.approx(4.2039)
    assert price.as_of and price.region == "us-east-1"
    assert load_catalog().price("ml.p5en.48xlarge") is None


def test_containers():
    cat = load_catalog()
    vllm = cat.container("vllm", "0.15.1")
    assert vllm.tag == "0.15.1-gpu-py312-cu129-ubuntu22.04-sagemaker"
    assert vllm.boolean_env == "empty"
    assert cat.container("vllm", "0.18.0").boolean_env == "true_false"
    lmi = cat.container("lmi", "20")
    assert (lmi.tag, lmi.vllm_version, lmi.cuda) == ("0.36.0-lmi20.0.0-cu128", "0.15.1", "12.8")
    assert cat.container("vllm", "0.27.0") is None  # never published for SageMaker
    assert cat.dlc_account("us-west-2") == "763104351884"
    assert cat.dlc_account("ap-southeast-7") == "590183813437"
    assert not cat.offers_inference_components("us-west-1")


def test_every_dlc_vllm_has_flag_data():
    versions = set(available_vllm_versions())
    cat = load_catalog()
    missing = [v for v in cat.vllm_dlc_versions() if v not in versions]
    assert missing == []


def test_every_draft_targets_a_catalog_model():
    cat = load_catalog()
    for name, draft in cat.drafts.items():
        assert draft.target in cat.models, name


def test_schema_forbids_unknown_keys():
    with pytest.raises(ValidationError):
        Draft.model_validate(
            yaml.safe_load("{method: eagle3, target: x, source: s, confidence: reported, sise_gb: 1}")
        )


def test_oldest_of_passing_tail_needs_every_newer_release_to_pass():
    from speculative_infra.catalog.loader import _oldest_of_passing_tail

    verdicts = {"a": True, "b": False, "c": True, "d": None, "e": True}
    assert _oldest_of_passing_tail(list(verdicts), verdicts.get) == "c"  # "d" is unknown: skipped
    assert _oldest_of_passing_tail(["a", "b"], verdicts.get) is None  # the newest fails
    assert _oldest_of_passing_tail(["a", "c"], verdicts.get) == "a"


def test_first_releases_running_names_the_oldest_of_each_framework():
    cat = load_catalog()
    assert cat.first_releases_running(lambda v: tuple(map(int, v.split("."))) >= (0, 15, 0)) == (
        "vLLM DLC 0.15.1 or newer, LMI v20 or newer"
    )
    assert cat.first_releases_running(lambda v: False) == "no release in the catalog yet"


def test_a_draft_keeps_its_download_less_the_embedding_vllm_shares_with_the_target():
    """vLLM replaces an EAGLE head's embed_tokens with the target's when the shapes match (pipeline
    parallel 1, every catalogued release): what stays on the GPU is the download less that table."""
    checked = 0
    for draft_id, d in load_catalog().drafts.items():
        if d.size_gb is None or d.download_gb is None or not (d.target_vocab_size and d.target_hidden_size):
            continue
        shared_gb = d.target_vocab_size * d.target_hidden_size * 2 / 1e9  # bf16
        assert d.size_gb == pytest.approx(d.download_gb - shared_gb, abs=0.01), draft_id
        checked += 1
    assert checked >= 1


def test_docs_catalog_table_names_every_data_file_and_section():
    # docs/catalog.md is written by hand; this keeps its table from falling behind the data (it once
    # lacked five files and most of vllm.yaml).
    from pathlib import Path

    import speculative_infra.catalog as catalog_package

    data = Path(catalog_package.__file__).parent / "data"
    doc = (Path(__file__).parents[2] / "docs" / "catalog.md").read_text(encoding="utf-8")
    table = doc[doc.index("| file | what |") : doc.index("\nAdding an instance type")]
    files = {p.name for p in data.iterdir() if p.is_file()} | {"vllm/<version>.json"}
    assert {f for f in files if f"`{f}`" not in table} == set()
    for sectioned in ("vllm.yaml", "regions.yaml"):
        keys = yaml.safe_load((data / sectioned).read_text(encoding="utf-8"))
        row = next(line for line in table.splitlines() if line.startswith(f"| `{sectioned}`"))
        assert {k for k in keys if f"`{k}`" not in row} == set(), sectioned
