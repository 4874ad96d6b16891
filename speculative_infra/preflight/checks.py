"""The preflight checks: each takes read-only AWS clients (or the Hub) and returns findings."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from speculative_infra.facts import FactsFetchError, read_hub_repository
from speculative_infra.preflight.targets import Target
from speculative_infra.rules.finding import Finding, Severity
from speculative_infra.s3_uri import parse_s3_uri

CHECKS: dict[str, tuple[Severity, str]] = {
    "PF100": (Severity.ERROR, "The account's instance quota covers the deployment at maximum capacity"),
    "PF101": (Severity.ERROR, "The instance type is offered for SageMaker hosting in the region"),
    "PF110": (Severity.ERROR, "The execution role exists and SageMaker may assume it"),
    "PF120": (Severity.ERROR, "The S3 data exists and is readable"),
    "PF130": (Severity.ERROR, "The model can be downloaded from the Hugging Face Hub"),
    "PF190": (Severity.WARNING, "A preflight call could not be made"),
}
_SAGEMAKER_PRINCIPAL = "sagemaker.amazonaws.com"


@dataclass(frozen=True)
class AwsClients:
    """boto3 clients of the user's session (or stubs in tests): only read calls are made."""

    service_quotas: Any
    iam: Any
    s3: Any


@dataclass(frozen=True)
class PreflightInputs:
    target: Target  # one region's instances, models and S3 data
    region: str
    role_arn: str | None = None
    s3_uris: list[str] = field(default_factory=list)  # more S3 data to check (the command's --s3-uri)
    hf_endpoint: str = "https://huggingface.co"
    hf_token: str | None = None


def _finding(code: str, message: str, fix: str, field_name: str | None = None) -> Finding:
    severity, title = CHECKS[code]
    return Finding(code=code, severity=severity, title=title, message=message, fix=fix, field=field_name)


def _call_failed(what: str, err: Exception) -> Finding:
    detail = err.response["Error"].get("Message", str(err)) if isinstance(err, ClientError) else str(err)
    return _finding("PF190", f"could not {what}: {detail}", "check the credentials' permissions and retry")


def _quotas(client: Any) -> Iterator[dict[str, Any]]:
    token = None
    while True:
        page = client.list_service_quotas(ServiceCode="sagemaker", **({"NextToken": token} if token else {}))
        yield from page.get("Quotas", [])
        token = page.get("NextToken")
        if not token:
            return


def check_quota(clients: AwsClients, inputs: PreflightInputs) -> list[Finding]:
    if not inputs.target.instances:
        return []
    try:
        quotas = {q.get("QuotaName"): q for q in _quotas(clients.service_quotas)}
    except (ClientError, BotoCoreError) as err:
        return [_call_failed("read the SageMaker quotas (servicequotas:ListServiceQuotas)", err)]
    findings = []
    for instance_type, needed in sorted(inputs.target.instances.items()):
        name = f"{instance_type} for endpoint usage"
        quota = quotas.get(name)
        if quota is None:
            findings.append(
                _finding(
                    "PF101",
                    f"{inputs.region} has no quota named {name!r}: SageMaker does not offer {instance_type} "
                    "for hosting there",
                    "choose another region or instance type (`speculative-infra check` lists the rules it must "
                    "pass)",
                    "instance_type",
                )
            )
            continue
        value = int(quota.get("Value", 0))
        if value < needed:
            findings.append(
                _finding(
                    "PF100",
                    f"the account's quota {name!r} in {inputs.region} is {value} instance(s); the deployment "
                    f"needs {needed} at maximum capacity",
                    "request an increase: aws service-quotas request-service-quota-increase --service-code "
                    f"sagemaker --quota-code {quota.get('QuotaCode')} --desired-value {needed} --region "
                    f"{inputs.region}",
                    "instance_type",
                )
            )
    return findings


