"""On-demand cost at synth time: in `check`, as a construct annotation and as a stack output."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Annotations, Match

from speculative_infra import LmiInferenceComponent, SpeculativeVllmEndpoint
from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.cost import estimate_cost
from tests.conftest import REFERENCE_SPEC, deep_merge

PRICE = load_catalog().price("ml.g7e.2xlarge", "us-west-2")


def test_price_times_instances_and_hours():
    assert PRICE is not None and PRICE.region == "us-west-2"
    cost = estimate_cost("ml.g7e.2xlarge", "us-west-2", 1, 4)
    assert cost.hourly(1) == PRICE.usd_per_hour and cost.hourly(4) == pytest.approx(4 * PRICE.usd_per_hour)
    assert cost.as_dict()["usd_per_30_days"] == [
        pytest.approx(PRICE.usd_per_hour * 720),
        pytest.approx(4 * PRICE.usd_per_hour * 720),
    ]
    assert f"${PRICE.usd_per_hour:,.2f} to ${4 * PRICE.usd_per_hour:,.2f}/hour" in cost.summary()


def test_a_region_without_a_price_shows_another_regions_named():
    cost = estimate_cost("ml.g7e.2xlarge", "eu-north-1", 1, 2)
    # The region's own figure stays unknown: nothing computes with another region's price ...
    assert cost.usd_per_hour is None and cost.hourly(1) is None and cost.price_region is None
    # ... but the line shows the fallback region's price, named, instead of "unknown".
    us_east = estimate_cost("ml.g7e.2xlarge", "us-east-1", 1, 1)
    assert cost.fallback_region == "us-east-1" and cost.fallback_usd_per_hour == us_east.usd_per_hour
    line = cost.summary()
    assert "unknown" not in line and f"${2 * us_east.usd_per_hour:,.2f}/hour" in line
    assert "at us-east-1's list price" in line and "no eu-north-1 price for ml.g7e.2xlarge" in line
    assert cost.as_dict()["fallback"] == {
        "usd_per_instance_hour": us_east.usd_per_hour,
        "region": "us-east-1",
        "as_of": us_east.as_of,
    }


def test_the_fallback_prefers_us_east_1_then_the_first_list_that_has_the_type():
    only_west = [p for p in load_catalog().price_lists if p.region != "us-east-1"]
    west_types = {t for p in only_west for t in p.usd_per_hour}
    east_types = {t for p in load_catalog().price_lists if p.region == "us-east-1" for t in p.usd_per_hour}
    for instance_type in sorted(west_types - east_types):
        cost = estimate_cost(instance_type, "eu-north-1", 1, 1)
        assert cost.fallback_region != "us-east-1" and cost.fallback_usd_per_hour is not None
    for instance_type in sorted(east_types):
        assert estimate_cost(instance_type, "eu-north-1", 1, 1).fallback_region == "us-east-1"


def test_a_region_s_own_dated_list_wins_over_the_us_east_1_fallback():
    # An AWS sample's December 2023 bill for Europe (Ireland), and an AWS recipe's ap-south-1 figure: the
    # $14.584 that seemed to contradict the us-east-1 price of ml.g7e.12xlarge.
    ireland = estimate_cost("ml.g5.12xlarge", "eu-west-1", 1, 1)
    assert ireland.usd_per_hour == 7.91 and ireland.price_region == "eu-west-1"
    assert "2023-12" in ireland.summary() and ireland.fallback_region is None
    mumbai = estimate_cost("ml.g7e.12xlarge", "ap-south-1", 1, 1)
    assert mumbai.usd_per_hour == 14.584
    # A hand-typed recipe input (the suite's ap-south-1 g6e recipe uses the us-east-1 price): not a list price.
    assert "ap-south-1 price (unverified" in mumbai.summary() and "list price" not in mumbai.summary()
    assert estimate_cost("ml.g7e.12xlarge", "us-east-1", 1, 1).usd_per_hour == 10.3576
    # A type the Irish bill does not list still falls back, named.
    other = estimate_cost("ml.g6e.12xlarge", "eu-west-1", 1, 1)
    assert other.usd_per_hour is None and other.fallback_region == "us-east-1"


def test_ohio_has_its_own_hosting_prices_and_falls_back_for_the_rest():
    # A public record of `aws pricing get-products` for us-east-2 (g6) and an article quoting the Price
    # List API (g4dn.xlarge $0.736, against us-east-1's $0.7364).
    assert estimate_cost("ml.g6.2xlarge", "us-east-2", 1, 1).price_region == "us-east-2"
    t4 = estimate_cost("ml.g4dn.xlarge", "us-east-2", 1, 1)
    assert t4.usd_per_hour == 0.736 and t4.price_region == "us-east-2"
    larger = estimate_cost("ml.g6.12xlarge", "us-east-2", 1, 1)
    assert larger.usd_per_hour is None and larger.fallback_region == "us-east-1"


def test_an_instance_priced_nowhere_says_unknown_and_how_to_set_it():
    cost = estimate_cost("ml.p5en.48xlarge", "us-east-1", 1, 1)
    assert cost.usd_per_hour is None and cost.fallback_usd_per_hour is None
    assert "no price for ml.p5en.48xlarge in any region (set price_per_hour" in cost.summary()
    agnostic = estimate_cost("ml.g7e.2xlarge", None, 1, 1)
    assert agnostic.hourly(1) is not None and "not known at synth time" in agnostic.summary()


def test_scale_to_zero_costs_nothing_idle():
    cost = estimate_cost("ml.g5.xlarge", "us-east-1", 0, 2)
    assert cost.hourly(0) == 0 and "$0 while scaled to zero" in cost.summary()


def test_check_prints_the_cost(run_cli, tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(
        yaml.safe_dump(deep_merge(REFERENCE_SPEC, {"scaling": {"min_capacity": 1, "max_capacity": 3}}))
    )
    code, out, _ = run_cli("check", str(path))
    assert code == 0 and "Cost: on-demand cost: $" in out and "for 1-3 x ml.g7e.2xlarge" in out
    assert check(REFERENCE_SPEC).as_dict()["resolved"]["cost"]["max_instances"] == 1


def _stack(region: str | None) -> cdk.Stack:
    env = cdk.Environment(region=region) if region else None
    return cdk.Stack(cdk.App(), "Cost", env=env)


def test_endpoint_annotates_and_outputs_its_cost():
    stack = _stack("us-west-2")
    SpeculativeVllmEndpoint(
        stack,
        "E",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        engine={"max_model_len": 4096},
        scaling={"min_capacity": 1, "max_capacity": 2},
    )
    Annotations.from_stack(stack).has_info(
        "/Cost/E", Match.string_like_regexp(r"on-demand cost: \$.* for 1-2 x")
    )
    outputs = cdk.assertions.Template.from_stack(stack).find_outputs("*")
    [output] = [o for name, o in outputs.items() if "OnDemandUsdPerHour" in name]
    assert output["Value"] == f"{PRICE.usd_per_hour:.2f}-{2 * PRICE.usd_per_hour:.2f}"


def test_inference_component_endpoint_shows_zero_when_idle():
    stack = _stack("us-east-1")
    LmiInferenceComponent(
        stack,
        "Small",
        instance_type="ml.g5.xlarge",
        model_id="Qwen/Qwen3-8B",
        scaling={"min_capacity": 0, "max_capacity": 2},
    )
    outputs = cdk.assertions.Template.from_stack(stack).find_outputs("*")
    [output] = [o for name, o in outputs.items() if "OnDemandUsdPerHour" in name]
    assert output["Value"].startswith("0.00-") and "$0 while scaled to zero" in output["Description"]


def test_stack_output_names_the_fallback_region_where_the_region_has_no_price():
    stack = _stack("eu-north-1")
    SpeculativeVllmEndpoint(
        stack,
        "E",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        engine={"max_model_len": 4096},
        scaling={"min_capacity": 1, "max_capacity": 2},
    )
    us_east = estimate_cost("ml.g7e.2xlarge", "us-east-1", 1, 1).usd_per_hour
    assert us_east is not None
    outputs = cdk.assertions.Template.from_stack(stack).find_outputs("*")
    [output] = [o for name, o in outputs.items() if "OnDemandUsdPerHour" in name]
    assert output["Value"] == f"unknown (us-east-1 list price {us_east:.2f}-{2 * us_east:.2f})"
    assert "no eu-north-1 price" in output["Description"]


def test_an_unverified_stand_in_is_never_called_a_list_price():
    # us-east-1's ml.g7e.12xlarge is the training list's rate, standing in for hosting.
    east = estimate_cost("ml.g7e.12xlarge", "us-east-1", 1, 1).summary()
    assert "us-east-1 price (unverified: no AWS price list read confirms it), 2026-06-19" in east
    shown_elsewhere = estimate_cost("ml.g7e.12xlarge", "eu-central-1", 1, 1)
    assert (
        shown_elsewhere.fallback_region == "us-east-1"
        and "at us-east-1's price (unverified" in shown_elsewhere.summary()
    )
    # A reported list keeps its name.
    assert "us-east-1 list price, 2026-09-20" in estimate_cost("ml.g6e.12xlarge", "us-east-1", 1, 1).summary()
