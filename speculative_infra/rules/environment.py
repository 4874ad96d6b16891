"""SageMaker's limits on a container's environment, and what must never be in it."""

from __future__ import annotations

import re
from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.render import render_environment
from speculative_infra.render.lmi_env import ASYNC_MODE_OPTIONS, option_key
from speculative_infra.render.lmi_env import RENAMED as LMI_RENAMED
from speculative_infra.render.vllm_env import PREFIX as VLLM_PREFIX
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI510",
    name="environment-within-limits",
    severity=Severity.ERROR,
    title="Container environment within SageMaker's limits",
    rationale="SageMaker rejects more than 100 variables, a name that is not [a-zA-Z_][a-zA-Z0-9_]*, a name or "
    "value over 1,024 bytes, or 32 KB in total (CreateModel API reference; catalog: sagemaker.yaml); a NUL "
    "character cannot be in any process environment.",
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
        if "\0" in value:  # the kernel ends an environment string at its first NUL
            yield Violation(
                message=f"environment variable {key[:60]}'s value holds a NUL character, which no process "
                "environment can carry",
                fix="remove the NUL character (\\0) from the value",
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


def _owner_of_vllm_key(key: str, d: ResolvedDeployment) -> str | None:
    """The spec field that sets an SM_VLLM_* variable of the vLLM DLC (None: not the renderer's)."""
    if not key.startswith(VLLM_PREFIX):
        return None
    dest = key.removeprefix(VLLM_PREFIX).lower()
    return {"model": "model.id", "speculative_config": "speculative"}.get(dest, f"engine.{dest}")


def _owner_of_lmi_key(key: str, d: ResolvedDeployment) -> str | None:
    """The spec field behind an OPTION_* variable the LMI renderer writes (None: an LMI-only option)."""
    if key == "OPTION_SPECULATIVE_CONFIG":
        return "speculative"
    # LMI's own names for two options (djl-serving, serving/docs/lmi/lmi_environment_variable_instruction.md:
    # option.model_id is HF_MODEL_ID, option.tensor_parallel_degree is TENSOR_PARALLEL_DEGREE).
    if key == "OPTION_MODEL_ID":
        return "model.id"
    if key == "TENSOR_PARALLEL_DEGREE":
        return "engine.tensor_parallel_size"
    written = {option_key(dest): dest for dest in d.spec.engine.given()}
    written.update({option: dest for dest, option in LMI_RENAMED.items()})
    if key in written:
        return f"engine.{written[key]}"
    dest = key.removeprefix("OPTION_").lower()
    if key.startswith("OPTION_") and d.vllm_release is not None and d.vllm_release.flag_by_dest(dest):
        return f"engine.{dest}"  # LMI passes OPTION_<ENGINE ARG> to vLLM
    return None


@rule(
    code="SI511",
    name="environment-not-overriding-checked-settings",
    severity=Severity.ERROR,
    title="The environment does not override what the spec sets and the rules check",
    rationale="The container reads its vLLM settings from SM_VLLM_* (vLLM DLC) or OPTION_* and HF_MODEL_ID "
    "(LMI), which the renderer writes from the spec's model, engine and speculative fields. An environment "
    "entry of the same name replaces the rendered value after every rule has judged the spec's, so the "
    "deployment would start with a setting nothing checked.",
)
def environment_not_overriding(d: ResolvedDeployment) -> Iterator[Violation]:
    framework = d.container.framework if d.container is not None else d.spec.container.framework
    for key in d.spec.environment:
        if key in ASYNC_MODE_OPTIONS and framework == "lmi":
            yield Violation(
                message=f"environment.{key} replaces the value the constructs set for LMI's vLLM async mode "
                f"({ASYNC_MODE_OPTIONS[key]}), which every rule assumes",
                fix=f"remove environment.{key}",
                field=f"environment.{key}",
            )
            continue
        if key == "HF_MODEL_ID":
            owner: str | None = "model.id"
        elif framework == "vllm":
            owner = _owner_of_vllm_key(key, d)
        else:
            owner = _owner_of_lmi_key(key, d)
        if owner is not None:
            yield Violation(
                message=f"environment.{key} sets what the spec's {owner} sets and the rules check; the entry "
                "would replace the checked value",
                fix=f"remove environment.{key} and set {owner} (model_data in the constructs for S3 weights)"
                if owner == "model.id"
                else f"remove environment.{key} and set {owner}",
                field=f"environment.{key}",
            )
