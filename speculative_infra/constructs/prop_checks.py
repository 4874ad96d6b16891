"""Checks of construct props, run before any jsii call receives them (docs/security.md, "Hostile input").

A prop of the wrong type or an impossible value raises TypeError (wrong type) or ValueError (right type,
impossible value) naming the construct path, the prop, what it got and what it takes. They run at the top
of each construct's ``__init__``: a value jsii cannot serialize (NaN, infinity) would otherwise stop the
jsii kernel process, and with it every later CDK call in the Python process; a wrong type would surface
as an AttributeError deep inside CDK, or as a template with an impossible value.

jsii interfaces (iam.IRole, kms.IKey, ...) are Protocols that are not runtime-checkable, so
``isinstance(value, iam.IRole)`` raises TypeError; an imported resource (``Role.from_role_arn``) is a
jsii ``InterfaceDynamicProxy``. `require_jsii` checks instead, statically (no kernel call), that the value
has the members the constructs use.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aws_cdk import Duration, Token
from constructs import Construct
from jsii._reference_map import InterfaceDynamicProxy  # what jsii returns for an imported resource

T = TypeVar("T")

_MAX_SHOWN = 80


def short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def shown(value: Any) -> str:
    """A value of the wrong type as an error message shows it: its type and its repr (shortened)."""
    return f"{type(value).__name__} {short_repr(value)}"


def construct_path(scope: Construct, construct_id: str) -> str:
    """The path a construct will have, known before it is created (so props are checked first)."""
    try:
        parent = scope.node.path
    except Exception:  # not a construct: jsii reports it when the construct is created
        parent = ""
    return f"{parent}/{construct_id}" if parent else str(construct_id)


class PropTypeError(TypeError, ValueError):
    """A prop of the wrong type. A TypeError, and a ValueError too: a caller that caught the ValueError
    some of these props raised before (a target that is no endpoint) still catches it."""


def wrong_type(where: str, prop: str, takes: str, value: Any) -> PropTypeError:
    """The error for a prop of the wrong type: "<path>: <prop> must be <takes>, got <type> <repr>"."""
    return PropTypeError(f"{where}: {prop} must be {takes}, got {shown(value)}")


def _value_error(where: str, prop: str, takes: str, value: Any) -> ValueError:
    return ValueError(f"{where}: {prop} is {short_repr(value)}; allowed: {takes}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- scalars --------------------------------------------------------------------------------------


def require_str(value: Any, prop: str, where: str, *, optional: bool = True, non_empty: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise wrong_type(where, prop, "a string" + (" or None" if optional else ""), value)
    if non_empty and not value:
        raise _value_error(where, prop, "a non-empty string", value)


def require_bool(value: Any, prop: str, where: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, bool):
        raise wrong_type(where, prop, "True or False" + (" or None" if optional else ""), value)


def require_int(
    value: Any,
    prop: str,
    where: str,
    *,
    low: int | None = None,
    high: int | None = None,
    optional: bool = False,
) -> None:
    """An int (not a bool, not a float) within [low, high]."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(where, prop, "an integer" + (" or None" if optional else ""), value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise _value_error(where, prop, _range(low, high), value)


def finite_number(
    value: Any,
    prop: str,
    where: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    optional: bool = False,
) -> None:
    """A finite int or float (not a bool, NaN or infinity) within the bounds (open or closed)."""
    if value is None and optional:
        return
    if not _is_number(value):
        raise wrong_type(where, prop, "a number" + (" or None" if optional else ""), value)
    if not math.isfinite(value):
        raise _value_error(
            where, prop, "a finite number (" + _range(low, high, low_open, high_open) + ")", value
        )
    below = low is not None and (value <= low if low_open else value < low)
    above = high is not None and (value >= high if high_open else value > high)
    if below or above:
        raise _value_error(where, prop, _range(low, high, low_open, high_open), value)


def _num(value: float) -> str:
    """A bound or a number of seconds: an integer as written (2419200), else as %g."""
    if math.isfinite(value) and float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:g}"


