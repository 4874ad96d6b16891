"""The custom-resource event and its properties, parsed with clear errors (standard library only)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KNOWN_PROPERTIES = frozenset(
    {
        "ServiceToken",
        "Config",
        "ResultsBucket",
        "ResultsPrefix",
        "Gates",
        "FailOnError",
        "DeploymentId",
        "Prediction",  # the planner's figures for these levels, made at synth (optional)
        # The attributes the stack reads beyond the original set: a new one reruns the benchmark, so a
        # stack that starts reading it gets it from a fresh response, never from an older one.
        "Attributes",
    }
)


class PropertyError(ValueError):
    """A resource property is missing or malformed; the message names it."""


@dataclass(frozen=True)
class Gates:
    min_output_throughput: float | None = None
    max_p99_ttft_ms: float | None = None


@dataclass(frozen=True)
class BenchmarkProperties:
    config: dict[str, Any]
    results_bucket: str
    results_prefix: str
    gates: Gates
    fail_on_error: bool
    prediction: dict[str, Any] | None = None


@dataclass(frozen=True)
class BenchmarkEvent:
    request_type: str
    physical_resource_id: str | None
    properties: BenchmarkProperties


def _required(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value:
        raise PropertyError(f"ResourceProperties.{key}: required, got {value!r}")
    return value


def _json(raw: Mapping[str, Any], key: str) -> Any:
    text = _required(raw, key)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PropertyError(f"ResourceProperties.{key}: not JSON ({err.msg})") from None


def _optional_float(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise PropertyError(f"ResourceProperties.Gates.{key}: expected a number, got {value!r}") from None
    if number <= 0:
        raise PropertyError(f"ResourceProperties.Gates.{key}: must be > 0, got {number}")
    return number


def parse_properties(raw: Mapping[str, Any]) -> BenchmarkProperties:
    unknown = sorted(str(k) for k in raw if k not in KNOWN_PROPERTIES)
    if unknown:
        raise PropertyError(f"ResourceProperties: unknown keys {', '.join(unknown)}")
    config = _json(raw, "Config")
    if not isinstance(config, dict):
        raise PropertyError("ResourceProperties.Config: expected a JSON object")
    gates = _json(raw, "Gates") if raw.get("Gates") else {}
    if not isinstance(gates, dict):
        raise PropertyError("ResourceProperties.Gates: expected a JSON object")
    fail = str(raw.get("FailOnError", "false")).lower()
    if fail not in ("true", "false"):
        raise PropertyError(f"ResourceProperties.FailOnError: expected true or false, got {fail!r}")
    prefix = str(raw.get("ResultsPrefix", ""))
    prediction = _json(raw, "Prediction") if raw.get("Prediction") else None
    if prediction is not None and not (
        isinstance(prediction, dict) and isinstance(prediction.get("levels"), list)
    ):
        raise PropertyError("ResourceProperties.Prediction: expected a JSON object with a list of levels")
    return BenchmarkProperties(
        config=config,
        results_bucket=_required(raw, "ResultsBucket"),
        results_prefix=prefix if not prefix or prefix.endswith("/") else prefix + "/",
        gates=Gates(
            min_output_throughput=_optional_float(gates, "min_output_throughput"),
            max_p99_ttft_ms=_optional_float(gates, "max_p99_ttft_ms"),
        ),
        fail_on_error=fail == "true",
        prediction=prediction,
    )


def parse_event(event: Mapping[str, Any]) -> BenchmarkEvent:
    request_type = event.get("RequestType")
    if request_type not in ("Create", "Update", "Delete"):
        raise PropertyError(f"RequestType: expected Create, Update or Delete, got {request_type!r}")
    physical = event.get("PhysicalResourceId")
    raw = event.get("ResourceProperties") or {}
    if not isinstance(raw, Mapping):
        raise PropertyError("ResourceProperties: expected an object")
    return BenchmarkEvent(
        request_type=str(request_type),
        physical_resource_id=str(physical) if physical else None,
        properties=parse_properties(raw),
    )
