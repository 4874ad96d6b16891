"""The cost text that reaches the outputs (the construct annotation and stack output, `check`'s Cost line
and its serving-cost table), asserted character for character from prices chosen here, not snapshotted."""

from __future__ import annotations

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import PriceList
from speculative_infra.cli.check_command import format_costs
from speculative_infra.cost import HOURS_PER_30_DAYS, CostEstimate, estimate_cost
from speculative_infra.serving_cost import ServingWorkload, compare_serving_costs
from tests.conftest import REPO

IDLE = " ($0 while scaled to zero; the first request then waits for an instance and the model)"


def _estimate(low: int, high: int, usd: float | None, **kwargs: object) -> CostEstimate:
    return CostEstimate("ml.g5.xlarge", low, high, usd, "us-east-1", "test", "2026-01-01", "NOTE", **kwargs)  # type: ignore[arg-type]


def test_hours_per_30_days() -> None:
    assert HOURS_PER_30_DAYS == 720


def test_a_fixed_count_is_one_price() -> None:
    # 2 x $1.234 = $2.468/hour; x 720 = $1,776.96 per 30 days.
    assert _estimate(2, 2, 1.234).summary() == (
        "on-demand cost: $2.47/hour ($1,777 per 30 days) for 2 x ml.g5.xlarge; NOTE"
    )
    assert _estimate(1, 1, 1234.5).summary() == (
        "on-demand cost: $1,234.50/hour ($888,840 per 30 days) for 1 x ml.g5.xlarge; NOTE"
    )


def test_a_range_shows_both_ends() -> None:
    assert _estimate(1, 3, 10.5).summary() == (
        "on-demand cost: $10.50 to $31.50/hour ($7,560 to $22,680 per 30 days) for 1-3 x ml.g5.xlarge; NOTE"
    )


def test_scale_to_zero_says_so() -> None:
    assert _estimate(0, 2, 1.5).summary() == (
        f"on-demand cost: $0.00 to $3.00/hour ($0 to $2,160 per 30 days) for 0-2 x ml.g5.xlarge{IDLE}; NOTE"
    )
    assert _estimate(1, 2, 1.5).summary().count("scaled to zero") == 0


def test_no_price_shows_the_note_alone() -> None:
    assert _estimate(1, 2, None).summary() == "on-demand cost of ml.g5.xlarge: NOTE"


def test_another_regions_price_is_shown_in_the_line_but_computes_nothing() -> None:
    cost = _estimate(1, 2, None, fallback_usd_per_hour=2.0, fallback_region="us-east-1", fallback_as_of="d")
    assert cost.summary() == (
        "on-demand cost: $2.00 to $4.00/hour ($1,440 to $2,880 per 30 days) for 1-2 x ml.g5.xlarge; NOTE"
    )
    assert cost.hourly(1) is None and cost.hourly(2) is None


def test_as_dict_figures() -> None:
    assert _estimate(1, 3, 10.5).as_dict() == {
        "instance_type": "ml.g5.xlarge",
        "min_instances": 1,
        "max_instances": 3,
        "usd_per_instance_hour": 10.5,
        "usd_per_hour": [10.5, 31.5],
        "usd_per_30_days": [7560.0, 22680.0],
        "price_region": "us-east-1",
        "fallback": None,
        "as_of": "2026-01-01",
        "source": "test",
        "note": "NOTE",
    }
    assert _estimate(1, 1, 0.333333).as_dict()["usd_per_30_days"] == [240.0, 240.0]  # 239.99976, rounded
    assert _estimate(1, 2, 1.2345).as_dict()["usd_per_30_days"] == [888.84, 1777.68]  # to the cent
    fallback = _estimate(
        0, 1, None, fallback_usd_per_hour=2.0, fallback_region="us-east-1", fallback_as_of="d"
    )
    data = fallback.as_dict()
    assert data["usd_per_hour"] == [None, None] and data["usd_per_30_days"] == [None, None]
    assert data["fallback"] == {"usd_per_instance_hour": 2.0, "region": "us-east-1", "as_of": "d"}


def _catalog() -> object:
    def prices(region: str, as_of: str, usd: dict[str, float]) -> PriceList:
        return PriceList(
            region=region, as_of=as_of, usd_per_hour=usd, source=f"{region} list", confidence="reported"
        )

    return load_catalog().model_copy(
        update={
            "price_lists": [
                prices("eu-west-1", "2026-03-01", {"ml.a": 1.0, "ml.b": 7.0, "ml.c": 6.0}),
                prices("us-east-1", "2026-02-01", {"ml.a": 2.0}),
                prices("us-west-2", "2026-01-01", {"ml.a": 3.0, "ml.c": 5.0}),
            ]
        }
    )


