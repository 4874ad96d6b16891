"""The example apps (README's `make synth`, offline, retraining) synthesize, and every template passes cfn-lint
and the CDK's own CloudFormation validation."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from tests.cfn import cfn_lint_errors
from tests.conftest import REPO


def synth_validated(app: cdk.App) -> Any:
    """Synthesize with the CDK's own CloudFormation validation registered explicitly (the tests turn
    the default instance off for speed, tests/conftest.py): it runs whatever CDK_VALIDATION says."""
    cdk.Validations.of(app).add_plugins(cdk.CloudFormationValidatePlugin())
    return app.synth()


def cdk_validation_findings(assembly: Any) -> list[str]:
    """Every violation the CDK's validator reported (it downgrades errors to warnings by default, so
    synthesis succeeds either way; the report keeps them, and leaves out a plugin with none:
    test_the_cdks_validation_would_report_a_broken_resource shows the registered plugin runs)."""
    report = json.loads((Path(assembly.directory) / "validation-report.json").read_text())
    plugins = report["pluginReports"]
    return [
        f"{v['ruleName']} {v['description']} ({c['constructPath']})"
        for p in plugins
        for v in p["violations"]
        for c in v["violatingConstructs"]
    ]


def load_example(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    module = load_example("example_app", REPO / "app.py")
    return synth_validated(module.build_app(outdir=str(tmp_path_factory.mktemp("cdk.out"))))


def test_example_stacks(assembly):
    names = {s.stack_name for s in assembly.stacks}
    assert names == {"SpeculativeVllmReference", "SpeculativeVllmAnyRegion", "LmiInferenceComponents"}


def test_example_templates_pass_cfn_lint(assembly):
    for stack in assembly.stacks:
        region = stack.environment.region
        regions = [region] if region and region != "unknown-region" else None
        assert cfn_lint_errors(stack.template, regions) == [], stack.stack_name


def test_example_templates_pass_the_cdks_own_validation(assembly):
    assert cdk_validation_findings(assembly) == []


def test_the_cdks_validation_would_report_a_broken_resource(tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Broken", env=cdk.Environment(region="us-west-2"))
    cdk.CfnResource(
        stack, "Endpoint", type="AWS::SageMaker::Endpoint", properties={"EndpointConfigName": "c", "Bogus": 1}
    )
    findings = cdk_validation_findings(synth_validated(app))
    assert len(findings) == 1 and "Bogus" in findings[0] and "Broken/Endpoint" in findings[0]


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
    module = load_example("offline_app", REPO / "examples" / "offline-app" / "app.py")
    offline = synth_validated(module.build_app(outdir=str(tmp_path)))
    assert cdk_validation_findings(offline) == []
    (stack,) = offline.stacks
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
    module = load_example("retraining_app", REPO / "examples" / "retraining-app" / "app.py")
    retraining = synth_validated(module.build_app(outdir=str(tmp_path)))
    assert cdk_validation_findings(retraining) == []
    (stack,) = retraining.stacks
    types = [r["Type"] for r in stack.template["Resources"].values()]
    assert "AWS::SSM::Parameter" in types and "AWS::Events::Rule" in types
    assert types.count("AWS::Scheduler::Schedule") == 2  # the canary's and the loop's
    assert cfn_lint_errors(stack.template, ["us-west-2"]) == []


def test_the_synthesis_benchmarks_l2_floor_builds_only_what_the_reference_app_has(assembly, tmp_path):
    """benchmarks/bench_synth.py's floor is a lower bound only if every L2 it builds is one the reference
    app's templates contain; it must also still build the costly kinds (functions, the Provider framework's
    waiter, dashboard, alarms) and run inside the baseline script it is pasted into."""
    bench = load_example("bench_synth", REPO / "benchmarks" / "bench_synth.py")
    compile(bench.BASELINE.replace("{l2_first_use}", bench.L2_FIRST_USE), "l2_floor.py", "exec")
    handler = tmp_path / "handler"
    handler.mkdir()
    (handler / "index.py").write_text("def handler(event, context):\n    return {}\n")
    argv = ["l2_floor.py", "reference", str(tmp_path / "floor"), str(handler)]
    namespace: dict[str, Any] = {"cdk": cdk, "sys": SimpleNamespace(argv=argv)}
    exec(bench.L2_FIRST_USE, namespace)
    resources = Template.from_stack(namespace["throwaway"]).to_json()["Resources"].values()

    def kind(resource_type: str) -> str:  # a custom resource is one kind whatever its Custom:: name
        return "Custom::" if resource_type.startswith("Custom::") else resource_type

    floor_types = {kind(r["Type"]) for r in resources}
    app_types = {kind(r["Type"]) for s in assembly.stacks for r in s.template["Resources"].values()}
    assert floor_types - app_types == set()
    costly = {
        "AWS::Lambda::Function",
        "AWS::StepFunctions::StateMachine",
        "AWS::CloudWatch::Dashboard",
        "AWS::CloudWatch::Alarm",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "Custom::",
    }
    assert costly <= floor_types
