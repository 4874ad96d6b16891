"""The fitted constants (planner_calibration.yaml, written by scripts/fit_planner.py) and the factors a
user's own benchmark results add (`plan calibrate`, stored in cdk.context.json)."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from speculative_infra.catalog.models import AcceptanceFigure
from speculative_infra.facts.context_file import read_context_file
from speculative_infra.planner.performance import Efficiency
from speculative_infra.safe_files import write_text

CONTEXT_KEY = "speculative-infra:planner-calibration"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FittedRun(_Strict):
    id: str
    source: str


class GpuEfficiency(_Strict):
    bandwidth: float = Field(gt=0, le=1)
    compute: float = Field(gt=0, le=1)
    prefill: float = Field(gt=0, le=1)


class GlobalConstants(_Strict):
    bandwidth: float = Field(gt=0, le=1)
    compute: float = Field(gt=0, le=1)
    prefill: float = Field(gt=0, le=1)
    roofline_exponent: float = Field(ge=1, le=50)
    link: float = Field(gt=0, le=1)
    layer_overhead_us: float = Field(ge=0)
    draft_pass_overhead_ms: float = Field(ge=0)
    allreduce_latency_us: float = Field(ge=0)
    request_overhead_ms: float = Field(ge=0)


class ErrorBand(_Strict):
    """measured / predicted on the fitted runs: the 10th and 90th percentiles, for the `range` band."""

    low: float = Field(gt=0)
    high: float = Field(gt=0)


class PlannerCalibration(_Strict):
    description: str
    fitted_on: list[FittedRun]
    constants: GlobalConstants
    per_gpu: dict[str, GpuEfficiency]
    acceptance: dict[str, list[AcceptanceFigure]]  # fitted per draft, where no published figure exists
    error_band: dict[str, ErrorBand]

    def efficiency(self, gpu_name: str) -> tuple[Efficiency, bool]:
        """The constants for one GPU; False when it had no fitted runs (the mean of the fitted GPUs)."""
        c = self.constants
        gpu = self.per_gpu.get(gpu_name)
        fitted = gpu is not None
        if gpu is None:
            gpu = GpuEfficiency(bandwidth=c.bandwidth, compute=c.compute, prefill=c.prefill)
        return (
            Efficiency(
                bandwidth=gpu.bandwidth,
                compute=gpu.compute,
                prefill=gpu.prefill,
                roofline_exponent=c.roofline_exponent,
                link=c.link,
                layer_overhead_s=c.layer_overhead_us / 1e6,
                draft_pass_overhead_s=c.draft_pass_overhead_ms / 1e3,
                allreduce_latency_s=c.allreduce_latency_us / 1e6,
                request_overhead_s=c.request_overhead_ms / 1e3,
            ),
            fitted,
        )


CALIBRATION_FILE = "planner_calibration.yaml"


@functools.cache
def load_calibration() -> PlannerCalibration:
    text = (resources.files("speculative_infra.planner") / CALIBRATION_FILE).read_text(encoding="utf-8")
    return PlannerCalibration.model_validate(yaml.safe_load(text))


# --- a user's own deployments (plan calibrate) ---------------------------------------------------------


@dataclass(frozen=True)
class MeasuredFactor:
    """measured / predicted output tokens/s of one deployment kind, from the user's benchmark results."""

    key: str
    factor: float
    levels: int
    source: str


def factor_key(gpu_name: str, container: str, model_id: str, draft: str | None) -> str:
    return "|".join([gpu_name, container, model_id, draft or "no-draft"])


def read_factors(context: dict[str, Any]) -> dict[str, MeasuredFactor]:
    entries = context.get(CONTEXT_KEY) or {}
    if not isinstance(entries, dict):
        raise ValueError(f"context key {CONTEXT_KEY!r} must map deployment keys to factors")
    out: dict[str, MeasuredFactor] = {}
    for key, value in entries.items():
        if not isinstance(value, dict) or not isinstance(value.get("factor"), int | float):
            raise ValueError(f"context key {CONTEXT_KEY!r}: entry {key!r} has no numeric factor")
        factor = float(value["factor"])
        if not 0.05 <= factor <= 20:
            raise ValueError(f"context key {CONTEXT_KEY!r}: factor {factor} of {key!r} is outside 0.05-20")
        levels = value.get("levels", 0)
        if isinstance(levels, bool) or not isinstance(levels, int) or not 0 <= levels <= 1_000_000:
            raise ValueError(
                f"context key {CONTEXT_KEY!r}: levels {levels!r} of {key!r} is not a count 0-1000000"
            )
        out[key] = MeasuredFactor(key, factor, levels, str(value.get("source", "")))
    return out


def write_factor(path: Path, factor: MeasuredFactor) -> None:
    context = read_context_file(path)  # bounded, a regular file: ContextFileError (a ValueError) otherwise
    entries = context.setdefault(CONTEXT_KEY, {})
    if not isinstance(entries, dict):
        raise ValueError(f"{path}: context key {CONTEXT_KEY!r} does not hold an object")
    entries[factor.key] = {
        "factor": round(factor.factor, 4),
        "levels": factor.levels,
        "source": factor.source,
    }
    write_text(path, json.dumps(context, indent=2, sort_keys=True) + "\n", what="context file")
