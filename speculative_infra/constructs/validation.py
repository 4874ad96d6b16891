"""Synth-time validation shared by every construct: resolve, run the rules, raise once, annotate."""

from __future__ import annotations

from aws_cdk import Annotations
from constructs import Construct

from speculative_infra.check import CheckResult, check
from speculative_infra.errors import CompatibilityError
from speculative_infra.facts import ContextFileError, FetchedFacts, context_key, facts_from_context
from speculative_infra.rules import Severity
from speculative_infra.spec import DeploymentSpec


def fetched_facts(scope: Construct, spec: DeploymentSpec) -> dict[str, FetchedFacts]:
    """Facts `speculative-infra facts fetch` wrote to cdk.context.json for this model and its draft."""
    repos = [spec.model.id]
    if spec.speculative is not None and spec.speculative.model:
        repos.append(spec.speculative.model)
    context = {}
    for repo in repos:
        value = scope.node.try_get_context(context_key(repo))
        if value is not None:
            context[context_key(repo)] = value
    try:
        return facts_from_context(context)
    except ContextFileError as err:
        raise ValueError(f"{scope.node.path}: {err}") from None


def validate_deployment(scope: Construct, spec: DeploymentSpec) -> CheckResult:
    """Raise CompatibilityError with every error; warnings become CDK warnings, info stays in the result."""
    result = check(spec, fetched_facts(scope, spec))
    if result.errors:
        raise CompatibilityError(result.errors, where=scope.node.path)
    for finding in result.findings:
        if finding.severity is Severity.WARNING:
            Annotations.of(scope).add_warning_v2(
                f"speculative-infra:{finding.code}", f"{finding.message}. Fix: {finding.fix}"
            )
    return result
