"""Read a DeploymentSpec from YAML, a mapping or a model, with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from speculative_infra.spec.models import DeploymentSpec


class SpecError(ValueError):
    """The spec cannot be read or is invalid. `problems` lists (field path, reason) pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str = "spec") -> None:
        self.problems = problems
        self.source = source
        lines = [
            f"{source}: {path}: {reason}" if path else f"{source}: {reason}" for path, reason in problems
        ]
        super().__init__("invalid deployment spec\n  " + "\n  ".join(lines))


def _field_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def parse_spec(data: DeploymentSpec | Mapping[str, Any], source: str = "spec") -> DeploymentSpec:
    if isinstance(data, DeploymentSpec):
        return data
    if not isinstance(data, Mapping):
        raise SpecError([("", f"expected a mapping of spec fields, got {type(data).__name__}")], source)
    try:
        return DeploymentSpec.model_validate(dict(data))
    except ValidationError as err:
        problems = []
        for e in err.errors():
            reason = e["msg"]
            if e["type"] == "extra_forbidden":
                reason = "unknown field"
            elif "input" in e and e["type"] != "missing":
                reason = f"{reason} (got {e['input']!r})"
            problems.append((_field_path(e["loc"]), reason))
        raise SpecError(problems, source) from None


def load_spec(path: str | Path) -> DeploymentSpec:
    """Load a YAML spec file. Raises SpecError (never a bare YAML or pydantic error)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise SpecError([("", f"cannot read file: {err.strerror or err}")], str(p)) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError([("", f"YAML syntax error at {where}{problem}")], str(p)) from None
    if data is None:
        raise SpecError([("", "the file is empty")], str(p))
    return parse_spec(data, str(p))
