"""Compatibility rules: pure functions of a resolved deployment that return findings (no CDK here)."""

from speculative_infra.rules.finding import Finding, Rule, Severity, Violation
from speculative_infra.rules.registry import all_rules, run_rules

__all__ = ["Finding", "Rule", "Severity", "Violation", "all_rules", "run_rules"]
