"""A resolved deployment + a workload -> predictions per load level, with cost and stated assumptions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.cost import CostEstimate
from speculative_infra.planner.acceptance import draft_acceptance
from speculative_infra.planner.calibration import (
    MeasuredFactor,
    PlannerCalibration,
    factor_key,
    load_calibration,
)
from speculative_infra.planner.performance import LevelPrediction, closed_loop, engine_for, open_loop
from speculative_infra.planner.workload import PlanInputError, Workload
from speculative_infra.resolve import ResolvedDeployment


class PlanNotPossible(ValueError):
    """The deployment cannot be predicted (missing facts, or a workload it cannot hold)."""


@dataclass(frozen=True)
class Plan:
    levels: list[LevelPrediction]
    usd_per_hour: float | None
    price_note: str
    assumptions: dict[str, Any]
    error_band: dict[str, tuple[float, float]]
    notes: list[str] = field(default_factory=list)

    def as_dicts(self, workload: Workload) -> list[dict[str, Any]]:
        return [level_dict(lv, workload, self.usd_per_hour, self.error_band) for lv in self.levels]


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def level_dict(
    lv: LevelPrediction, w: Workload, usd_per_hour: float | None, band: dict[str, tuple[float, float]]
) -> dict[str, Any]:
    out_rate = lv.output_tokens_per_s
    per_million_out = per_million = None
    if usd_per_hour is not None and out_rate:
        per_million_out = usd_per_hour / 3600 / out_rate * 1e6
        per_million = usd_per_hour / 3600 / (out_rate * w.sequence_tokens / w.output_tokens) * 1e6

    def ms(v: float | None) -> float | None:
        return None if v is None else round(v * 1000, 1)

    def spread(name: str, value: float | None, inverse: bool = False) -> dict[str, float | None]:
        low, high = band.get(name, (1.0, 1.0))
        if value is None:
            return {"low": None, "high": None}
        if inverse:  # a latency: a faster measurement than predicted is a lower latency
            low, high = 1 / high, 1 / low
        return {"low": round(value * low, 1), "high": round(value * high, 1)}

    return {
        "concurrency": lv.concurrency,
        "request_rate": lv.request_rate,
        "running_sequences": _round(lv.running),
        "ttft_ms": ms(lv.ttft_s),
        "tpot_ms": ms(lv.tpot_s),
        "e2e_latency_ms": ms(lv.e2e_s),
        "output_tokens_per_s_per_request": _round(lv.output_tokens_per_s_per_request),
        "output_tokens_per_s": _round(lv.output_tokens_per_s),
        "requests_per_s": _round(lv.requests_per_s, 3),
        "usd_per_million_output_tokens": _round(per_million_out, 3),
        "usd_per_million_tokens": _round(per_million, 3),
        "bound": lv.bound,
        "range": {
            "output_tokens_per_s_per_request": spread(
                "output_tokens_per_s_per_request", lv.output_tokens_per_s_per_request
            ),
            "output_tokens_per_s": spread("output_tokens_per_s", lv.output_tokens_per_s),
            "e2e_latency_ms": spread("output_tokens_per_s_per_request", ms(lv.e2e_s), inverse=True),
        },
        **({"notes": lv.notes} if lv.notes else {}),
    }


def predict(
    d: ResolvedDeployment,
    workload: Workload,
    *,
    concurrency: Sequence[int] = (),
    request_rates: Sequence[float] = (),
    acceptance_length: float | None = None,
    factors: dict[str, MeasuredFactor] | None = None,
    calibration: PlannerCalibration | None = None,
) -> Plan:
    cal = calibration or load_calibration()
    if d.instance is None or d.model is None or d.container is None:
        raise PlanNotPossible("the deployment has no known instance type, model or container")
    if d.world_size != d.tensor_parallel_size or d.data_parallel_size != 1:
        # Every run the model was fitted on is tensor parallel only (planner/planner_calibration.yaml).
        raise PlanNotPossible(
            "the planner models tensor parallelism only: none of the runs it was fitted on set "
            "engine.pipeline_parallel_size, prefill_context_parallel_size or data_parallel_size"
        )
    plan = d.memory_plan()
    assert plan is not None
    max_len = int(d.engine.get("max_model_len") or d.model.max_position_embeddings)
    if workload.sequence_tokens > max_len:
        raise PlanInputError(
            f"a request of {workload.input_tokens} input + {workload.output_tokens} output tokens "
            f"({workload.sequence_tokens}) does not fit engine.max_model_len {max_len}: "
            "raise max_model_len or shorten the workload"
        )
    spec = d.speculative or {}
    k = int(spec.get("num_speculative_tokens") or 0) if spec else 0
    assumptions: dict[str, Any] = {
        "gpu": d.instance.gpu_name,
        "tensor_parallel_size": d.tensor_parallel_size,
        "max_num_seqs": d.engine.get("max_num_seqs"),
        "kv_cache_tokens": plan.cache_tokens(),
        "prefix_caching": bool(d.engine.get("enable_prefix_caching", True)),
        "text_kind": workload.text_kind,
    }
    length = 1.0
    if spec and k:
        draft_id = str(spec.get("model")) if spec.get("model") else None
        if acceptance_length is not None:
            length = min(acceptance_length, k + 1.0)
            assumptions["acceptance_length"] = {"value": round(length, 3), "source": "--acceptance-length"}
        else:
            found = draft_acceptance(
                load_catalog(),
                draft_id=draft_id,
                method=str(spec.get("method", "")),
                k=k,
                text_kind=workload.text_kind,
                fitted=cal.acceptance,
            )
            if found is None:
                raise PlanNotPossible(
                    f"no acceptance length is known for speculative method {spec.get('method')!r}"
                    f"{f' with draft {draft_id}' if draft_id else ''}: pass --acceptance-length"
                )
            length = found.length
            assumptions["acceptance_length"] = {"value": round(length, 3), "source": found.source}
    engine = engine_for(
        instance=d.instance,
        model=d.model,
        engine_args=d.engine_as_run(),
        speculative=d.speculative,
        plan=plan,
        acceptance_length=length,
    )
    efficiency, fitted = cal.efficiency(d.instance.gpu_name)
    notes: list[str] = []
    if not fitted:
        notes.append(
            f"no measured run on {d.instance.gpu_name} was fitted: its efficiencies are the fitted GPUs' mean"
        )
    if d.instance.gpu.dense_tflops is None or d.instance.gpu.dense_tflops.confidence == "unverified":
        notes.append(f"{d.instance.gpu_name}'s dense tensor throughput is not published: see the catalog")
    levels = [closed_loop(engine, efficiency, workload, c) for c in concurrency]
    levels += [open_loop(engine, efficiency, workload, r) for r in request_rates]
    key = factor_key(
        d.instance.gpu_name, f"{d.container.framework} {d.container.version}", d.model_id, spec.get("model")
    )
    factor = (factors or {}).get(key)
    if factor is not None:
        levels = [_scaled(lv, factor.factor) for lv in levels]
        assumptions["measured_factor"] = {"key": key, "factor": factor.factor, "source": factor.source}
        notes.append(f"scaled by {factor.factor:.3f}, measured on your deployment ({factor.source})")
    price = d.cost()
    price_note = price.note
    if price.usd_per_hour is None:
        notes.append(f"no dollar figures: {_unpriced(price, d.region)}; pass a region the catalog prices")
    band = {name: (b.low, b.high) for name, b in cal.error_band.items()}
    return Plan(levels, price.usd_per_hour, price_note, assumptions, band, notes)


def _unpriced(price: CostEstimate, region: str | None) -> str:
    """Why a deployment has no dollar figures, naming another region's price where the catalog has one."""
    if price.fallback_usd_per_hour is None:
        return f"the on-demand price of {price.instance_type} is {price.note}"
    return (
        f"the catalog has no price for {price.instance_type} in {region} ({price.fallback_region}'s "
        f"list price is ${price.fallback_usd_per_hour:,.2f}/hour; prices differ by region)"
    )


def _scaled(lv: LevelPrediction, factor: float) -> LevelPrediction:
    """A level as fast as the user's own measurements say this kind of deployment runs."""

    def faster(v: float | None) -> float | None:
        return None if v is None else v * factor

    def shorter(v: float | None) -> float | None:
        return None if v is None else v / factor

    return LevelPrediction(
        concurrency=lv.concurrency,
        request_rate=lv.request_rate,
        running=lv.running,
        ttft_s=shorter(lv.ttft_s),
        tpot_s=shorter(lv.tpot_s),
        e2e_s=shorter(lv.e2e_s),
        output_tokens_per_s_per_request=faster(lv.output_tokens_per_s_per_request),
        output_tokens_per_s=lv.output_tokens_per_s if lv.request_rate else faster(lv.output_tokens_per_s),
        requests_per_s=lv.requests_per_s if lv.request_rate else faster(lv.requests_per_s),
        bound=lv.bound,
        notes=lv.notes,
    )
