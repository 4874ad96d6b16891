"""cdk-nag's AwsSolutions pack over the example app and every construct configuration: zero findings
left unacknowledged, and every acknowledgment specific and explained."""

from __future__ import annotations

import importlib.util

import aws_cdk as cdk
import pytest
from cdk_nag import AwsSolutionsChecks

from tests.conftest import REPO
from tests.constructs import (
    test_async_inference,
    test_batch_inference,
    test_data_capture,
    test_eagle_job,
    test_endpoint_benchmark,
    test_endpoint_load_test,
    test_lmi_component,
    test_monitoring,
    test_retraining_loop,
    test_vllm_endpoint,
)


def _configurations():
    for module in (
        test_vllm_endpoint,
        test_lmi_component,
        test_eagle_job,
        test_endpoint_benchmark,
        test_endpoint_load_test,
        test_monitoring,
        test_async_inference,
        test_batch_inference,
        test_data_capture,
        test_retraining_loop,
    ):
        for name, build in module.CONFIGURATIONS.items():
            yield f"{module.__name__.rsplit('.', 1)[-1]}:{name}", module, name, build


def _build(module, name, build, stack):
    if build == "special":
        return module._special(stack, name)
    if callable(build):
        return build(stack)
    return module.reference(stack, **build)


def _nag_synth(app: cdk.App) -> None:
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises with every unacknowledged finding


@pytest.mark.parametrize(
    ("label", "module", "name", "build"),
    list(_configurations()),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_construct_configuration_is_nag_clean(label, module, name, build, tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "NagStack", env=cdk.Environment(region="us-east-1"))
    _build(module, name, build, stack)
    _nag_synth(app)


def test_example_app_is_nag_clean(tmp_path):
    spec = importlib.util.spec_from_file_location("example_app", REPO / "app.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    _nag_synth(example.build_app(outdir=str(tmp_path)))


def test_a_real_finding_is_reported(tmp_path):
    """The harness can fail: an unacknowledged wildcard policy makes synthesis raise."""
    from aws_cdk import aws_iam as iam

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Bad")
    role = iam.Role(stack, "Role", assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"))
    role.add_to_policy(iam.PolicyStatement(actions=["s3:*"], resources=["*"]))
    with pytest.raises(Exception, match="AwsSolutions-IAM5"):
        _nag_synth(app)


def test_acknowledgments_are_specific_and_explained(tmp_path):
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "NagStack", env=cdk.Environment(region="us-east-1"))
    test_eagle_job.job_and_endpoint(stack)
    test_lmi_component.scale_to_zero(stack)
    acks: dict[str, str] = {}
    for construct in stack.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                acks.update(entry.data)
    assert len(acks) > 5, "expected acknowledgments"
    for ident, reason in acks.items():
        assert ident.startswith("AwsSolutions::AwsSolutions-"), ident
        assert len(reason) > 40, (ident, reason)
        if "IAM5" in ident:
            assert "[Resource::" in ident or "[Action::" in ident, ident


def test_offline_example_is_nag_clean(tmp_path):
    spec = importlib.util.spec_from_file_location("offline_app", REPO / "examples" / "offline-app" / "app.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    _nag_synth(example.build_app(outdir=str(tmp_path)))


def test_retraining_example_is_nag_clean(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "retraining_app", REPO / "examples" / "retraining-app" / "app.py"
    )
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    _nag_synth(example.build_app(outdir=str(tmp_path)))
