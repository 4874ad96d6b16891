"""`@rule`: how a rule module declares a rule. Imports nothing of the rules, so no module imports back."""

from __future__ import annotations

from collections.abc import Callable

from speculative_infra.rules.finding import Rule, RuleCheck, Severity

RULES: dict[str, Rule] = {}


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
