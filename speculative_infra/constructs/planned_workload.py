"""The workload a user declares on an endpoint construct, and the planner's prediction for it at synth.

With ``workload=`` the construct states, as an info annotation, what the planner predicts one instance
(one copy of an inference component) delivers at the scaling target's load, and EndpointBenchmark
publishes the same prediction beside what it measures after deploy (docs/planner.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from aws_cdk import Annotations
from constructs import Construct
from pydantic import BaseModel, ConfigDict, Field

from speculative_infra.catalog.models import TextKind
from speculative_infra.constructs.options import parse_options_model
from speculative_infra.planner.calibration import CONTEXT_KEY, read_factors
from speculative_infra.planner.predict import PlanNotPossible, level_dict, predict
from speculative_infra.planner.workload import PlanInputError, Workload
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.spec.models import ScalingOptions


class PlannedWorkload(BaseModel):
    """Mean tokens per request the endpoint is expected to serve; the planner predicts for them."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    input_tokens: int = Field(ge=1, description="Mean prompt tokens per request.")
    output_tokens: int = Field(ge=1, description="Mean generated tokens per request.")
    prefix_tokens: int = Field(
        default=0, ge=0, description="Tokens every prompt shares (a system prompt). Default: 0."
    )
    text_kind: TextKind = Field(
        default="chat", description="What the text is like, which sets the draft's acceptance. Default: chat."
    )
    concurrency: list[Annotated[int, Field(ge=1)]] | None = Field(
        default=None,
        min_length=1,
        description="Requests in flight per instance (or copy) to predict for. Default: the scaling target "
        "(concurrent_requests), else 1 and max_num_seqs.",
    )
    acceptance_length: float | None = Field(
        default=None,
        ge=1,
        description="Tokens one speculative step yields per sequence, overriding the catalog's figure. "
        "Default: the catalog's for the draft and text kind.",
    )

    def as_workload(self) -> Workload:
        if self.prefix_tokens > self.input_tokens:
            raise PlanInputError(
                f"prefix_tokens ({self.prefix_tokens}) cannot exceed input_tokens ({self.input_tokens})"
            )
        return Workload(self.input_tokens, self.output_tokens, self.prefix_tokens, self.text_kind)


def parse_workload(value: PlannedWorkload | Mapping[str, Any] | None, path: str) -> PlannedWorkload | None:
    if value is None:
        return None
    if not isinstance(value, PlannedWorkload | Mapping):
        raise TypeError(
            f"{path}: workload must be a PlannedWorkload or a mapping, got {type(value).__name__}"
        )
    return parse_options_model(PlannedWorkload, value, path, "workload")


def scaling_levels(
    scaling: ScalingOptions | None, target_value: float | None, max_num_seqs: int
) -> tuple[list[int], list[float]]:
    """(concurrency levels, request rates) per instance at which the scaling policy holds the endpoint."""
    if scaling is not None and target_value is not None:
        if scaling.metric == "concurrent_requests":
            return [max(1, round(target_value))], []
        return [], [target_value / 60] if target_value > 0 else []  # invocations per instance per minute
    return sorted({1, max_num_seqs}), []