def _range(low: float | None, high: float | None, low_open: bool = False, high_open: bool = False) -> str:
    if low is None and high is None:
        return "any finite number"
    if high is None:
        assert low is not None
        return f"more than {_num(low)}" if low_open else f"{_num(low)} or more"
    if low is None:
        return f"less than {_num(high)}" if high_open else f"{_num(high)} or less"
    if not low_open and not high_open:
        return f"{_num(low)} to {_num(high)}"
    return f"{'more than' if low_open else 'at least'} {_num(low)} and {'less than' if high_open else 'at most'} {_num(high)}"


def require_choice(
    value: Any, choices: Sequence[str], prop: str, where: str, *, optional: bool = False
) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise wrong_type(where, prop, "one of " + ", ".join(choices), value)
    if value not in choices:
        raise _value_error(where, prop, ", ".join(choices), value)


def require_duration(
    value: Any,
    prop: str,
    where: str,
    *,
    low_seconds: float | None = None,
    high_seconds: float | None = None,
    optional: bool = True,
) -> None:
    """An aws_cdk.Duration (not a number of seconds) within [low_seconds, high_seconds]."""
    if value is None and optional:
        return
    if not isinstance(value, Duration):
        raise wrong_type(where, prop, "an aws_cdk.Duration (e.g. Duration.minutes(10))", value)
    seconds = value.to_seconds()
    if not math.isfinite(seconds) or (
        (low_seconds is not None and seconds < low_seconds)
        or (high_seconds is not None and seconds > high_seconds)
    ):
        raise ValueError(
            f"{where}: {prop} is {_num(seconds)} s; allowed: {_range(low_seconds, high_seconds)} s"
        )


# --- structures -----------------------------------------------------------------------------------


def require_instance(
    value: Any, types: type | tuple[type, ...], prop: str, where: str, *, optional: bool = True
) -> None:
    if value is None and optional:
        return
    if not isinstance(value, types):
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise wrong_type(where, prop, f"a {names}" + (" or None" if optional else ""), value)


def require_mapping(
    value: Any, prop: str, where: str, *, models: tuple[type, ...] = (), optional: bool = True
) -> None:
    """A mapping (or an instance of one of `models`) whose numbers are all finite, at any depth."""
    if value is None and optional:
        return
    if models and isinstance(value, models):
        return
    if not isinstance(value, Mapping):
        takes = " or ".join([*(f"a {m.__name__}" for m in models), "a mapping"])
        raise wrong_type(where, prop, takes, value)
    refuse_non_finite(value, prop, where)


def require_mapping_of_str(value: Any, prop: str, where: str, *, optional: bool = True) -> None:
    """A mapping of str to str (tags, container environment)."""
    if value is None and optional:
        return
    if not isinstance(value, Mapping):
        raise wrong_type(where, prop, "a mapping of strings to strings", value)
    for key, item in value.items():
        if not isinstance(key, str):
            raise wrong_type(where, f"{prop} key", "a string", key)
        if not isinstance(item, str):
            raise wrong_type(where, f"{prop}[{key!r}]", "a string", item)


def require_sequence(
    value: Any, prop: str, where: str, check: Callable[[Any, str], None], *, optional: bool = True
) -> None:
    """A list or tuple (not a string) whose items pass `check(item, "<prop>[i]")`."""
    if value is None and optional:
        return
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise wrong_type(where, prop, "a list", value)
    for index, item in enumerate(value):
        check(item, f"{prop}[{index}]")


def refuse_non_finite(value: Any, prop: str, where: str) -> None:
    """NaN or infinity anywhere in a mapping or list: jsii cannot serialize it (its kernel would stop)."""
    for path, item in _leaves(value, prop):
        if isinstance(item, float) and not math.isfinite(item):
            raise _value_error(where, path, "a finite number", item)


def _leaves(value: Any, path: str, depth: int = 0) -> Iterable[tuple[str, Any]]:
    if depth > 20:  # props are shallow; anything deeper is not a prop
        raise ValueError(f"{path} is nested more than 20 levels deep")
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}", depth + 1)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]", depth + 1)
    else:
        yield path, value


# --- jsii interfaces ------------------------------------------------------------------------------


@dataclass(frozen=True)
class JsiiInterface:
    """A jsii interface as the constructs use it: its name, and the members they call."""

    name: str
    members: tuple[str, ...]