def test_the_notes_say_where_the_price_comes_from() -> None:
    catalog = _catalog()
    own = estimate_cost("ml.a", "us-west-2", 1, 2, catalog)  # type: ignore[arg-type]
    assert (own.usd_per_hour, own.price_region, own.as_of, own.source) == (
        3.0,
        "us-west-2",
        "2026-01-01",
        "us-west-2 list",
    )
    assert own.summary() == (
        "on-demand cost: $3.00 to $6.00/hour ($2,160 to $4,320 per 30 days) for 1-2 x ml.a; "
        "us-west-2 list price, 2026-01-01"
    )
    agnostic = estimate_cost("ml.a", None, 1, 1, catalog)  # type: ignore[arg-type]
    assert agnostic.usd_per_hour == 1.0 and agnostic.summary() == (
        "on-demand cost: $1.00/hour ($720 per 30 days) for 1 x ml.a; "
        "eu-west-1 list price, 2026-03-01 (the stack's region is not known at synth time)"
    )
    # No price in the region: us-east-1's shown where it has one, else the first list's.
    elsewhere = estimate_cost("ml.a", "ap-south-1", 1, 1, catalog)  # type: ignore[arg-type]
    assert elsewhere.usd_per_hour is None and elsewhere.fallback_usd_per_hour == 2.0
    assert elsewhere.summary() == (
        "on-demand cost: $2.00/hour ($1,440 per 30 days) for 1 x ml.a; at us-east-1's list price "
        "(2026-02-01): the catalog has no ap-south-1 price for ml.a, and prices differ by region "
        "(set price_per_hour / --price-per-hour for yours)"
    )
    first = estimate_cost("ml.c", "ap-south-1", 1, 1, catalog)  # type: ignore[arg-type]
    assert (first.fallback_region, first.fallback_usd_per_hour, first.fallback_as_of) == (
        "eu-west-1",
        6.0,
        "2026-03-01",
    )
    assert first.price_region is None and first.as_of is None and first.source == "eu-west-1 list"
    nowhere = estimate_cost("ml.z", "us-east-1", 1, 1, catalog)  # type: ignore[arg-type]
    assert nowhere.summary() == (
        "on-demand cost of ml.z: unknown: the catalog has no price for ml.z in any region "
        "(set price_per_hour / --price-per-hour)"
    )


def test_check_prints_the_catalog_price_as_computed_here(run_cli) -> None:  # type: ignore[no-untyped-def]
    price = load_catalog().price("ml.g7e.2xlarge", "us-west-2")
    assert price is not None
    code, out, _ = run_cli("check", str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml"))
    assert code == 0
    [line] = [line for line in out.splitlines() if line.startswith("Cost: ")]
    cost = estimate_cost("ml.g7e.2xlarge", "us-west-2", 1, 1)
    assert line == (
        f"Cost: on-demand cost: ${price.usd_per_hour:,.2f}/hour (${price.usd_per_hour * 720:,.0f} per 30 days) "
        f"for 1 x ml.g7e.2xlarge; us-west-2 list price, {cost.as_of}"
    )


PRICE = CostEstimate(
    "ml.g6e.12xlarge", 1, 1, 10.0, "us-east-1", "test", "2026-01-01", "us-east-1 list price, d"
)


def test_serving_cost_notes_and_figures() -> None:
    # 18,000,000 tokens at 1,000 tokens/s: 5 busy hours.
    costs = compare_serving_costs(
        PRICE, ServingWorkload(18e6, 1000.0, async_wakes_per_day=2, batch_jobs_per_day=3)
    )
    assert [c.as_dict() for c in costs] == [
        {
            "mode": "batch",
            "instance_hours_per_day": 5.5,
            "usd_per_day": 55.0,
            "note": "busy 5.00 h + 3 job(s) x 10 min start-up",
        },
        {
            "mode": "async",
            "instance_hours_per_day": 5.833,
            "usd_per_day": 58.33,
            "note": "busy 5.00 h + 2 wake(s) from zero x (10 min start-up + 15 min before scale-in)",
        },
        {
            "mode": "real_time",
            "instance_hours_per_day": 24,
            "usd_per_day": 240.0,
            "note": "1 instance(s) around the clock (busy 5.00 instance-hours)",
        },
    ]


def test_serving_cost_without_a_price_says_why_in_each_note() -> None:
    unpriced = CostEstimate("ml.x", 1, 1, None, None, None, None, "unknown: no price")
    costs = compare_serving_costs(
        unpriced, ServingWorkload(36e5, 1000.0), batch_unavailable="no batch (SI103)"
    )
    assert [(c.mode, c.instance_hours_per_day, c.usd_per_day, c.note) for c in costs] == [
        ("async", pytest.approx(1 + 25 / 60), None, "busy 1.00 h + 1 wake(s) from zero x (10 min start-up + "
         "15 min before scale-in); no price: unknown: no price"),
        ("real_time", 24, None, "1 instance(s) around the clock (busy 1.00 instance-hours); no price: unknown: no price"),
        ("batch", None, None, "no batch (SI103); no price: unknown: no price"),
    ]  # fmt: skip


def test_the_serving_cost_table_prints_the_figures() -> None:
    costs = compare_serving_costs(PRICE, ServingWorkload(18e6, 1000.0))
    text = format_costs(
        {
            "daily_output_tokens": 18e6,
            "output_tokens_per_second": 1000.0,
            "throughput_source": "--throughput",
            "price_note": "NOTE",
            "modes": [c.as_dict() for c in costs],
        }
    )
    lines = text.splitlines()
    assert lines[0] == (
        "Serving cost for 18,000,000 output tokens a day at 1,000.0 tokens/s per instance (--throughput); NOTE"
    )
    assert lines[1].split() == ["mode", "instance-h/day", "$/day", "how"]
    modes = ("batch", "async", "real_time")
    rows = {parts[0]: parts[1:3] for line in lines[3:] if (parts := line.split()) and parts[0] in modes}
    # busy 5 h; + 1 job x 10 min; + 1 wake x 25 min; 24 h around the clock; at $10 an hour.
    assert rows == {
        "batch": ["5.17", "$51.67"],
        "async": ["5.42", "$54.17"],
        "real_time": ["24.00", "$240.00"],
    }
