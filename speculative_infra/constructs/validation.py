"""Synth-time validation shared by every construct: resolve, run the rules, raise once, annotate."""

from __future__ import annotations

from aws_cdk import Annotations
from constructs import Construct

from speculative_infra.check import CheckResult, check
from speculative_infra.errors import CompatibilityError
from speculative_infra.rules import Severity
from speculative_infra.spec import DeploymentSpec


def validate_deployment(scope: Construct, spec: DeploymentSpec) -> CheckResult:
    """Raise CompatibilityError with every error; warnings become CDK warnings, info stays in the result."""
    result = check(spec)
    if result.errors:
        raise CompatibilityError(result.errors, where=scope.node.path)
    for finding in result.findings:
        if finding.severity is Severity.WARNING:
            Annotations.of(scope).add_warning_v2(
                f"speculative-infra:{finding.code}", f"{finding.message}. Fix: {finding.fix}"
            )
    return result
