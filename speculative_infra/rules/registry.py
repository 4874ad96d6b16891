"""Every deployment rule, in one list: importing a rule module registers its rules (`@rule`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

# The rule modules. A new module is added here, and only here.
from speculative_infra.rules import (  # noqa: F401  (imported for their @rule registrations)
    container,
    context,
    draft_limits_target,
    draft_rope_cache,
    draft_structure,
    engine_args,
    environment,
    gpu_support,
    host_driver,
    instance,
    lora,
    memory,
    model_access,
    model_registry,
    parallelism,
    precision,
    region,
    scaling,
    scheduler_limits,
    sparsity,
    speculative,
    speculative_max_len,
)
from speculative_infra.rules.decorator import RULES
from speculative_infra.rules.finding import Finding, Rule, Severity

if TYPE_CHECKING:
    from speculative_infra.resolve import ResolvedDeployment

_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def all_rules() -> list[Rule]:
    return sorted(RULES.values(), key=lambda r: r.code)


def run_rules(deployment: ResolvedDeployment) -> list[Finding]:
    """Every finding, errors first, then by rule code."""
    findings = [f for r in all_rules() for f in r.run(deployment)]
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER[f.severity], f.code))
