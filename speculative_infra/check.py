"""Resolve a spec and run every rule: the one entry point the CLI and the constructs share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from speculative_infra.resolve import ResolvedDeployment, resolve
from speculative_infra.rules import Finding, Severity, run_rules
from speculative_infra.spec import DeploymentSpec, parse_spec


@dataclass(frozen=True)
class CheckResult:
    deployment: ResolvedDeployment
    findings: list[Finding]

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "resolved": self.deployment.summary(),
            "findings": [f.as_dict() for f in self.findings],
        }


def check(spec: DeploymentSpec | Mapping[str, Any]) -> CheckResult:
    deployment = resolve(parse_spec(spec))
    return CheckResult(deployment=deployment, findings=run_rules(deployment))
