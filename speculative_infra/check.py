"""Resolve a spec and run every rule: the one entry point the CLI and the constructs share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.facts import FetchedFacts, catalog_with_facts
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


def check(
    spec: DeploymentSpec | Mapping[str, Any], fetched: Mapping[str, FetchedFacts] | None = None
) -> CheckResult:
    """`fetched`: facts of repositories the catalog does not know (`speculative-infra facts fetch`)."""
    deployment = resolve(parse_spec(spec), catalog_with_facts(load_catalog(), fetched or {}))
    return CheckResult(deployment=deployment, findings=run_rules(deployment))
