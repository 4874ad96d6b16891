"""The example app (README's `make synth`) synthesizes, and every template passes cfn-lint."""

from __future__ import annotations

import importlib.util
import json

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


# Pinned from NVIDIA, not from the catalog: R535 and R550 kernel drivers have no Blackwell chip in
# their HAL (NVIDIA/open-gpu-kernel-modules src/nvidia/generated/g_hal_private.h @ 550.163.01), and
# these host images bring 535 or 550 (botocore's ProductionVariant.InferenceAmiVersion documentation).
BLACKWELL_FAMILIES = {"g7e", "g7", "p6-b200", "p6-b300"}
HOSTS_WITHOUT_BLACKWELL = {
    "al2-ami-sagemaker-inference-gpu-2",
    "al2-ami-sagemaker-inference-gpu-2-1",
    "al2-ami-sagemaker-inference-gpu-3-1",
}


def test_blackwell_endpoints_run_on_a_host_that_can_drive_them(assembly):
    checked = 0
    for stack in assembly.stacks:
        for resource in stack.template["Resources"].values():
            if resource["Type"] != "AWS::SageMaker::EndpointConfig":
                continue
            for variant in resource["Properties"]["ProductionVariants"]:
                family = variant["InstanceType"].split(".")[1]
                if family in BLACKWELL_FAMILIES:
                    checked += 1
                    assert variant.get("InferenceAmiVersion") not in HOSTS_WITHOUT_BLACKWELL, variant
    assert checked >= 2  # the reference app's two g7e endpoints


def test_offline_example_synthesizes_lint_clean(tmp_path):
    spec = importlib.util.spec_from_file_location("offline_app", REPO / "examples" / "offline-app" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (stack,) = module.build_app(outdir=str(tmp_path)).synth().stacks
    types = {r["Type"] for r in stack.template["Resources"].values()}
    assert {"AWS::StepFunctions::StateMachine", "AWS::Scheduler::Schedule", "AWS::Events::Rule"} <= types
    configs = [
        r for r in stack.template["Resources"].values() if r["Type"] == "AWS::SageMaker::EndpointConfig"
    ]
    assert len(configs) == 1 and "AsyncInferenceConfig" in configs[0]["Properties"]
    images = [
        json.dumps(r["Properties"]["PrimaryContainer"]["Image"])
        for r in stack.template["Resources"].values()
        if r["Type"] == "AWS::SageMaker::Model"
    ]
    assert sum("djl-inference" in image for image in images) == 1  # the LMI batch job on g5
    assert cfn_lint_errors(stack.template, ["us-west-2"]) == []


def test_retraining_example_synthesizes_lint_clean(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "retraining_app", REPO / "examples" / "retraining-app" / "app.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (stack,) = module.build_app(outdir=str(tmp_path)).synth().stacks
    types = [r["Type"] for r in stack.template["Resources"].values()]
    assert "AWS::SSM::Parameter" in types and "AWS::Events::Rule" in types
    assert types.count("AWS::Scheduler::Schedule") == 2  # the canary's and the loop's
    assert cfn_lint_errors(stack.template, ["us-west-2"]) == []
