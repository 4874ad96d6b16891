"""Errors the library raises to its users."""

from __future__ import annotations

from collections.abc import Sequence

from speculative_infra.rules import Finding


class CompatibilityError(ValueError):
    """A deployment that cannot work. `findings` holds every error found, not just the first."""

    def __init__(self, findings: Sequence[Finding], where: str = "") -> None:
        self.findings = list(findings)
        self.where = where
        head = f"{where}: " if where else ""
        lines = [f"  [{f.code}] {f.message}\n      fix: {f.fix}" for f in self.findings]
        super().__init__(f"{head}{len(self.findings)} compatibility error(s):\n" + "\n".join(lines))