def _allows_sagemaker(policy: Any) -> bool:
    document = json.loads(urllib.parse.unquote(policy)) if isinstance(policy, str) else policy or {}
    statements = document.get("Statement", [])
    for statement in statements if isinstance(statements, list) else [statements]:
        principal = (statement.get("Principal") or {}).get("Service", [])
        services = [principal] if isinstance(principal, str) else principal
        actions = statement.get("Action", [])
        actions = [actions] if isinstance(actions, str) else actions
        if (
            statement.get("Effect") == "Allow"
            and _SAGEMAKER_PRINCIPAL in services
            and "sts:AssumeRole" in actions
        ):
            return True
    return False


def check_role(clients: AwsClients, inputs: PreflightInputs) -> list[Finding]:
    if inputs.role_arn is None:
        return []
    name = inputs.role_arn.rsplit("/", 1)[-1]
    try:
        role = clients.iam.get_role(RoleName=name)["Role"]
    except ClientError as err:
        if err.response["Error"].get("Code") == "NoSuchEntity":
            return [
                _finding(
                    "PF110",
                    f"role {inputs.role_arn} does not exist",
                    "create it, or let the construct create one (role=None)",
                    "role",
                )
            ]
        return [_call_failed(f"read role {name} (iam:GetRole)", err)]
    except BotoCoreError as err:
        return [_call_failed(f"read role {name} (iam:GetRole)", err)]
    if not _allows_sagemaker(role.get("AssumeRolePolicyDocument")):
        return [
            _finding(
                "PF110",
                f"role {inputs.role_arn} does not let {_SAGEMAKER_PRINCIPAL} assume it",
                f"add a trust policy statement: Allow sts:AssumeRole for Service {_SAGEMAKER_PRINCIPAL}",
                "role",
            )
        ]
    return []


def check_s3(clients: AwsClients, inputs: PreflightInputs) -> list[Finding]:
    findings = []
    for uri in dict.fromkeys([*inputs.target.s3_uris, *inputs.s3_uris]):  # in order, once each
        try:
            location = parse_s3_uri(uri, "s3_uri")
        except ValueError as err:
            findings.append(_finding("PF120", str(err), "use s3://<bucket>/<prefix>", "s3_uri"))
            continue
        try:
            page = clients.s3.list_objects_v2(Bucket=location.bucket, Prefix=location.key, MaxKeys=1)
        except ClientError as err:
            code = err.response["Error"].get("Code", "")
            reason = {"NoSuchBucket": "the bucket does not exist", "AccessDenied": "access is denied"}.get(
                code, code
            )
            findings.append(
                _finding("PF120", f"{uri}: {reason}", "check the URI and the bucket policy", "s3_uri")
            )
            continue
        except BotoCoreError as err:
            findings.append(_call_failed(f"list {uri} (s3:ListBucket)", err))
            continue
        if not page.get("KeyCount") and not page.get("Contents"):
            findings.append(
                _finding(
                    "PF120",
                    f"{uri}: no object under this prefix",
                    "upload the data, or fix the URI",
                    "s3_uri",
                )
            )
    return findings


def check_hub(inputs: PreflightInputs, read: Callable[..., Any] = read_hub_repository) -> list[Finding]:
    findings = []
    for model_id in inputs.target.hub_models:
        try:
            read(model_id, endpoint=inputs.hf_endpoint, token=inputs.hf_token, timeout=15.0)
        except FactsFetchError as err:
            if err.kind == "config":
                continue  # downloadable; its config's shape is check's business
            if err.kind == "network":
                findings.append(
                    _finding(
                        "PF190",
                        f"could not reach the Hugging Face Hub: {err}",
                        "retry from a network that reaches it",
                    )
                )
                continue
            fix = (
                "give the deployment a token with access (hf_token / hf_token_secret) and set HF_TOKEN to it "
                "for this check"
                if err.kind == "access"
                else "check the model id"
            )
            findings.append(_finding("PF130", f"{model_id}: {err}", fix, "model.id"))
    return findings


def run_preflight(
    clients: AwsClients, inputs: PreflightInputs, hub_reader: Callable[..., Any] = read_hub_repository
) -> list[Finding]:
    """Every preflight finding, errors first."""
    findings = [
        *check_quota(clients, inputs),
        *check_role(clients, inputs),
        *check_s3(clients, inputs),
        *check_hub(inputs, hub_reader),
    ]
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    return sorted(findings, key=lambda f: (order[f.severity], f.code))
