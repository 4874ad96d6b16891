"""SageMaker's limits on a container's environment, and what must never be in it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.render import render_environment
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI510",
    name="environment-within-limits",
    severity=Severity.ERROR,
    title="Container environment within SageMaker's limits",
    rationale="SageMaker rejects more than 100 variables, a name that is not [a-zA-Z_][a-zA-Z0-9_]*, a name or "
    "value over 1,024 bytes, or 32 KB in total (CreateModel API reference; catalog: sagemaker.yaml).",
)
def environment_within_limits(d: ResolvedDeployment) -> Iterator[Violation]:
    env = render_environment(d)
    if env is None:
        return
    limits = load_catalog().sagemaker.environment_limits
    key_pattern = re.compile(limits.key_pattern)
    if len(env) > limits.max_entries:
        yield Violation(
            message=f"the container environment has {len(env)} variables; allowed: at most {limits.max_entries}",
            fix="drop engine args that repeat vLLM's defaults, or extra environment entries",
            field="environment",
        )
    for key, value in env.items():
        if not key_pattern.fullmatch(key):
            yield Violation(
                message=f"environment variable name {key[:60]!r} is not allowed; allowed: a letter or _ then "
                f"letters, digits or _ ({limits.key_pattern})",
                fix="rename the variable (e.g. replace spaces and dashes with _)",
                field=f"environment.{key[:60]}",
            )
        for what, text in (("name", key), ("value", value)):
            size = len(text.encode())
            if size > limits.max_item_bytes:
                yield Violation(
                    message=f"environment variable {key[:60]}'s {what} is {size} bytes; allowed: at most "
                    f"{limits.max_item_bytes}",
                    fix="shorten it (e.g. a smaller speculative config or JSON value)",
                    field="environment",
                )
    total = sum(len(k.encode()) + len(v.encode()) for k, v in env.items())
    if total > limits.max_total_bytes:
        yield Violation(
            message=f"the container environment totals {total} bytes; allowed: at most {limits.max_total_bytes}",
            fix="remove entries",
            field="environment",
        )
