"""Checks over a synthesized CloudFormation template (a dict), for SageMaker endpoints.

cdk-nag's SageMaker rules cover notebooks, not endpoints; these hold endpoints, their models and
the roles they use to the same standard. Run them on any template, e.g. in a user's own tests:

    from speculative_infra.security import check_template
    assert check_template(Template.from_stack(stack).to_json()) == []
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from speculative_infra.render.container_env import TOKEN_VARIABLES, is_dynamic_reference
from speculative_infra.rules.finding import Finding

Template = dict[str, Any]
CHECKS: dict[str, tuple[str, str]] = {
    "SEC100": (
        "No wildcard service actions",
        "sagemaker:*, s3:* or * in a policy grants far more than invoking or reading.",
    ),
    "SEC101": (
        "Invoke and S3 actions name their resources",
        "sagemaker:Invoke* and s3: actions on Resource '*' reach every endpoint or bucket in the account.",
    ),
    "SEC102": (
        "Network isolation is real",
        "A model with EnableNetworkIsolation cannot download weights: it must get them from ModelDataSource/ModelDataUrl.",
    ),
    "SEC103": (
        "VPC configuration is complete",
        "A model VpcConfig needs subnets and security groups, or SageMaker rejects it at deploy time.",
    ),
    "SEC104": (
        "Data capture is encrypted",
        "Captured requests and responses hold user data: DataCaptureConfig needs a KmsKeyId.",
    ),
    "SEC105": (
        "No Hugging Face token in plaintext",
        "A token written into a container's environment is readable in the template and its history; a "
        "{{resolve:secretsmanager:...}} dynamic reference keeps it in Secrets Manager.",
    ),
}


def _is_dynamic_reference(value: Any) -> bool:
    """A literal reference, or one CDK joined with a secret's ARN (Fn::Join starting with the reference)."""
    if isinstance(value, str):
        return is_dynamic_reference(value)
    join = value.get("Fn::Join") if isinstance(value, dict) else None
    if isinstance(join, list) and len(join) == 2 and isinstance(join[1], list) and join[1]:
        return isinstance(join[1][0], str) and is_dynamic_reference(join[1][0])
    return False


def _plaintext_tokens(logical_id: str, environment: Any) -> list[Finding]:
    if not isinstance(environment, dict):
        return []
    return [
        _finding(
            "SEC105",
            f"{logical_id} sets {key} to a literal value",
            "pass the token as hf_token (a Secrets Manager secret), which renders a dynamic reference",
            logical_id,
        )
        for key in TOKEN_VARIABLES
        if key in environment and not _is_dynamic_reference(environment[key])
    ]


def _finding(code: str, message: str, fix: str, field: str) -> Finding:
    title, _ = CHECKS[code]
    return Finding.error(code, title, message, fix, field)


def _resources(template: Template, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template.get("Resources", {}).items():
        if resource.get("Type") == kind:
            yield logical_id, resource.get("Properties", {})


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _statements(template: Template) -> Iterator[tuple[str, dict[str, Any]]]:
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for logical_id, props in _resources(template, kind):
            for statement in _as_list(props.get("PolicyDocument", {}).get("Statement", [])):
                yield logical_id, statement
    for logical_id, props in _resources(template, "AWS::IAM::Role"):
        for policy in props.get("Policies", []):
            for statement in _as_list(policy.get("PolicyDocument", {}).get("Statement", [])):
                yield logical_id, statement


def check_policies(template: Template) -> list[Finding]:
    findings = []
    for logical_id, statement in _statements(template):
        if statement.get("Effect") != "Allow":
            continue
        actions = [a for a in _as_list(statement.get("Action", [])) if isinstance(a, str)]
        for action in actions:
            if action in ("*", "sagemaker:*", "s3:*"):
                findings.append(
                    _finding(
                        "SEC100",
                        f"{logical_id} allows {action}",
                        "list the actions the role needs",
                        logical_id,
                    )
                )
        if _as_list(statement.get("Resource", [])) == ["*"]:
            risky = [a for a in actions if a.startswith(("sagemaker:Invoke", "s3:"))]
            if risky:
                findings.append(
                    _finding(
                        "SEC101",
                        f"{logical_id} allows {', '.join(risky)} on every resource",
                        "name the endpoint or bucket (grant_invoke, prefix ARNs)",
                        logical_id,
                    )
                )
    return findings


def check_models(template: Template) -> list[Finding]:
    findings = []
    for logical_id, props in _resources(template, "AWS::SageMaker::Model"):
        container = props.get("PrimaryContainer", {})
        if props.get("EnableNetworkIsolation") is True and not (
            container.get("ModelDataSource") or container.get("ModelDataUrl")
        ):
            findings.append(
                _finding(
                    "SEC102",
                    f"{logical_id} isolates the container from the network but gives it no model data",
                    "mount the weights (model_data) or drop network isolation",
                    logical_id,
                )
            )
        findings += _plaintext_tokens(logical_id, container.get("Environment"))
        vpc = props.get("VpcConfig")
        if vpc is not None and (not vpc.get("Subnets") or not vpc.get("SecurityGroupIds")):
            findings.append(
                _finding(
                    "SEC103",
                    f"{logical_id} has a VpcConfig without subnets or security groups",
                    "give both",
                    logical_id,
                )
            )
    return findings


def check_endpoint_configs(template: Template) -> list[Finding]:
    findings = []
    for logical_id, props in _resources(template, "AWS::SageMaker::EndpointConfig"):
        capture = props.get("DataCaptureConfig")
        if capture is not None and not capture.get("KmsKeyId"):
            findings.append(
                _finding(
                    "SEC104",
                    f"{logical_id} captures data without a KMS key",
                    "set DataCaptureConfig.KmsKeyId",
                    logical_id,
                )
            )
    return findings


def check_inference_components(template: Template) -> list[Finding]:
    findings = []
    for logical_id, props in _resources(template, "AWS::SageMaker::InferenceComponent"):
        container = (props.get("Specification") or {}).get("Container") or {}
        findings += _plaintext_tokens(logical_id, container.get("Environment"))
    return findings


_ALL: tuple[Callable[[Template], list[Finding]], ...] = (
    check_policies,
    check_models,
    check_endpoint_configs,
    check_inference_components,
)


def check_template(template: Template) -> list[Finding]:
    """Every finding of every check."""
    return [f for check in _ALL for f in check(template)]
