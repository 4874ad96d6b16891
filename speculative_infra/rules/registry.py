"""The rule registry: rules register themselves with @rule; run_rules runs them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from speculative_infra.rules.finding import Finding, Rule, RuleCheck, Severity

if TYPE_CHECKING:
    from speculative_infra.resolve import ResolvedDeployment

RULES: dict[str, Rule] = {}
_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


def rule(
    *, code: str, name: str, severity: Severity, title: str, rationale: str
) -> Callable[[RuleCheck], RuleCheck]:
    def register(check: RuleCheck) -> RuleCheck:
        if code in RULES:
            raise ValueError(f"rule code {code} registered twice ({RULES[code].name}, {name})")
        RULES[code] = Rule(
            code=code, name=name, severity=severity, title=title, rationale=rationale, check=check
        )
        return check

    return register


def all_rules() -> list[Rule]:
    _load_rule_modules()
    return sorted(RULES.values(), key=lambda r: r.code)


def run_rules(deployment: ResolvedDeployment) -> list[Finding]:
    """Every finding, errors first, then by rule code."""
    findings = [f for r in all_rules() for f in r.run(deployment)]
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER[f.severity], f.code))


def _load_rule_modules() -> None:
    # Importing the modules registers their rules; done lazily so `import speculative_infra` stays cheap.
    from speculative_infra.rules import (  # noqa: F401
        container,
        context,
        draft_structure,
        engine_args,
        environment,
        gpu_support,
        host_driver,
        instance,
        lora,
        memory,
        model_access,
        parallelism,
        precision,
        region,
        scaling,
        speculative,
    )
