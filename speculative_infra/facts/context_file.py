"""Fetched facts in cdk.context.json: one key per repository, as CDK caches its own context lookups."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from speculative_infra.facts.hub_config import FetchedFacts, problems
from speculative_infra.safe_files import MAX_CONTEXT_BYTES, InputFileError, read_json, write_text

CONTEXT_PREFIX = "speculative-infra:hf-facts:"
CONTEXT_FILE = "cdk.context.json"


class ContextFileError(ValueError):
    """cdk.context.json is unreadable, or one of our keys does not hold facts."""


def context_key(repo_id: str) -> str:
    return f"{CONTEXT_PREFIX}{repo_id}"


def read_context_file(path: Path) -> dict[str, Any]:
    """The file's keys; an absent file is an empty context."""
    if not os.path.lexists(path):
        return {}
    try:
        data = read_json(path, max_bytes=MAX_CONTEXT_BYTES, what="context file")
    except InputFileError as err:
        raise ContextFileError(str(err)) from None
    if not isinstance(data, dict):
        raise ContextFileError(f"{path}: expected a JSON object")
    return data


def facts_from_context(context: Mapping[str, Any]) -> dict[str, FetchedFacts]:
    """Every fetched repository in a context mapping, by repository id."""
    found: dict[str, FetchedFacts] = {}
    for key, value in context.items():
        if not key.startswith(CONTEXT_PREFIX):
            continue
        try:
            facts = FetchedFacts.model_validate(value)
        except ValidationError as err:
            raise ContextFileError(
                f"context key {key!r} does not hold fetched facts ({problems(err)[:500]}); "
                f"run `speculative-infra facts fetch {key.removeprefix(CONTEXT_PREFIX)}` again"
            ) from None
        found[facts.repo_id] = facts
    return found


def write_facts(path: Path, facts: FetchedFacts) -> str:
    """Add or replace the repository's key, keeping every other key; returns the key."""
    context = read_context_file(path)
    key = context_key(facts.repo_id)
    context[key] = facts.model_dump(mode="json", exclude_none=True)
    try:
        write_text(path, json.dumps(context, indent=2, sort_keys=True) + "\n", what="context file")
    except InputFileError as err:
        raise ContextFileError(str(err)) from None
    return key
