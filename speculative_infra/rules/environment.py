"""SageMaker's limits on a container's environment, and what must never be in it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from speculative_infra.render import render_environment
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation

# CreateModel's ContainerDefinition.Environment, as botocore's SageMaker model states it (botocore 1.44.8,
# data/sagemaker/2017-07-24/service-2.json: shapes EnvironmentMap, EnvironmentKey, EnvironmentValue and
# the Environment member's documentation).
MAX_ENTRIES = 100
MAX_ITEM_BYTES = 1024
MAX_TOTAL_BYTES = 32 * 1024
KEY_PATTERN = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


@rule(
    code="SI510",
    name="environment-within-limits",
    severity=Severity.ERROR,
    title="Container environment within SageMaker's limits",
    rationale="SageMaker rejects more than 100 variables, a name that is not [a-zA-Z_][a-zA-Z0-9_]*, a name or "
    "value over 1,024 bytes, or 32 KB in total (CreateModel API reference).",
)
def environment_within_limits(d: ResolvedDeployment) -> Iterator[Violation]:
    env = render_environment(d)
    if env is None:
        return
    if len(env) > MAX_ENTRIES:
        yield Violation(
            message=f"the container environment has {len(env)} variables; allowed: at most {MAX_ENTRIES}",
            fix="drop engine args that repeat vLLM's defaults, or extra environment entries",
            field="environment",
        )
    for key, value in env.items():
        if not KEY_PATTERN.fullmatch(key):
            yield Violation(
                message=f"environment variable name {key[:60]!r} is not allowed; allowed: a letter or _ then "
                "letters, digits or _ ([a-zA-Z_][a-zA-Z0-9_]*)",
                fix="rename the variable (e.g. replace spaces and dashes with _)",
                field=f"environment.{key[:60]}",
            )
        for what, text in (("name", key), ("value", value)):
            size = len(text.encode())
            if size > MAX_ITEM_BYTES:
                yield Violation(
                    message=f"environment variable {key[:60]}'s {what} is {size} bytes; allowed: at most "
                    f"{MAX_ITEM_BYTES}",
                    fix="shorten it (e.g. a smaller speculative config or JSON value)",
                    field="environment",
                )
    total = sum(len(k.encode()) + len(v.encode()) for k, v in env.items())
    if total > MAX_TOTAL_BYTES:
        yield Violation(
            message=f"the container environment totals {total} bytes; allowed: at most {MAX_TOTAL_BYTES}",
            fix="remove entries",
            field="environment",
        )
