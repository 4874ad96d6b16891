"""What a deployment costs while it runs: on-demand instance price x instances, at both ends of scaling."""

from __future__ import annotations

from dataclasses import dataclass

from speculative_infra.catalog import Catalog, load_catalog

HOURS_PER_30_DAYS = 24 * 30
FALLBACK_REGION = "us-east-1"  # whose price a region without one is shown (the catalog's fullest list)


@dataclass(frozen=True)
class CostEstimate:
    instance_type: str
    min_instances: int
    max_instances: int
    usd_per_hour: float | None  # one instance; None: no price for the region
    price_region: str | None  # the region whose price list was used
    source: str | None
    as_of: str | None
    note: str  # how the figure was found, or why there is none
    # The region has no price: the list price of the region named here, shown by summary() in its place
    # and never used as the region's own figure (usd_per_hour stays None).
    fallback_usd_per_hour: float | None = None
    fallback_region: str | None = None
    fallback_as_of: str | None = None

    def hourly(self, instances: int) -> float | None:
        return None if self.usd_per_hour is None else self.usd_per_hour * instances

    def summary(self) -> str:
        """One line, as the construct annotation and `check` show it."""
        price = self.usd_per_hour if self.usd_per_hour is not None else self.fallback_usd_per_hour
        if price is None:
            return f"on-demand cost of {self.instance_type}: {self.note}"
        low, high = price * self.min_instances, price * self.max_instances
        span = (
            f"${low:,.2f}/hour (${low * HOURS_PER_30_DAYS:,.0f} per 30 days)"
            if self.min_instances == self.max_instances
            else f"${low:,.2f} to ${high:,.2f}/hour (${low * HOURS_PER_30_DAYS:,.0f} to "
            f"${high * HOURS_PER_30_DAYS:,.0f} per 30 days)"
        )
        idle = " ($0 while scaled to zero; the first request then waits for an instance and the model)"
        counts = (
            f"{self.min_instances}-{self.max_instances}"
            if self.min_instances != self.max_instances
            else str(self.min_instances)
        )
        return (
            f"on-demand cost: {span} for {counts} x {self.instance_type}"
            f"{idle if self.min_instances == 0 else ''}; {self.note}"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "instance_type": self.instance_type,
            "min_instances": self.min_instances,
            "max_instances": self.max_instances,
            "usd_per_instance_hour": self.usd_per_hour,
            "usd_per_hour": [self.hourly(self.min_instances), self.hourly(self.max_instances)],
            "usd_per_30_days": [
                None if h is None else round(h * HOURS_PER_30_DAYS, 2)
                for h in (self.hourly(self.min_instances), self.hourly(self.max_instances))
            ],
            "price_region": self.price_region,
            "fallback": None
            if self.fallback_usd_per_hour is None
            else {
                "usd_per_instance_hour": self.fallback_usd_per_hour,
                "region": self.fallback_region,
                "as_of": self.fallback_as_of,
            },
            "as_of": self.as_of,
            "source": self.source,
            "note": self.note,
        }


def _kind(confidence: str) -> str:
    # A stand-in figure (another usage type's rate, a hand-typed input) is not called a list price.
    return (
        "price (unverified: no AWS price list read confirms it)"
        if confidence == "unverified"
        else "list price"
    )


def estimate_cost(
    instance_type: str,
    region: str | None,
    min_instances: int,
    max_instances: int,
    catalog: Catalog | None = None,
) -> CostEstimate:
    """The region's list price; for an environment-agnostic stack (region None) the first list's, said so."""
    cat = catalog or load_catalog()
    lists = [p for p in cat.price_lists if instance_type in p.usd_per_hour]
    chosen = next((p for p in lists if p.region == region), None) if region else (lists[0] if lists else None)
    if chosen is None:
        if not lists:
            note = (
                f"unknown: the catalog has no price for {instance_type} in any region "
                "(set price_per_hour / --price-per-hour)"
            )
            return CostEstimate(instance_type, min_instances, max_instances, None, None, None, None, note)
        # Another region's price, shown for scale and named as such; never the region's own figure.
        other = next((p for p in lists if p.region == FALLBACK_REGION), lists[0])
        note = (
            f"at {other.region}'s {_kind(other.confidence)} ({other.as_of}): the catalog has no {region} price for "
            f"{instance_type}, and prices differ by region (set price_per_hour / --price-per-hour for yours)"
        )
        return CostEstimate(
            instance_type,
            min_instances,
            max_instances,
            None,
            None,
            other.source,
            None,
            note,
            fallback_usd_per_hour=other.usd_per_hour[instance_type],
            fallback_region=other.region,
            fallback_as_of=other.as_of,
        )
    note = f"{chosen.region} {_kind(chosen.confidence)}, {chosen.as_of}"
    if region is None:
        note += " (the stack's region is not known at synth time)"
    return CostEstimate(
        instance_type,
        min_instances,
        max_instances,
        chosen.usd_per_hour[instance_type],
        chosen.region,
        chosen.source,
        chosen.as_of,
        note,
    )
