"""Hugging Face repository ids: `name` or `owner/name`, as the Hub accepts them.

The Hub's rule (huggingface_hub's `validate_repo_id`): each part is 1 to 96 letters, digits, `-`, `_`
or `.`, does not start or end with `-` or `.`, holds no `--` or `..`, and the name does not end in `.git`. An id becomes a URL path and a
cdk.context.json key, so anything else (a path segment, a space, a percent-encoding) is refused.
"""

from __future__ import annotations

import re

_PART = re.compile(r"[A-Za-z0-9_.-]{1,96}")
MAX_PART = 96


def repo_id_problem(value: str) -> str | None:
    """Why `value` is not a repository id (None when it is one)."""
    parts = value.split("/")
    if len(parts) > 2:
        return f"{value[:100]!r} has {len(parts) - 1} '/'; allowed: owner/name (one '/') or name"
    for part in parts:
        if not _PART.fullmatch(part):
            return (
                f"{value[:100]!r} is not a Hugging Face repository id; allowed: owner/name, each part 1 to "
                f"{MAX_PART} letters, digits, '-', '_' or '.'"
            )
        if part[0] in "-." or part[-1] in "-." or "--" in part or ".." in part:
            return (
                f"{value[:100]!r} is not a Hugging Face repository id; allowed: parts that do not start or end "
                "with '-' or '.' and hold no '--' or '..'"
            )
    if value.endswith(".git"):
        return f"{value[:100]!r} ends in '.git'; allowed: the repository's name without it"
    return None
