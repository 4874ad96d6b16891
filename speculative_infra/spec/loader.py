"""Read a DeploymentSpec from YAML, a mapping or a model, with errors that name the field."""

from __future__ import annotations

import difflib
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from speculative_infra.safe_files import MAX_SPEC_BYTES, InputFileError, read_text
from speculative_infra.spec.bounded_yaml import BoundedYamlError, load_bounded_yaml
from speculative_infra.spec.models import API_INT_MAX, DeploymentSpec


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


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The spec model that holds the field at `loc` (None inside free-form mappings)."""
    model: type[BaseModel] = DeploymentSpec
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        inner = [a for a in (field.annotation, *typing.get_args(field.annotation)) if isinstance(a, type)]
        inner += [
            a
            for arg in typing.get_args(field.annotation)
            for a in typing.get_args(arg)
            if isinstance(a, type)
        ]
        nested = next((a for a in inner if issubclass(a, BaseModel)), None)
        if nested is None:
            return None
        model = nested
    return model


# Errors whose message already names the value (the spec's own validators).
_NAMES_ITS_VALUE = frozenset(
    {
        "missing",
        "instance_type_name",
        "model_facts",
        "free_value",
        "schedule_capacity",
        "time_zone",
        "repo_id",
    }
)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:60] + f"... ({len(text)} characters)"


def _reason(e: Any) -> str:
    loc = tuple(e["loc"])
    if e["type"] == "extra_forbidden":
        model = _model_at(loc)
        close = difflib.get_close_matches(str(loc[-1]), list(model.model_fields) if model else [], n=1)
        return f"unknown field; did you mean {close[0]!r}?" if close else "unknown field"
    reason = str(e["msg"])
    if e["type"] == "less_than_equal" and (e.get("ctx") or {}).get("le") == API_INT_MAX:
        reason += " (the largest count an AWS API takes: a 32-bit integer)"
    if "input" in e and e["type"] not in _NAMES_ITS_VALUE:
        reason = f"{reason} (got {_shown(e['input'])})"
    if e["type"] == "string_type" and isinstance(e.get("input"), float) and str(loc[-1]).endswith("version"):
        # YAML reads `version: 0.16` as the number 0.16 (and 0.10 as 0.1): a version must be quoted.
        reason += '; quote it in YAML, e.g. version: "0.16.0"'
    return reason


def parse_spec(data: DeploymentSpec | Mapping[str, Any], source: str = "spec") -> DeploymentSpec:
    if isinstance(data, DeploymentSpec):
        return data
    if not isinstance(data, Mapping):
        raise SpecError([("", f"expected a mapping of spec fields, got {type(data).__name__}")], source)
    try:
        return DeploymentSpec.model_validate(dict(data))
    except ValidationError as err:
        problems = [(_field_path(e["loc"]), _reason(e)) for e in err.errors()]
        raise SpecError(problems, source) from None


def load_spec(path: str | Path) -> DeploymentSpec:
    """Load a YAML spec file. Raises SpecError (never a bare YAML, pydantic or OS error)."""
    p = Path(path)
    try:
        text = read_text(p, max_bytes=MAX_SPEC_BYTES, what="spec")
    except InputFileError as err:
        raise SpecError([("", err.problem)], str(p)) from None
    try:
        data = load_bounded_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SpecError([("", f"YAML syntax error at {where}{problem}")], str(p)) from None
    except BoundedYamlError as err:
        raise SpecError([("", f"{err}; a spec is a page of plain YAML")], str(p)) from None
    if data is None:
        raise SpecError([("", "the file is empty")], str(p))
    return parse_spec(data, str(p))
