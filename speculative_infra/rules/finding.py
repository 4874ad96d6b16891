"""What a rule says: a Violation from the rule's logic, a Finding once code and severity are attached."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from speculative_infra.resolve import ResolvedDeployment


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Violation:
    """One problem a rule found: what is wrong (with the value received and what is allowed), the fix."""

    message: str
    fix: str
    field: str | None = None


class Finding(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    severity: Severity
    title: str
    message: str
    fix: str
    field: str | None = None

    @classmethod
    def error(cls, code: str, title: str, message: str, fix: str, field: str | None = None) -> Finding:
        """An error finding from a check outside the per-deployment registry (endpoint, job, template)."""
        return cls(code=code, severity=Severity.ERROR, title=title, message=message, fix=fix, field=field)

    def as_dict(self) -> dict[str, str | None]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "field": self.field,
            "message": self.message,
            "fix": self.fix,
        }


RuleCheck = Callable[["ResolvedDeployment"], Iterable[Violation]]


@dataclass(frozen=True)
class Rule:
    """A rule's identity and documentation, kept apart from its logic (`check`)."""

    code: str
    name: str
    severity: Severity
    title: str
    rationale: str
    check: RuleCheck

    def run(self, deployment: ResolvedDeployment) -> list[Finding]:
        return [
            Finding(
                code=self.code,
                severity=self.severity,
                title=self.title,
                message=v.message,
                fix=v.fix,
                field=v.field,
            )
            for v in self.check(deployment)
        ]