ROLE = JsiiInterface("aws_iam.IRole", ("role_arn", "add_to_principal_policy"))
KEY = JsiiInterface("aws_kms.IKey", ("key_arn", "grant"))
SECRET = JsiiInterface("aws_secretsmanager.ISecret", ("secret_arn", "secret_full_arn", "secret_name"))
TOPIC = JsiiInterface("aws_sns.ITopic", ("topic_arn",))
ALARM = JsiiInterface("aws_cloudwatch.IAlarm", ("alarm_arn", "alarm_name"))
BUCKET = JsiiInterface("aws_s3.IBucket", ("bucket_name", "arn_for_objects"))
VPC = JsiiInterface("aws_ec2.IVpc", ("vpc_id", "select_subnets"))
SECURITY_GROUP = JsiiInterface("aws_ec2.ISecurityGroup", ("security_group_id",))


def _has_member(value: Any, name: str) -> bool:
    if isinstance(value, InterfaceDynamicProxy):  # an imported resource: a proxy of its delegates
        return any(_has_member(delegate, name) for delegate in value._delegates)
    try:
        inspect.getattr_static(value, name)
    except AttributeError:
        return False
    return True


def implements(value: Any, interface: JsiiInterface) -> bool:
    if value is None or isinstance(value, (str, bytes, int, float, Mapping, list, tuple)):
        return False
    return all(_has_member(value, member) for member in interface.members)


def require_jsii(
    value: Any, interface: JsiiInterface, prop: str, where: str, *, optional: bool = True
) -> None:
    """A CDK object implementing `interface` (a construct, or one imported with from_*_arn and the like)."""
    if value is None and optional:
        return
    if not implements(value, interface):
        hint = " (import one by ARN with the from_* methods)" if isinstance(value, str) else ""
        raise wrong_type(where, prop, f"an {interface.name}{hint}", value)


def require_jsii_sequence(value: Any, interface: JsiiInterface, prop: str, where: str) -> None:
    require_sequence(
        value, prop, where, lambda item, name: require_jsii(item, interface, name, where, optional=False)
    )


# --- names and tags (bounds from the SageMaker API model, botocore's sagemaker service-2.json) -----------

# CreateEndpoint EndpointName, CreateInferenceComponent InferenceComponentName: 1-63 characters.
# The API's pattern allows runs of hyphens; its separate length limit is 63.
RESOURCE_NAME = re.compile(r"[a-zA-Z0-9](-*[a-zA-Z0-9])*")
MAX_RESOURCE_NAME = 63
MAX_TAGS = 50  # TagList: at most 50 (a few are left to CDK's own, such as aws-cdk:*)
MAX_TAG_KEY, MAX_TAG_VALUE = 128, 256  # Tag.Key 1-128, Tag.Value 0-256 characters


def require_resource_name(value: Any, prop: str, where: str) -> None:
    """None, a token, or a SageMaker resource name (letters, digits and hyphens, at most 63)."""
    require_str(value, prop, where)
    if value is None or Token.is_unresolved(value):
        return
    if len(value) > MAX_RESOURCE_NAME or not RESOURCE_NAME.fullmatch(value):
        raise _value_error(
            where, prop, "1-63 letters, digits and hyphens, starting and ending with a letter or digit", value
        )


def require_tags(value: Any, prop: str, where: str) -> None:
    """A mapping of str to str within the tag limits of SageMaker (and of most services)."""
    require_mapping_of_str(value, prop, where)
    if value is None:
        return
    if len(value) > MAX_TAGS:
        raise ValueError(f"{where}: {prop} has {len(value)} tags; allowed: at most {MAX_TAGS}")
    for key, item in value.items():
        if not 1 <= len(key) <= MAX_TAG_KEY:
            raise _value_error(where, f"{prop} key", f"1 to {MAX_TAG_KEY} characters", key)
        if key.lower().startswith(
            "aws:"
        ):  # reserved for AWS's own tags (Tagging AWS resources, "Tag naming")
            raise _value_error(
                where, f"{prop} key", "a key that does not start with aws: (AWS reserves it)", key
            )
        if len(item) > MAX_TAG_VALUE:
            raise _value_error(where, f"{prop}[{key!r}]", f"at most {MAX_TAG_VALUE} characters", item)
