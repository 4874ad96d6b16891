"""Engine argument names, checked against the chosen vLLM release's own `vllm serve` flags."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_release import VllmFlag, releases_with_dest
from speculative_infra.human_int import HUMAN_INT_TYPES, parses_as_int, reads_as_human_int
from speculative_infra.render.lmi_env import RESERVED_ENGINE_KEYS as LMI_RESERVED
from speculative_infra.render.vllm_env import RESERVED_ENGINE_KEYS as VLLM_RESERVED
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation

_RESERVED_FIX = {
    "model": "use model.id (or the construct's model_data)",
    "speculative_config": "use the speculative section",
    "port": "leave it out: the container serves on port 8080",
    "host": "leave it out: the container binds its own address",
}


def _span(versions: list[str]) -> str:
    return versions[0] if len(versions) == 1 else f"{versions[0]} to {versions[-1]}"


def _reserved(d: ResolvedDeployment) -> frozenset[str]:
    """The keys the container's renderer sets itself (they differ between the vLLM DLC and LMI)."""
    return LMI_RESERVED if d.spec.container.framework == "lmi" else VLLM_RESERVED


@rule(
    code="SI500",
    name="engine-arg-known",
    severity=Severity.ERROR,
    title="Every engine arg is a `vllm serve` flag of the release",
    rationale="An unknown SM_VLLM_* variable becomes an unknown flag and vLLM exits at start-up; a prefix "
    "of a real flag is silently taken as that flag.",
)
def engine_arg_known(d: ResolvedDeployment) -> Iterator[Violation]:
    release = d.vllm_release
    if release is None:
        return
    dests = release.dests()
    for key in d.spec.engine.given():
        if key in dests or key in _reserved(d):
            continue
        elsewhere = releases_with_dest(key)
        if elsewhere:
            message = f"engine.{key} is not a flag of vLLM {release.vllm_version}; it exists in vLLM {_span(elsewhere)}"
            fix = "remove it, or use a container whose vLLM has it"
        else:
            close = difflib.get_close_matches(key, sorted(dests), n=3, cutoff=0.75)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            message = f"engine.{key} is not a flag of vLLM {release.vllm_version} (`vllm serve --help`){hint}"
            fix = (
                f"rename it to {close[0]}"
                if close
                else "remove it (see `speculative-infra catalog vllm-flags`)"
            )
        yield Violation(message=message, fix=fix, field=f"engine.{key}")


@rule(
    code="SI501",
    name="engine-arg-not-reserved",
    severity=Severity.ERROR,
    title="Engine args do not set what the spec or container sets",
    rationale="model, port, host and speculative_config come from dedicated fields or the container itself.",
)
def engine_arg_not_reserved(d: ResolvedDeployment) -> Iterator[Violation]:
    for key in d.spec.engine.given():
        if key in _reserved(d):
            yield Violation(
                message=f"engine.{key} cannot be set through engine args",
                fix=_RESERVED_FIX.get(key, "leave it out"),
                field=f"engine.{key}",
            )


def reads_tera_suffixes(vllm_version: str) -> bool:
    """Whether this release's human_readable_int reads t / T (10^12, 2^40); older ones refuse them."""
    since = load_catalog().vllm.human_int_tera_suffixes_since
    return version_tuple(vllm_version) >= version_tuple(since.value)


def _value_problem(flag: VllmFlag, value: Any, *, tera: bool = True) -> str | None:
    """What is wrong with a value for this flag, or None. Only what vLLM's parser would refuse (the
    container passes every value as text: "8192" is an integer, and int() also takes "-1" or "1_000";
    `tera`: the release's human_readable_int reads t/T)."""
    if flag.boolean:
        return None if isinstance(value, bool) else "true or false"
    if flag.choices is not None and not isinstance(value, bool) and str(value) in flag.choices:
        return None
    if flag.choices is not None:
        return "one of " + ", ".join(flag.choices)
    if flag.value_type == "int":
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and parses_as_int(value)
        )
        return None if ok else "an integer"
    if flag.value_type in HUMAN_INT_TYPES:
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        if isinstance(value, str) and reads_as_human_int(flag.value_type, value, tera=tera):
            return None
        return "an integer, or a size such as 16k (16,000) or 16K (16,384)" + (
            ', or "auto"' if flag.value_type == "human_int_or_auto" else ""
        )
    if flag.value_type == "float":
        if isinstance(value, bool):
            return "a number"
        try:
            number = float(value)
        except (TypeError, ValueError):
            return "a number"
        if not math.isfinite(number):  # vLLM's float() reads "nan" and "inf"; no setting means either
            return "a finite number"
    return None


@rule(
    code="SI502",
    name="engine-arg-value-valid",
    severity=Severity.ERROR,
    title="Every engine arg's value is one the release's flag accepts",
    rationale="vLLM's argument parser refuses a value of the wrong type or outside the flag's choices, and "
    "the container exits at start-up.",
)
def engine_arg_value_valid(d: ResolvedDeployment) -> Iterator[Violation]:
    release = d.vllm_release
    if release is None:
        return
    for key, value in d.spec.engine.given().items():
        flag = release.flag_by_dest(key)
        if flag is None or key in _reserved(d):
            continue  # SI500/SI501 report it
        allowed = _value_problem(flag, value, tera=reads_tera_suffixes(release.vllm_version))
        if allowed is not None:
            yield Violation(
                message=f"engine.{key} is {value!r}; vLLM {release.vllm_version} accepts {allowed}",
                fix=f"set engine.{key} to {allowed}, or leave it out",
                field=f"engine.{key}",
            )
