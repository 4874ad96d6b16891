"""Every rule's failing case, through `speculative-infra check` (exit status and JSON findings)."""

from __future__ import annotations

import json

import pytest
import yaml

from speculative_infra.rules import Severity, all_rules
from tests.conftest import REFERENCE_SPEC, deep_merge
from tests.rules.test_rules import CASES

SEVERITY = {r.code: r.severity for r in all_rules()}


@pytest.mark.parametrize("code", sorted(CASES))
def test_failing_case_through_the_cli(run_cli, tmp_path, code):
    spec = deep_merge(REFERENCE_SPEC, CASES[code][1])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    exit_code, out, _ = run_cli("check", str(path), "--format", "json")
    result = json.loads(out)
    codes = {f["code"] for f in result["findings"]}
    assert code.split()[0] in codes
    has_errors = any(f["severity"] == "error" for f in result["findings"])
    assert exit_code == (1 if has_errors else 0)
    if SEVERITY[code.split()[0]] is Severity.ERROR:
        assert exit_code == 1 and result["ok"] is False
