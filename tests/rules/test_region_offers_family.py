"""SI112: a warning where no public source says the region offers the family for SageMaker hosting."""

from __future__ import annotations

from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge


def _si112(changes: dict[str, Any]) -> Any:
    return next((f for f in check(deep_merge(REFERENCE_SPEC, changes)).findings if f.code == "SI112"), None)


def test_g7e_in_sao_paulo_warns_and_names_preflight() -> None:
    found = _si112({"region": "sa-east-1"})
    assert found is not None and found.severity == "warning" and found.field == "region"
    assert "g7e" in found.message and "sa-east-1" in found.message and "us-east-1" in found.message
    assert "preflight" in found.fix and "ml.g7e.2xlarge" in found.fix
    assert check(deep_merge(REFERENCE_SPEC, {"region": "sa-east-1"})).ok  # a warning, not an error


def test_each_announced_region_passes() -> None:
    for region in ("us-east-1", "us-west-2", "ap-northeast-1", "ap-northeast-2", "eu-west-2"):
        assert _si112({"region": region}) is None, region


def test_p5e_is_known_in_oregon_only_and_g7e_in_mumbai() -> None:
    p5e = {"instance_type": "ml.p5e.48xlarge", "engine": {"tensor_parallel_size": 8}}
    assert _si112({**p5e, "region": "us-west-2"}) is None
    found = _si112({**p5e, "region": "us-east-1"})
    assert found is not None and "p5e" in found.message and "us-west-2" in found.message
    assert _si112({"region": "ap-south-1"}) is None


def test_a_family_without_sources_is_not_judged() -> None:
    assert load_catalog().hosting_regions("p5") is None
    spec = {
        "region": "sa-east-1",
        "instance_type": "ml.p5.48xlarge",
        "engine": {"tensor_parallel_size": 8},
    }
    assert _si112(spec) is None


G4DN = {
    "instance_type": "ml.g4dn.xlarge",
    "model": {"id": "Qwen/Qwen3-8B"},
    "speculative": None,
    "engine": {"tensor_parallel_size": 1},
}
G6 = {**G4DN, "instance_type": "ml.g6.xlarge"}


def test_g4dn_is_known_in_the_four_us_regions_and_ireland() -> None:
    # One account's endpoint quotas (all four US regions) and a bill from Ireland.
    for region in ("us-east-1", "us-east-2", "us-west-1", "us-west-2", "eu-west-1"):
        assert _si112({**G4DN, "region": region}) is None, region
    found = _si112({**G4DN, "region": "eu-central-1"})
    assert found is not None and "g4dn" in found.message and "us-west-1" in found.message


def test_g6_has_no_quota_entry_in_northern_california() -> None:
    # The same account's quota table has no ml.g6 entry in us-west-1: the boundary of the list.
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        assert _si112({**G6, "region": region}) is None, region
    found = _si112({**G6, "region": "us-west-1"})
    assert found is not None and "g6 " in found.message and "us-east-2" in found.message


def test_every_listed_region_is_a_real_region_with_a_source() -> None:
    cat = load_catalog()
    known = set(cat.dlc_accounts.accounts) | {"us-gov-east-1", "us-gov-west-1"}
    for family, evidence in cat.hosting_region_evidence.items():
        assert family in cat.families, family
        for item in evidence:
            assert set(item.regions) <= known, (family, item.regions)
            assert item.source.startswith(("https://", "aws-samples/", "xbill9/", "AWS Price List")), (
                item.source
            )
