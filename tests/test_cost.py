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


def test_unknown_region_and_unknown_instance_say_so():
    assert "unknown for region eu-north-1" in estimate_cost("ml.g7e.2xlarge", "eu-north-1", 1, 1).summary()
    assert estimate_cost("ml.g7e.2xlarge", "eu-north-1", 1, 1).hourly(1) is None
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
