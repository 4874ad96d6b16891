"""Options given as a pydantic model or a plain mapping, validated with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

OptionsT = TypeVar("OptionsT", bound=BaseModel)


def parse_options_model(
    cls: type[OptionsT], value: OptionsT | Mapping[str, Any] | None, path: str, what: str
) -> OptionsT:
    """``value`` as ``cls``; a bad field raises ValueError "<path>: <what>: <field>: <problem> (got ...)"."""
    if isinstance(value, cls):
        return value
    try:
        return cls.model_validate(dict(value or {}))
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        where = f"{field}: " if field else ""
        raise ValueError(f"{path}: {what}: {where}{first['msg']} (got {first.get('input')!r})") from None
