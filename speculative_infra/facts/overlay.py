"""The catalog plus fetched facts: what the resolver looks models and drafts up in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel

from speculative_infra.catalog import Catalog
from speculative_infra.facts.hub_config import FetchedFacts

T = TypeVar("T", bound=BaseModel)


def _merged(known: T | None, fetched: T) -> T:
    # Fetched facts describe the revision the user deploys; the catalog fills what they leave out
    # (a draft's target, which only some draft configs name).
    if known is None:
        return fetched
    # Validated again, so that nested facts (RoPE parameters, a draft's config lengths) stay models.
    merged = {**known.model_dump(), **fetched.model_dump(exclude_none=True, exclude={"confidence"})}
    return type(known).model_validate(merged)


def catalog_with_facts(catalog: Catalog, fetched: Mapping[str, FetchedFacts]) -> Catalog:
    if not fetched:
        return catalog
    models = dict(catalog.models)
    drafts = dict(catalog.drafts)
    for repo_id, facts in fetched.items():
        if facts.model is not None:
            models[repo_id] = _merged(models.get(repo_id), facts.model)
        if facts.draft is not None:
            drafts[repo_id] = _merged(drafts.get(repo_id), facts.draft)
    return catalog.model_copy(update={"models": models, "drafts": drafts})
