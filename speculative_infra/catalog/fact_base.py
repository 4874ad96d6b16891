"""The base of every catalog fact: frozen, no unknown keys, no NaN; `Sourced` facts say where they come from
(`source`) and how sure we are of them (`confidence`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Confidence = Literal["verified", "reported", "unverified"]


class Fact(BaseModel):
    # No NaN or infinity in any fact: a catalog typo or a hand-edited cdk.context.json must not reach the
    # memory model, whose comparisons NaN would pass silently.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class Sourced(Fact):
    source: str
    confidence: Confidence


def version_tuple(version: str) -> tuple[int, ...]:
    """'12.9' -> (12, 9); '0.15.1' -> (0, 15, 1). Comparisons of dotted versions go through this."""
    return tuple(int(part) for part in version.split("."))
