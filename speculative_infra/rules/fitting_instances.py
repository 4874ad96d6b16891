"""Which catalog instance types and tensor-parallel sizes a deployment would fit on, cheapest first.

SI300's fix names them. Nothing is written by hand: every candidate is the deployment re-resolved on
another instance type and tensor-parallel size (resolve.resolve_alternative) and judged by the memory
model SI300 uses, and by the other error rules, so a suggestion never trades one error for another.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import InstanceType, ModelFacts
from speculative_infra.cost import FALLBACK_REGION, estimate_cost
from speculative_infra.resolve import ResolvedDeployment, resolve_alternative
from speculative_infra.rules.decorator import RULES
from speculative_infra.rules.finding import Severity

# Where a price comes from when the catalog has none for the spec's region (or the region is not known):
# the region with the most prices in the catalog (catalog/data/prices.yaml).
PRICE_FALLBACK_REGION = FALLBACK_REGION  # one fallback region for every price the library shows
MEMORY_RULE = "SI300"
SUGGESTED_INSTANCES = 3  # enough to choose from, few enough to read in one fix


@dataclass(frozen=True)
class FittingInstance:
    instance_type: str
    tensor_parallel_size: int
    usd_per_hour: float | None  # one instance, on demand; None: no price in the catalog
    price_region: str | None  # the region whose list price it is
    region_fallback: bool  # the price is PRICE_FALLBACK_REGION's: the spec's region has none (or none given)

    def describe(self) -> str:
        if self.usd_per_hour is None:
            price = "price unknown"
        else:
            price = f"${self.usd_per_hour:,.2f}/hour in {self.price_region}"
        return f"{self.instance_type} (engine.tensor_parallel_size: {self.tensor_parallel_size}, {price})"


def fits_in_memory(d: ResolvedDeployment, tokens: int) -> bool | None:
    """SI300's question: do weights, draft, overheads and one `tokens` sequence fit? None: not known."""
    plan = d.memory_plan()
    return None if plan is None else plan.fits(tokens)


def _tensor_parallel_sizes(d: ResolvedDeployment, instance: InstanceType, model: ModelFacts) -> list[int]:
    """Degrees to try, in order: those that divide the heads (SI311) on the instance's GPUs (SI310). A
    single-model endpoint uses all it can (idle GPUs are SI312); inference components try the fewest first
    (more copies per instance)."""
    sizes = [tp for tp in range(1, instance.gpu_count + 1) if model.num_attention_heads % tp == 0]
    return sizes if d.endpoint_kind == "inference_component" else sizes[-1:]


def _errors(d: ResolvedDeployment) -> set[tuple[str, str | None, str]]:
    # Every error rule but SI300 itself (which is what calls this: no recursion). The message is part of
    # an error's identity: one that names the instance or its GPU is another problem on another instance.
    return {
        (finding.code, finding.field, finding.message)
        for rule in RULES.values()
        if rule.code != MEMORY_RULE and rule.severity is Severity.ERROR
        for finding in rule.run(d)
    }


def _price(instance_type: str, region: str | None) -> tuple[float | None, str | None, bool]:
    if region is not None:
        own = estimate_cost(instance_type, region, 1, 1)
        if own.usd_per_hour is not None:
            return own.usd_per_hour, own.price_region, False
    fallback = estimate_cost(instance_type, PRICE_FALLBACK_REGION, 1, 1)
    if fallback.usd_per_hour is None:
        return None, None, False
    return fallback.usd_per_hour, fallback.price_region, True


def instances_that_fit(
    d: ResolvedDeployment, tokens: int, limit: int = SUGGESTED_INSTANCES
) -> list[FittingInstance]:
    """Up to `limit` (instance type, tensor-parallel size) pairs on which `d` with `tokens` tokens fits in
    GPU memory and raises no error that `d` does not already have; cheapest first (unpriced ones last, the
    smallest total GPU memory first), one size per GPU and GPU count (the cheapest)."""
    if d.model is None:
        return []
    cat = load_catalog()
    ranked: list[tuple[tuple[bool, float, int, str], InstanceType, FittingInstance]] = []
    for name in cat.instance_type_names():
        instance = cat.instance_type(name)
        assert instance is not None  # a name the catalog lists
        usd, region, fallback = _price(name, d.region)
        memory = instance.gpu_count * instance.gpu.memory_mib
        ranked.append(
            (
                (usd is None, usd or 0.0, memory, name),
                instance,
                FittingInstance(name, 0, usd, region, fallback),
            )
        )
    ranked.sort(key=lambda r: r[0])
    chosen: list[FittingInstance] = []
    known_errors: set[tuple[str, str | None, str]] | None = None  # d's own, computed when first needed
    shown: set[tuple[str, int]] = set()  # GPU and count: a larger size of the same GPUs only adds CPUs
    for _, instance, priced in ranked:
        if (instance.gpu_name, instance.gpu_count) in shown:
            continue
        for tp in _tensor_parallel_sizes(d, instance, d.model):
            if instance.name == d.spec.instance_type and tp == d.tensor_parallel_size:
                continue  # the deployment itself
            candidate = resolve_alternative(d, instance.name, tp)
            if not fits_in_memory(candidate, tokens):
                continue
            errors = _errors(candidate)
            if errors:
                known_errors = _errors(d) if known_errors is None else known_errors
                if not errors <= known_errors:
                    continue
            chosen.append(replace(priced, tensor_parallel_size=tp))
            shown.add((instance.gpu_name, instance.gpu_count))
            break
        if len(chosen) == limit:
            break
    return chosen
