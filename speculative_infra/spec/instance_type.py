"""The shape of a SageMaker instance type name, and the name a malformed one was probably meant to be."""

from __future__ import annotations

import re

INSTANCE_PATTERN = r"^ml\.[a-z0-9-]+\.[a-z0-9]+$"
INSTANCE_FORMAT = "ml.<family>.<size> in lower case, e.g. ml.g7e.2xlarge"
_INSTANCE = re.compile(INSTANCE_PATTERN)


def is_instance_type_name(value: str) -> bool:
    return _INSTANCE.match(value) is not None


def likely_instance_type(value: str) -> str | None:
    """The well-formed name `value` most likely means (spaces dropped, lower case, the `ml.` prefix added),
    or None when no such repair gives a name of the right shape. Whether the catalog knows it is SI100's
    question; the spec layer only knows the shape."""
    candidate = "".join(value.split()).lower()
    if not candidate.startswith("ml."):
        candidate = "ml." + candidate
    if candidate == value or not is_instance_type_name(candidate):
        return None
    return candidate


def instance_type_problem(value: str) -> str | None:
    """Why `value` is not an instance type name (the value, what is allowed, a suggestion), or None."""
    if is_instance_type_name(value):
        return None
    problem = f"{value!r} is not a SageMaker instance type name; allowed: {INSTANCE_FORMAT}"
    suggestion = likely_instance_type(value)
    return problem if suggestion is None else f"{problem}; did you mean {suggestion!r}?"
