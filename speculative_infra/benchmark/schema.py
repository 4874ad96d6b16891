"""Validated dataclasses with explicit JSON conversion, on the standard library alone.

The engine runs inside AWS Lambda bundled as plain source files, where only the standard library
and boto3/botocore exist, so its configuration and result types are dataclasses built on
:class:`Record` rather than a third-party model library.

A :class:`Record` subclass is a ``@dataclass(kw_only=True)`` whose fields are checked against
their annotations when an instance is built:

* ``int`` (``bool`` is refused), ``float`` (an ``int`` is accepted and stored as ``float``; NaN and
  infinities are refused because JSON cannot carry them), ``str``, ``bool``, ``None``;
* ``Literal[...]``, ``X | None``, ``tuple[X, ...]`` and ``list[X]`` (either accepts a list or a
  tuple), ``dict[str, X]``;
* other records (an instance, or a mapping that :meth:`Record.from_dict` accepts) and unions of
  records that share a ``kind`` literal field, chosen by ``kind``.

Bounds come from field metadata: ``ge``/``gt``/``le`` on numbers, ``min_length``/``max_length`` on
strings (``field(default=1, metadata={"ge": 1})``). Any failure raises :class:`ConfigError`
naming the field (a dotted path for nested data), the value and what is allowed.

:meth:`Record.to_dict` returns JSON-safe data (tuples become lists, nested records dicts) in field
order; :meth:`Record.from_dict` rejects unknown and missing keys and validates the rest, so
``Cls.from_dict(json.loads(json.dumps(obj.to_dict()))) == obj``.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, Literal, Self, Union, get_args, get_origin, get_type_hints

__all__ = ["MISSING", "ConfigError", "Record", "validate_fields"]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()
"""``ConfigError.value`` of a required key that is absent."""


def _short_repr(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ConfigError(ValueError):
    """Invalid configuration, results or state data.

    ``field`` is the offending field (``"endpoint_name"``; a path such as
    ``"load.concurrency_levels"`` or ``"result.levels[0].completed"`` for nested data; ``""`` for
    the whole document), ``value`` the value that was refused (:data:`MISSING` for an absent
    required key) and ``allowed`` what the field accepts. ``str(error)`` is
    ``"<field>: <reason>"``; ``reason`` is the part after the field name.
    """

    def __init__(self, field: str, value: object, allowed: str, *, message: str | None = None) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        self._message = message
        super().__init__(f"{field}: {self.reason}" if field else self.reason)

    @property
    def reason(self) -> str:
        if self._message is not None:
            return self._message
        if self.value is MISSING:
            return f"required field is missing (expected {self.allowed})"
        return f"expected {self.allowed}, got {_short_repr(self.value)}"

    def within(self, prefix: str) -> ConfigError:
        """The same error with its field placed under ``prefix`` (an enclosing field or index)."""
        if not self.field:
            field = prefix
        elif self.field.startswith("["):
            field = prefix + self.field
        else:
            field = f"{prefix}.{self.field}"
        return ConfigError(field, self.value, self.allowed, message=self._message)

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuild_error, (self.field, self.value, self.allowed, self._message)


def _rebuild_error(field: str, value: object, allowed: str, message: str | None) -> ConfigError:
    return ConfigError(field, value, allowed, message=message)


_Convert = Callable[[Any, str], Any]
"""Checks (and normalises) one value; the string is the field path used in errors."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    names: tuple[str, ...]
    required: frozenset[str]
    converters: tuple[tuple[str, _Convert], ...]


_PLANS: dict[type, _Plan] = {}


def _plan(cls: type) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is None:
        # Compiled on first use: annotations are strings (PEP 563) that may name classes defined
        # after this one, so they can only be resolved once every module is loaded.
        hints = get_type_hints(cls)
        fields = dataclasses.fields(cls)
        plan = _Plan(
            names=tuple(f.name for f in fields),
            required=frozenset(
                f.name
                for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ),
            converters=tuple((f.name, _compile(hints[f.name], f.metadata)[0]) for f in fields),
        )
        _PLANS[cls] = plan
    return plan


def validate_fields(obj: Record) -> None:
    """Check every field of ``obj`` against its annotation, storing normalised values in place."""
    for name, convert in _plan(type(obj)).converters:
        value = getattr(obj, name)
        checked = convert(value, name)
        if checked is not value:
            object.__setattr__(obj, name, checked)  # also works on frozen dataclasses


