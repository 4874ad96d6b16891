"""What a deployment is asked to serve: token counts per request, the shared prefix, the kind of text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import get_args

from speculative_infra.catalog.models import TextKind

TEXT_KINDS: tuple[str, ...] = get_args(TextKind)


class PlanInputError(ValueError):
    """A workload or load level the planner cannot use; the message names the argument."""


def positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise PlanInputError(f"{name} must be a positive integer, got {value!r}")
    if value != int(value) or value < 1:
        raise PlanInputError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def positive_float(name: str, value: object) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise PlanInputError(f"{name} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Workload:
    """Mean tokens per request; `prefix_tokens` of the input are the same for every request (a system
    prompt), which prefix caching serves from the KV cache after the first request."""

    input_tokens: int
    output_tokens: int
    prefix_tokens: int = 0
    text_kind: str = "chat"

    def __post_init__(self) -> None:
        positive_int("--input-tokens", self.input_tokens)
        positive_int("--output-tokens", self.output_tokens)
        if (
            isinstance(self.prefix_tokens, bool)
            or not isinstance(self.prefix_tokens, int)
            or self.prefix_tokens < 0
        ):
            raise PlanInputError(f"--prefix-tokens must be an integer >= 0, got {self.prefix_tokens!r}")
        if self.prefix_tokens > self.input_tokens:
            raise PlanInputError(
                f"--prefix-tokens ({self.prefix_tokens}) cannot exceed --input-tokens ({self.input_tokens})"
            )
        if self.text_kind not in TEXT_KINDS:
            raise PlanInputError(
                f"--text-kind must be one of {', '.join(TEXT_KINDS)}, got {self.text_kind!r}"
            )

    @property
    def sequence_tokens(self) -> int:
        return self.input_tokens + self.output_tokens
