"""Mean acceptance length of a draft (tokens per verification step per sequence, bonus token included).

A published figure holds for one k and one kind of text. To carry it to another k the planner assumes
one acceptance rate `a` per drafted position, conditional on the previous ones being accepted, so that
k drafts give 1 + a + a^2 + ... + a^k tokens; `a` is solved from the published figure. (vLLM's CI
baselines show the conditional rates falling slowly with position: 0.71 then 0.68 for the Llama-3.1-8B
head, so the carried figure is slightly optimistic for larger k.)
"""

from __future__ import annotations

from dataclasses import dataclass

from speculative_infra.catalog import Catalog
from speculative_infra.catalog.models import AcceptanceFigure


@dataclass(frozen=True)
class Acceptance:
    length: float  # at the deployment's k
    source: str  # where the figure comes from, as the prediction's assumptions print it


def length_for_k(published: float, published_k: int, k: int) -> float:
    """The acceptance length at `k` drafts, from one published at `published_k`."""
    if k == published_k:
        return published
    top = float(published_k + 1)
    target = min(max(published, 1.0), top - 1e-9)
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection on a in [0, 1): 1 + a + ... + a^k is increasing in a
        mid = (low + high) / 2
        if sum(mid**i for i in range(published_k + 1)) < target:
            low = mid
        else:
            high = mid
    rate = (low + high) / 2
    return sum(rate**i for i in range(k + 1))


def _pick(figures: list[AcceptanceFigure], text_kind: str) -> tuple[AcceptanceFigure, bool]:
    same_kind = [f for f in figures if f.text_kind == text_kind]
    if same_kind:
        return same_kind[0], True
    chat = [f for f in figures if f.text_kind == "chat"]
    return (chat or figures)[0], False


def draft_acceptance(
    catalog: Catalog,
    *,
    draft_id: str | None,
    method: str,
    k: int,
    text_kind: str,
    fitted: dict[str, list[AcceptanceFigure]] | None = None,
) -> Acceptance | None:
    """The acceptance the planner assumes: a figure fitted on measured runs of this draft (the calibration
    file or the user's own `plan calibrate`), else a published one, else the method's default; None when
    there is none (the caller asks for --acceptance-length)."""
    for origin, table in (("fitted", fitted or {}), ("published", catalog.acceptance.drafts)):
        if draft_id is None or draft_id not in table:
            continue
        figures = table[draft_id]
        figure, exact = _pick(figures, text_kind)
        length = length_for_k(figure.acceptance_length, figure.k, k)
        kind = figure.text_kind if exact else f"{figure.text_kind} (no {text_kind} figure)"
        return Acceptance(
            length, f"{origin}: {figure.acceptance_length} at k={figure.k} on {kind}, {figure.source}"
        )
    default = catalog.acceptance.method_defaults.get(method)
    if default is None:
        return None
    length = length_for_k(default.acceptance_length, default.k, k)
    return Acceptance(length, f"method default for {method} (no figure for this draft): {default.source}")
