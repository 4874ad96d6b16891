"""The stack output and annotation `publish_cost` writes, character for character, from prices chosen here."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match, Template

from speculative_infra.constructs.props import publish_cost
from speculative_infra.cost import CostEstimate


def _published(estimate: CostEstimate) -> tuple[dict[str, Any], list[str]]:
    stack = cdk.Stack(cdk.App(), "Cost")
    publish_cost(stack, estimate)
    [output] = Template.from_stack(stack).find_outputs("*").values()
    infos = [m.entry.data for m in Annotations.from_stack(stack).find_info("*", Match.any_value())]
    return output, [str(i) for i in infos]


def _estimate(low: int, high: int, usd: float | None, note: str = "NOTE", **kw: Any) -> CostEstimate:
    return CostEstimate("ml.g5.xlarge", low, high, usd, None, None, None, note, **kw)


@pytest.mark.parametrize(
    ("estimate", "value", "summary"),
    [
        (
            _estimate(2, 2, 1.234),
            "2.47",
            "on-demand cost: $2.47/hour ($1,777 per 30 days) for 2 x ml.g5.xlarge; NOTE",
        ),
        (
            _estimate(0, 3, 1.5),
            "0.00-4.50",
            "on-demand cost: $0.00 to $4.50/hour ($0 to $3,240 per 30 days) for 0-3 x ml.g5.xlarge ($0 while "
            "scaled to zero; the first request then waits for an instance and the model); NOTE",
        ),
        (_estimate(1, 2, None), "unknown", "on-demand cost of ml.g5.xlarge: NOTE"),
        (
            _estimate(1, 1, None, fallback_usd_per_hour=2.0, fallback_region="us-east-1", fallback_as_of="d"),
            "unknown (us-east-1 list price 2.00)",
            "on-demand cost: $2.00/hour ($1,440 per 30 days) for 1 x ml.g5.xlarge; NOTE",
        ),
        (
            _estimate(1, 2, None, fallback_usd_per_hour=2.0, fallback_region="us-east-1", fallback_as_of="d"),
            "unknown (us-east-1 list price 2.00-4.00)",
            "on-demand cost: $2.00 to $4.00/hour ($1,440 to $2,880 per 30 days) for 1-2 x ml.g5.xlarge; NOTE",
        ),
    ],
)
def test_output_value_description_and_annotation(estimate: CostEstimate, value: str, summary: str) -> None:
    output, infos = _published(estimate)
    assert output["Value"] == value
    assert output["Description"] == summary
    assert infos == [summary]


def test_a_long_note_is_cut_to_the_outputs_limit_in_the_description_only() -> None:
    note = "n" * 2000
    output, infos = _published(_estimate(1, 1, 1.0, note=note))
    summary = f"on-demand cost: $1.00/hour ($720 per 30 days) for 1 x ml.g5.xlarge; {note}"
    assert output["Description"] == summary[:1000] and infos == [summary]
