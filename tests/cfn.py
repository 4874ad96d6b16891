"""Synthesis helpers for construct tests: templates, cfn-lint, snapshot normalization."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint

_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def synth_stack(
    build: Callable[[cdk.Stack], Any], *, region: str | None = "us-west-2"
) -> tuple[Template, dict[str, Any]]:
    app = cdk.App()
    env = cdk.Environment(region=region) if region else None
    stack = cdk.Stack(app, "TestStack", env=env)
    build(stack)
    template = Template.from_stack(stack)
    return template, template.to_json()


LINT_REGIONS = ["us-east-1", "us-west-2"]


def cfn_lint_errors(template: dict[str, Any], regions: list[str] | None = None) -> list[str]:
    """cfn-lint errors (not warnings) for a synthesized template, in the regions it targets."""
    matches = lint(json.dumps(template), config=ManualArgs(regions=regions or LINT_REGIONS))
    return [
        f"{m.rule.id} {m.message} ({'/'.join(map(str, m.path))})"
        for m in matches
        if m.rule.id.startswith("E")
    ]


def normalized(template: dict[str, Any]) -> dict[str, Any]:
    """The template with asset hashes (the only volatile values) replaced, for snapshots."""
    return json.loads(_ASSET_HASH.sub("ASSET_HASH", json.dumps(template, sort_keys=True)))