def predicted_levels(
    scope: Construct,
    resolved: ResolvedDeployment,
    declared: PlannedWorkload,
    workload: Workload,
    *,
    concurrency: Sequence[int],
    request_rates: Sequence[float],
    usd_per_hour: float | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The planner's levels (as `plan predict --format json` gives them) and its assumptions, scaled by
    any factor `plan calibrate` stored in the CDK context for this kind of deployment."""
    factors = read_factors({CONTEXT_KEY: scope.node.try_get_context(CONTEXT_KEY) or {}})
    plan = predict(
        resolved,
        workload,
        concurrency=concurrency,
        request_rates=request_rates,
        acceptance_length=declared.acceptance_length,
        factors=factors,
    )
    levels = [level_dict(lv, workload, usd_per_hour, plan.error_band) for lv in plan.levels]
    return levels, {**plan.assumptions, "notes": plan.notes}


def describe(
    levels: Sequence[dict[str, Any]], workload: Workload, assumptions: dict[str, Any], unit: str
) -> str:
    """One line per level for the synth-time info annotation."""

    def num(value: float | None, fmt: str) -> str:
        return "n/a" if value is None else format(value, fmt)

    lines = [
        f"planner: predicted per {unit} for {workload.input_tokens} input / {workload.output_tokens} output "
        f"tokens ({workload.text_kind}, {workload.prefix_tokens} shared prefix):"
    ]
    for lv in levels:
        load = (
            f"concurrency {lv['concurrency']}"
            if lv["request_rate"] is None
            else f"{lv['request_rate']:g} req/s"
        )
        if lv["bound"] == "overloaded":
            lines.append(f"  {load}: more than one {unit} serves ({'; '.join(lv.get('notes', []))})")
            continue
        band = lv["range"]["output_tokens_per_s"]
        dollars = lv["usd_per_million_output_tokens"]
        lines.append(
            f"  {load}: {num(lv['output_tokens_per_s'], ',.0f')} output tok/s "
            f"({num(band['low'], ',.0f')}-{num(band['high'], ',.0f')}), "
            f"{num(lv['output_tokens_per_s_per_request'], '.1f')} tok/s per request, "
            f"TTFT {num(lv['ttft_ms'], ',.0f')} ms, TPOT {num(lv['tpot_ms'], '.1f')} ms, "
            f"{'no price' if dollars is None else f'${dollars:.3f}'} per million output tokens; "
            f"bound: {lv['bound']}"
        )
    acceptance = assumptions.get("acceptance_length")
    if isinstance(acceptance, dict):
        lines.append(f"  assumed acceptance length {acceptance['value']} ({acceptance['source']})")
    lines += [f"  note: {note}" for note in assumptions.get("notes", [])]
    lines.append("  (speculative-infra plan predict gives the same figures; EndpointBenchmark measures them)")
    return "\n".join(lines)


class PlannedEndpoint:
    """Mixin for the endpoint constructs: the synth-time prediction, and the one EndpointBenchmark publishes."""

    resolved: ResolvedDeployment
    workload: PlannedWorkload | None
    planned_levels: list[dict[str, Any]] | None

    def _announce_plan(
        self, levels: tuple[list[int], list[float]], usd_per_hour: float | None, unit: str
    ) -> None:
        """Store the prediction for `self.workload` in `planned_levels` and state it as an info annotation
        (nothing without a declared workload)."""
        assert isinstance(self, Construct)
        self.planned_levels = None
        if self.workload is None:
            return
        concurrency, rates = levels
        if self.workload.concurrency is not None:
            concurrency, rates = list(self.workload.concurrency), []
        try:
            workload = self.workload.as_workload()
            planned, assumptions = predicted_levels(
                self,
                self.resolved,
                self.workload,
                workload,
                concurrency=concurrency,
                request_rates=rates,
                usd_per_hour=usd_per_hour,
            )
        except PlanInputError as err:  # the declared workload does not fit this deployment
            raise ValueError(f"{self.node.path}: workload: {err}") from None
        except PlanNotPossible as err:
            Annotations.of(self).add_warning_v2(
                "speculative-infra:plan", f"planner: no prediction for the declared workload: {err}"
            )
            return
        self.planned_levels = planned
        Annotations.of(self).add_info(describe(planned, workload, assumptions, unit))

    def benchmark_prediction(
        self,
        *,
        input_tokens: int,
        output_tokens: int,
        prefix_tokens: int,
        concurrency: Sequence[int],
        request_rates: Sequence[float],
        usd_per_hour: float | None,
    ) -> dict[str, Any] | str | None:
        """What the planner predicts for a benchmark's own levels, in the benchmark's level keys; a string
        says why there is none."""
        assert isinstance(self, Construct)
        declared = self.workload or PlannedWorkload(input_tokens=input_tokens, output_tokens=output_tokens)
        try:
            workload = Workload(input_tokens, output_tokens, prefix_tokens, declared.text_kind)
            planned, assumptions = predicted_levels(
                self,
                self.resolved,
                declared,
                workload,
                concurrency=concurrency,
                request_rates=request_rates,
                usd_per_hour=usd_per_hour,
            )
        except (PlanInputError, PlanNotPossible) as err:
            return str(err)
        return {"levels": [_benchmark_keys(lv) for lv in planned], "assumptions": assumptions}


def _benchmark_keys(lv: dict[str, Any]) -> dict[str, Any]:
    """A predicted level named as the benchmark names its measured figures (results.json levels)."""
    return {
        "concurrency": lv["concurrency"],
        "request_rate": lv["request_rate"],
        "output_throughput": lv["output_tokens_per_s"],
        "output_tokens_per_second_per_user": lv["output_tokens_per_s_per_request"],
        "median_ttft_ms": lv["ttft_ms"],
        "median_tpot_ms": lv["tpot_ms"],
        "median_e2el_ms": lv["e2e_latency_ms"],
        "cost_per_million_output_tokens": lv["usd_per_million_output_tokens"],
        "bound": lv["bound"],
    }


__all__ = [
    "PlannedEndpoint",
    "PlannedWorkload",
    "describe",
    "parse_workload",
    "predicted_levels",
    "scaling_levels",
]
