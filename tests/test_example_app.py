"""The example app (README's `make synth`) synthesizes, and every template passes cfn-lint."""

from __future__ import annotations

import importlib.util

import pytest

from tests.cfn import cfn_lint_errors
from tests.conftest import REPO


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("example_app", REPO / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_app(outdir=str(tmp_path_factory.mktemp("cdk.out"))).synth()


def test_example_stacks(assembly):
    names = {s.stack_name for s in assembly.stacks}
    assert names == {"SpeculativeVllmReference", "SpeculativeVllmAnyRegion", "LmiInferenceComponents"}


def test_example_templates_pass_cfn_lint(assembly):
    for stack in assembly.stacks:
        region = stack.environment.region
        regions = [region] if region and region != "unknown-region" else None
        assert cfn_lint_errors(stack.template, regions) == [], stack.stack_name
