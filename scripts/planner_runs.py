"""The public measured runs the planner is fitted on and judged against (tests/golden/planner_measured_runs.json
and planner_article_runs.json), turned into deployment specs and workloads the planner reads.

The split is fixed here and nowhere else: runs of Qwen/Qwen3-32B in the benchmark suite are the fitting
set (listed by id in planner_calibration.yaml); every other clean run is held out.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from speculative_infra.planner.workload import Workload
from speculative_infra.resolve import ResolvedDeployment, resolve
from speculative_infra.spec import DeploymentSpec

REPO = Path(__file__).resolve().parent.parent
SUITE_FILE = REPO / "tests" / "golden" / "planner_measured_runs.json"
ARTICLE_FILE = REPO / "tests" / "golden" / "planner_article_runs.json"
FIT_MODEL = "Qwen/Qwen3-32B"
# Tokens of each suite dataset that every request shares (its system prompt), per the suite's README.
SHARED_PREFIX = {"multiturn_chat": 500, "tool_calling": 500, "long_context": 100, "document_correction": 478}
TEXT_KIND = {
    "multiturn_chat": "chat",
    "tool_calling": "tool_calling",
    "long_context": "long_context",
    "document_correction": "document_correction",
}
# The suite's g5 gpt-oss endpoint ran a self-built vLLM 0.10.2 image; the nearest catalog DLC stands in.
CONTAINER_STAND_INS = {"byoc vllm-gpt-oss v0.10.2": {"framework": "vllm", "version": "0.11.0"}}


@dataclass(frozen=True)
class MeasuredLevel:
    id: str
    source: str
    model_id: str
    instance_type: str
    concurrency: int
    workload: Workload
    spec: DeploymentSpec
    per_request_tokens_per_s: float
    output_tokens_per_s: float | None
    p50_e2e_ms: float | None
    speculative: bool

    @property
    def fitted(self) -> bool:
        return self.model_id == FIT_MODEL and not self.id.startswith("article/")

    def resolved(self) -> ResolvedDeployment:
        if self.id not in _RESOLVED:
            _RESOLVED[self.id] = resolve(self.spec)
        return _RESOLVED[self.id]


_RESOLVED: dict[str, ResolvedDeployment] = {}  # the fit resolves each level once, not once per step


def _container(text: str) -> dict[str, str] | None:
    if text in CONTAINER_STAND_INS:
        return CONTAINER_STAND_INS[text]
    match = re.match(r"vllm-dlc (\d+\.\d+\.\d+)", text)
    if match:
        return {"framework": "vllm", "version": match.group(1)}
    match = re.match(r"lmi v(\d+)", text)
    if match:
        return {"framework": "lmi", "version": match.group(1)}
    return None


def _spec(record: dict[str, Any]) -> DeploymentSpec | None:
    container = _container(str(record.get("container") or ""))
    if container is None or not record.get("tensor_parallel"):
        return None
    engine: dict[str, Any] = {
        "tensor_parallel_size": record["tensor_parallel"],
        "max_model_len": record.get("max_model_len") or 4096,
        "enable_prefix_caching": True,  # vLLM V1's default, on in every suite deployment (see the data file)
        "enable_chunked_prefill": True,
    }
    for key in ("max_num_seqs", "gpu_memory_utilization", "max_num_batched_tokens"):
        if record.get(key):
            engine[key] = record[key]
    spec: dict[str, Any] = {
        "region": record.get("region") or "us-east-1",
        "instance_type": record["instance_type"],
        "container": container,
        "model": {"id": record["model_id"]},
        "engine": engine,
    }
    speculative = record.get("speculative")
    if speculative:
        spec["speculative"] = {
            "method": speculative["method"],
            "model": speculative["draft_model"],
            "num_speculative_tokens": speculative.get("num_speculative_tokens") or 4,
        }
    return DeploymentSpec.model_validate(spec)


def _level(record: dict[str, Any]) -> MeasuredLevel | None:
    if record.get("flags"):
        return None
    per_request = (record.get("output_tokens_per_s_per_request") or {}).get("mean")
    if not per_request or not record.get("concurrency") or not record.get("mean_output_tokens"):
        return None
    spec = _spec(record)
    if spec is None:
        return None
    dataset = str(record.get("dataset"))
    input_tokens = round(record["mean_input_tokens"])
    workload = Workload(
        input_tokens=input_tokens,
        output_tokens=max(1, round(record["mean_output_tokens"])),
        prefix_tokens=min(SHARED_PREFIX.get(dataset, 0), input_tokens),
        text_kind=TEXT_KIND.get(dataset, "chat"),
    )
    return MeasuredLevel(
        id=record["id"],
        source=record["source"],
        model_id=record["model_id"],
        instance_type=record["instance_type"],
        concurrency=int(record["concurrency"]),
        workload=workload,
        spec=spec,
        per_request_tokens_per_s=float(per_request),
        output_tokens_per_s=record.get("output_tokens_per_s_effective"),
        p50_e2e_ms=(record.get("e2e_latency_ms") or {}).get("p50"),
        speculative=bool(record.get("speculative")),
    )


def measured_levels(path: Path = SUITE_FILE) -> Iterator[MeasuredLevel]:
    """Every clean level whose deployment the catalog can describe."""
    records = json.loads(path.read_text(encoding="utf-8"))["records"]
    for record in records:
        level = _level(record)
        if level is not None and level.resolved().model is not None:
            yield level


def fitting_levels() -> list[MeasuredLevel]:
    return [lv for lv in measured_levels() if lv.fitted]


def held_out_levels() -> list[MeasuredLevel]:
    held = [lv for lv in measured_levels() if not lv.fitted]
    if ARTICLE_FILE.exists():
        held += list(measured_levels(ARTICLE_FILE))
    return held


def absolute_errors(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """(median, p90) of |predicted / measured - 1| over (predicted, measured) pairs."""
    errors = sorted(abs(p / m - 1) for p, m in pairs if m)
    if not errors:
        return float("nan"), float("nan")
    p90 = errors[min(len(errors) - 1, round(0.9 * (len(errors) - 1)))]
    return statistics.median(errors), p90
