"""Enumerate deployments of one model that pass every rule, predict each, rank those meeting the SLOs.

Candidates: every catalog instance type (the cheapest size per family and GPU count, since sizes with the
same GPUs serve the same), the newest vLLM DLC, each tensor-parallel size the instance and the model's
attention heads allow, and no speculation or each catalog draft of the model at a few k.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from speculative_infra.catalog import Catalog, load_catalog
from speculative_infra.check import check
from speculative_infra.facts import FetchedFacts
from speculative_infra.planner.calibration import MeasuredFactor
from speculative_infra.planner.predict import Plan, PlanNotPossible, level_dict, predict
from speculative_infra.planner.workload import Workload
from speculative_infra.rules.finding import Severity

SPECULATIVE_K = (2, 3, 4, 5)
SLO_KEYS = ("ttft_ms", "tpot_ms", "e2el_ms")


@dataclass(frozen=True)
class Candidate:
    spec: dict[str, Any]
    plan: Plan
    prediction: dict[str, Any]
    meets_slo: bool
    misses: list[str]  # which SLO a candidate misses, and by how much

    @property
    def usd_per_million_output_tokens(self) -> float | None:
        value = self.prediction.get("usd_per_million_output_tokens")
        return None if value is None else float(value)


def _instance_types(cat: Catalog, families: Sequence[str] | None, region: str | None) -> list[str]:
    cheapest: dict[tuple[str, int], tuple[float, str]] = {}
    for family, fam in cat.families.items():
        if families and family not in families:
            continue
        for size, facts in fam.sizes.items():
            name = f"ml.{family}.{size}"
            price = cat.price(name, region)
            if price is None:
                continue  # nothing to rank it by
            key = (family, facts.gpus)
            if key not in cheapest or price.usd_per_hour < cheapest[key][0]:
                cheapest[key] = (price.usd_per_hour, name)
    return sorted(name for _, name in cheapest.values())


def _tensor_parallel_sizes(gpus: int, heads: int) -> list[int]:
    return [tp for tp in (1, 2, 4, 8) if tp <= gpus and heads % tp == 0 and gpus % tp == 0]


def _speculative_choices(cat: Catalog, model_id: str) -> list[dict[str, Any] | None]:
    choices: list[dict[str, Any] | None] = [None]
    for draft_id, draft in cat.drafts.items():
        if draft.target != model_id:
            continue
        for k in SPECULATIVE_K:
            choices.append({"method": draft.method, "model": draft_id, "num_speculative_tokens": k})
    return choices


def _misses(prediction: dict[str, Any], slo: Mapping[str, float]) -> list[str]:
    measured = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms", "e2el_ms": "e2e_latency_ms"}
    out = []
    for key, limit in slo.items():
        value = prediction.get(measured[key])
        if value is None or value > limit:
            out.append(f"{key} {value if value is not None else 'unbounded'} > {limit:g}")
    return out


def recommend(
    *,
    model_id: str,
    workload: Workload,
    concurrency: int | None,
    request_rate: float | None,
    slo: Mapping[str, float],
    region: str | None,
    families: Sequence[str] | None = None,
    max_usd_per_hour: float | None = None,
    fetched: Mapping[str, FetchedFacts] | None = None,
    factors: dict[str, MeasuredFactor] | None = None,
) -> list[Candidate]:
    """Every candidate that passes `check`, best first: meeting the SLOs, then by $ per million output
    tokens (candidates without a price last)."""
    cat = load_catalog()
    dlc = cat.vllm_dlc_versions()[-1]
    instance_types = _instance_types(cat, families, region)
    if not instance_types:
        raise PlanNotPossible(f"no priced instance type in families {', '.join(families or [])}")
    probe = {
        "instance_type": instance_types[0],
        "container": {"framework": "vllm", "version": dlc},
        "model": {"id": model_id},
    }
    known = check(probe, fetched).deployment.model
    if known is None:
        raise PlanNotPossible(
            f"the catalog has no facts for model {model_id!r}: run `speculative-infra facts fetch {model_id}` "
            "(or --from-folder DIR) and pass --context cdk.context.json"
        )
    heads = known.num_attention_heads
    candidates: list[Candidate] = []
    max_len = max(4096, workload.sequence_tokens)
    for instance_type in instance_types:
        instance = cat.instance_type(instance_type)
        assert instance is not None
        price = cat.price(instance_type, region)
        if max_usd_per_hour is not None and price is not None and price.usd_per_hour > max_usd_per_hour:
            continue
        for tp in _tensor_parallel_sizes(instance.gpu_count, int(heads)):
            for speculative in _speculative_choices(cat, model_id):
                spec: dict[str, Any] = {
                    "region": region or "us-east-1",
                    "instance_type": instance_type,
                    "container": {"framework": "vllm", "version": dlc},
                    "model": {"id": model_id},
                    "engine": {"tensor_parallel_size": tp, "max_model_len": max_len},
                }
                if speculative is not None:
                    spec["speculative"] = speculative
                result = check(spec, fetched)
                if any(f.severity == Severity.ERROR for f in result.findings):
                    continue
                try:
                    plan = predict(
                        result.deployment,
                        workload,
                        concurrency=[concurrency] if concurrency else [],
                        request_rates=[request_rate] if request_rate else [],
                        factors=factors,
                    )
                except (PlanNotPossible, ValueError):
                    continue
                prediction = level_dict(plan.levels[0], workload, plan.usd_per_hour, plan.error_band)
                misses = _misses(prediction, slo)
                candidates.append(Candidate(spec, plan, prediction, not misses, misses))

    def rank(c: Candidate) -> tuple[bool, float, float]:
        cost = c.usd_per_million_output_tokens
        return (not c.meets_slo, cost if cost is not None else float("inf"), c.plan.usd_per_hour or 0.0)

    return sorted(candidates, key=rank)