_PLAIN_TYPES = frozenset({int, str, bool, type(None)})


def _jsonable(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        kinds = set(map(type, value))
        if kinds <= _PLAIN_TYPES or (kinds <= {float, int} and all(map(math.isfinite, value))):
            return list(value)  # fast path for the long lists (inter-token latencies of a request)
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return None  # only reachable by assigning to a field after validation; JSON has no NaN
    return value


class Record:
    """Base of the engine's validated dataclasses (see the module documentation)."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        validate_fields(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe ``dict`` of every field, in declaration order (``None`` stays ``None``)."""
        return {name: _jsonable(getattr(self, name)) for name in _plan(type(self)).names}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build and validate from :meth:`to_dict` output (e.g. after a JSON round trip).

        Raises :class:`ConfigError` for a key that is not a field, a missing required key, or a
        value of the wrong type or out of range.
        """
        plan = _plan(cls)
        if not isinstance(data, Mapping):
            raise ConfigError("", data, f"a JSON object with the fields of {cls.__name__}")
        for key in data:
            if key not in plan.names:
                raise ConfigError(
                    str(key),
                    data[key],
                    f"one of the fields {', '.join(plan.names)}",
                    message=f"unknown field of {cls.__name__} (allowed: {', '.join(plan.names)})",
                )
        for f in dataclasses.fields(cls):
            if f.name in plan.required and f.name not in data:
                raise ConfigError(f.name, MISSING, _compile(get_type_hints(cls)[f.name], f.metadata)[1])
        return cls(**data)


# --- compiling an annotation into a converter -------------------------------------------------


def _number(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _bounds(meta: Mapping[str, Any]) -> str:
    parts = []
    if "ge" in meta:
        parts.append(f">= {_number(meta['ge'])}")
    if "gt" in meta:
        parts.append(f"> {_number(meta['gt'])}")
    if "le" in meta:
        parts.append(f"<= {_number(meta['le'])}")
    return (" " + " and ".join(parts)) if parts else ""


def _check_bounds(value: float, path: str, meta: Mapping[str, Any], allowed: str) -> None:
    if (
        ("ge" in meta and not value >= meta["ge"])
        or ("gt" in meta and not value > meta["gt"])
        or ("le" in meta and not value <= meta["le"])
    ):
        raise ConfigError(path, value, allowed)


def _int(meta: Mapping[str, Any]) -> tuple[_Convert, str]:
    allowed = "an integer" + _bounds(meta)

    def convert(value: Any, path: str) -> Any:
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise ConfigError(path, value, allowed)
        _check_bounds(value, path, meta, allowed)
        return value

    return convert, allowed


def _float(meta: Mapping[str, Any]) -> tuple[_Convert, str]:
    allowed = "a finite number" + _bounds(meta)

    def convert(value: Any, path: str) -> Any:
        if type(value) is not float:
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ConfigError(path, value, allowed)
            value = float(value)
        if not math.isfinite(value):
            raise ConfigError(path, value, allowed)
        _check_bounds(value, path, meta, allowed)
        return value

    return convert, allowed


def _str(meta: Mapping[str, Any]) -> tuple[_Convert, str]:
    low, high = meta.get("min_length"), meta.get("max_length")
    allowed = "a string"
    if low is not None and high is not None:
        allowed += f" of {low} to {high} characters"
    elif low is not None:
        allowed += f" of at least {low} characters"
    elif high is not None:
        allowed += f" of at most {high} characters"

    def convert(value: Any, path: str) -> Any:
        if not isinstance(value, str):
            raise ConfigError(path, value, allowed)
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            raise ConfigError(path, value, allowed)
        return value

    return convert, allowed


def _bool(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise ConfigError(path, value, "true or false")
    return value


def _literal(choices: tuple[Any, ...]) -> tuple[_Convert, str]:
    allowed = "one of " + ", ".join(repr(c) for c in choices)

    def convert(value: Any, path: str) -> Any:
        for choice in choices:
            if type(value) is type(choice) and value == choice:
                return choice
        raise ConfigError(path, value, allowed)

    return convert, allowed


def _record(cls: type[Record]) -> tuple[_Convert, str]:
    allowed = f"a {cls.__name__} object"

    def convert(value: Any, path: str) -> Any:
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(path, value, allowed)
        try:
            return cls.from_dict(value)
        except ConfigError as err:
            raise err.within(path) from None

    return convert, allowed


def _tagged_union(classes: tuple[type[Record], ...]) -> tuple[_Convert, str]:
    by_kind: dict[str, type[Record]] = {}
    for cls in classes:
        kind = cls.__dataclass_fields__["kind"].default
        if not isinstance(kind, str):
            raise TypeError(f"{cls.__name__}.kind needs a string default to take part in a union")
        by_kind[kind] = cls
    allowed = " or ".join(f"a {cls.__name__} object" for cls in classes)
    kinds = ", ".join(repr(k) for k in by_kind)

    def convert(value: Any, path: str) -> Any:
        if isinstance(value, classes):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(path, value, allowed)
        kind_path = f"{path}.kind"
        if "kind" not in value:
            raise ConfigError(kind_path, MISSING, f"one of {kinds}")
        cls = by_kind.get(value["kind"]) if isinstance(value["kind"], str) else None
        if cls is None:
            raise ConfigError(kind_path, value["kind"], f"one of {kinds}")
        try:
            return cls.from_dict(value)
        except ConfigError as err:
            raise err.within(path) from None

    return convert, allowed


def _optional(inner: _Convert, inner_allowed: str) -> tuple[_Convert, str]:
    allowed = f"null or {inner_allowed}"

    def convert(value: Any, path: str) -> Any:
        if value is None:
            return None
        try:
            return inner(value, path)
        except ConfigError as err:
            if err.field != path:
                raise  # about something inside the value (an item, a nested field)
            raise ConfigError(path, value, allowed) from None

    return convert, allowed


def _sequence(
    item: _Convert, build: type[list[Any]] | type[tuple[Any, ...]], plain: type | None
) -> tuple[_Convert, str]:
    """``plain``: an item type that needs no conversion or bound check, tested in one pass."""
    allowed = "a list"
    finite = plain is float

    def convert(value: Any, path: str) -> Any:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(path, value, allowed)
        if (
            plain is not None
            and set(map(type, value)) <= {plain}
            and (not finite or all(map(math.isfinite, value)))
        ):
            return build(value)  # fast path for the long lists (inter-token latencies of a request)
        return build(item(v, f"{path}[{i}]") for i, v in enumerate(value))

    return convert, allowed


def _mapping(item: _Convert) -> tuple[_Convert, str]:
    allowed = "an object with string keys"

    def convert(value: Any, path: str) -> Any:
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise ConfigError(path, value, allowed)
        return {k: item(v, f"{path}[{k!r}]") for k, v in value.items()}

    return convert, allowed


def _plain(tp: Any, meta: Mapping[str, Any]) -> type | None:
    """``tp`` when a value of exactly that type is valid as it is (no bounds, no conversion)."""
    return tp if tp in (int, float, str) and not meta else None


def _compile(tp: Any, meta: Mapping[str, Any]) -> tuple[_Convert, str]:
    origin = get_origin(tp)
    if origin is Union or origin is types.UnionType:
        args = get_args(tp)
        rest = tuple(a for a in args if a is not type(None))
        if len(rest) == 1:
            converter = _compile(rest[0], meta)
        elif all(isinstance(a, type) and issubclass(a, Record) for a in rest):
            converter = _tagged_union(rest)
        else:
            raise TypeError(f"unsupported union {tp!r}")
        return _optional(*converter) if len(rest) < len(args) else converter
    if origin is Literal:
        return _literal(get_args(tp))
    if origin is tuple:
        args = get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"only tuple[X, ...] is supported, not {tp!r}")
        return _sequence(_compile(args[0], meta)[0], tuple, _plain(args[0], meta))
    if origin is list:
        item = get_args(tp)[0]
        return _sequence(_compile(item, meta)[0], list, _plain(item, meta))
    if origin is dict:
        key, value = get_args(tp)
        if key is not str:
            raise TypeError(f"only dict[str, X] is supported, not {tp!r}")
        return _mapping(_compile(value, meta)[0])
    if tp is bool:
        return _bool, "true or false"
    if tp is int:
        return _int(meta)
    if tp is float:
        return _float(meta)
    if tp is str:
        return _str(meta)
    if isinstance(tp, type) and issubclass(tp, Record):
        return _record(tp)
    raise TypeError(f"unsupported field type {tp!r}")
