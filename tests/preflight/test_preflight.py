"""`speculative-infra preflight` against botocore's Stubber (real clients, real request validation against
the service models, canned answers) and the Hub stand-in: never real AWS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import yaml
from botocore.stub import Stubber

from speculative_infra.cli import preflight_command
from speculative_infra.preflight import AwsClients
from tests.conftest import REFERENCE_SPEC, deep_merge
from tests.facts.hub_stand_in import HubRepo, hub_stand_in

QWEN = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "hidden_size": 5120,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 40960,
}
HUB = {
    "Qwen/Qwen3-32B": HubRepo(config=QWEN, files={"model.safetensors": 65_000_000_000}),
    "meta-llama/Llama-3.1-8B-Instruct": HubRepo(config=QWEN, files={}, gated="manual", granted_tokens={"ok"}),
}
ROLE_ARN = "arn:aws:iam::111122223333:role/MySageMakerRole"
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}


def _quota(name: str, value: float, code: str = "L-ABC12345") -> dict[str, Any]:
    return {"ServiceCode": "sagemaker", "QuotaName": name, "QuotaCode": code, "Value": value}


class Stubs:
    def __init__(self) -> None:
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-west-2"
        )
        self.clients = AwsClients(
            service_quotas=session.client("service-quotas"),
            iam=session.client("iam"),
            s3=session.client("s3"),
        )
        self.quotas = Stubber(self.clients.service_quotas)
        self.iam = Stubber(self.clients.iam)
        self.s3 = Stubber(self.clients.s3)

    def quota_pages(self, *pages: list[dict[str, Any]]) -> None:
        for i, quotas in enumerate(pages):
            response: dict[str, Any] = {"Quotas": quotas}
            if i < len(pages) - 1:
                response["NextToken"] = f"t{i}"
            expected = {"ServiceCode": "sagemaker", **({"NextToken": f"t{i - 1}"} if i else {})}
            self.quotas.add_response("list_service_quotas", response, expected)

    def __enter__(self) -> Stubs:
        for stub in (self.quotas, self.iam, self.s3):
            stub.activate()
        return self

    def __exit__(self, *exc: object) -> None:
        for stub in (self.quotas, self.iam, self.s3):
            stub.assert_no_pending_responses()
            stub.deactivate()


@pytest.fixture
def stubs(monkeypatch) -> Iterator[Stubs]:
    stubs = Stubs()
    monkeypatch.setattr(preflight_command, "aws_clients", lambda profile, region: stubs.clients)
    with hub_stand_in(HUB) as (endpoint, _):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        monkeypatch.delenv("HF_TOKEN", raising=False)
        with stubs:
            yield stubs


def _run(run_cli, tmp_path, spec_changes: dict[str, Any], *args: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(deep_merge(REFERENCE_SPEC, spec_changes)))
    code, out, err = run_cli("preflight", str(path), "--format", "json", *args)
    assert "Traceback" not in err
    return code, json.loads(out)


SCALING = {"scaling": {"min_capacity": 1, "max_capacity": 3}}


def test_quota_covering_maximum_capacity_passes(stubs, run_cli, tmp_path):
    stubs.quota_pages(
        [_quota("ml.g6e.2xlarge for endpoint usage", 9)], [_quota("ml.g7e.2xlarge for endpoint usage", 3)]
    )
    code, result = _run(run_cli, tmp_path, SCALING)
    assert code == 0 and result == {"ok": True, "regions": ["us-west-2"], "findings": []}


def test_quota_below_maximum_capacity_is_an_error_with_the_request_command(stubs, run_cli, tmp_path):
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 2, "L-G7E2XL")])
    code, result = _run(run_cli, tmp_path, SCALING)
    [finding] = result["findings"]
    assert code == 1 and finding["code"] == "PF100"
    assert "is 2 instance(s); the deployment needs 3" in finding["message"]
    assert "--quota-code L-G7E2XL --desired-value 3 --region us-west-2" in finding["fix"]


def test_quota_of_zero_and_one_instance_edge(stubs, run_cli, tmp_path):
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 1)])
    assert _run(run_cli, tmp_path, {})[0] == 0  # one instance, quota 1: just fits
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 0)])
    code, result = _run(run_cli, tmp_path, {})
    assert code == 1 and result["findings"][0]["code"] == "PF100"


def test_instance_type_not_offered_in_the_region(stubs, run_cli, tmp_path):
    stubs.quota_pages([_quota("ml.g5.xlarge for endpoint usage", 4)])
    code, result = _run(run_cli, tmp_path, {})
    assert code == 1 and result["findings"][0]["code"] == "PF101"


def test_role_must_exist_and_trust_sagemaker(stubs, run_cli, tmp_path):
    ok_quota = [_quota("ml.g7e.2xlarge for endpoint usage", 1)]
    role = {
        "Path": "/",
        "RoleName": "MySageMakerRole",
        "RoleId": "AROAEXAMPLEEXAMPLE01",
        "Arn": ROLE_ARN,
        "CreateDate": "2026-01-01T00:00:00Z",
    }
    stubs.quota_pages(ok_quota)
    stubs.iam.add_response(
        "get_role",
        {"Role": {**role, "AssumeRolePolicyDocument": json.dumps(TRUST)}},
        {"RoleName": "MySageMakerRole"},
    )
    assert _run(run_cli, tmp_path, {}, "--role-arn", ROLE_ARN)[0] == 0

    lambda_trust = json.dumps(
        {**TRUST, "Statement": [{**TRUST["Statement"][0], "Principal": {"Service": "lambda.amazonaws.com"}}]}
    )
    stubs.quota_pages(ok_quota)
    stubs.iam.add_response(
        "get_role",
        {"Role": {**role, "AssumeRolePolicyDocument": lambda_trust}},
        {"RoleName": "MySageMakerRole"},
    )
    code, result = _run(run_cli, tmp_path, {}, "--role-arn", ROLE_ARN)
    assert code == 1 and "does not let sagemaker.amazonaws.com assume it" in result["findings"][0]["message"]

    stubs.quota_pages(ok_quota)
    stubs.iam.add_client_error("get_role", service_error_code="NoSuchEntity", http_status_code=404)
    code, result = _run(run_cli, tmp_path, {}, "--role-arn", ROLE_ARN)
    assert code == 1 and "does not exist" in result["findings"][0]["message"]


def test_s3_data_must_exist_and_be_readable(stubs, run_cli, tmp_path):
    ok_quota = [_quota("ml.g7e.2xlarge for endpoint usage", 1)]
    stubs.quota_pages(ok_quota)
    stubs.s3.add_response(
        "list_objects_v2",
        {"KeyCount": 1, "Contents": [{"Key": "qwen/config.json"}]},
        {"Bucket": "my-models", "Prefix": "qwen/", "MaxKeys": 1},
    )
    stubs.s3.add_response(
        "list_objects_v2", {"KeyCount": 0}, {"Bucket": "my-models", "Prefix": "empty/", "MaxKeys": 1}
    )
    stubs.s3.add_client_error(
        "list_objects_v2",
        service_error_code="AccessDenied",
        http_status_code=403,
        expected_params={"Bucket": "other-bucket", "Prefix": "x/", "MaxKeys": 1},
    )
    code, result = _run(
        run_cli,
        tmp_path,
        {},
        "--s3-uri",
        "s3://my-models/qwen/",
        "--s3-uri",
        "s3://my-models/empty/",
        "--s3-uri",
        "s3://other-bucket/x/",
    )
    messages = [f["message"] for f in result["findings"]]
    assert code == 1 and len(messages) == 2
    assert any("no object under this prefix" in m for m in messages)
    assert any("access is denied" in m for m in messages)
    # A malformed URI is bad input, refused before any call (tests/cli/test_hostile_spec_input.py).


def test_gated_model_without_a_token_is_an_error(stubs, run_cli, tmp_path, monkeypatch):
    llama = {"model": {"id": "meta-llama/Llama-3.1-8B-Instruct"}, "speculative": None, "hf_token_secret": "t"}
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 1)])
    code, result = _run(run_cli, tmp_path, llama)
    assert (
        code == 1
        and result["findings"][0]["code"] == "PF130"
        and "HTTP 401" in result["findings"][0]["message"]
    )
    monkeypatch.setenv("HF_TOKEN", "ok")
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 1)])
    assert _run(run_cli, tmp_path, llama)[0] == 0
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 1)])
    assert (
        _run(
            run_cli, tmp_path, {**llama, "model": {"id": "meta-llama/Llama-3.1-8B-Instruct", "weights": "s3"}}
        )[0]
        == 0
    )


def test_a_denied_quota_call_is_a_warning_not_a_crash(stubs, run_cli, tmp_path):
    stubs.quotas.add_client_error(
        "list_service_quotas", service_error_code="AccessDeniedException", http_status_code=400
    )
    code, result = _run(run_cli, tmp_path, {})
    assert (
        code == 0
        and result["findings"][0]["code"] == "PF190"
        and result["findings"][0]["severity"] == "warning"
    )


def test_no_region_or_credentials_exit_2(run_cli, tmp_path, monkeypatch):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(deep_merge(REFERENCE_SPEC, {"region": None})))
    code, _, err = run_cli("preflight", str(path))
    assert code == 2 and "no region" in err

    def no_credentials(profile, region):
        raise LookupError("no AWS credentials found (aws configure, AWS_PROFILE or --profile)")

    monkeypatch.setattr(preflight_command, "aws_clients", no_credentials)
    code, _, err = run_cli("preflight", str(path), "--region", "us-west-2")
    assert code == 2 and "no AWS credentials" in err


def test_text_output(stubs, run_cli, tmp_path):
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 0)])
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(REFERENCE_SPEC))
    code, out, _ = run_cli("preflight", str(path))
    assert code == 1 and "PF100" in out and "NOT READY in us-west-2: 1 error(s)" in out


def _app(tmp_path, with_agnostic: bool = False):
    import aws_cdk as cdk

    from speculative_infra import LmiInferenceComponent, SpeculativeVllmEndpoint

    app = cdk.App(outdir=str(tmp_path / "cdk.out"))
    west = cdk.Stack(app, "West", env=cdk.Environment(region="us-west-2"))
    common = {
        "model_id": "Qwen/Qwen3-32B",
        "instance_type": "ml.g7e.2xlarge",
        "engine": {"max_model_len": 4096},
    }
    SpeculativeVllmEndpoint(west, "Scaled", **common, scaling={"min_capacity": 1, "max_capacity": 3})
    SpeculativeVllmEndpoint(west, "Single", **common)
    east = cdk.Stack(app, "East", env=cdk.Environment(region="us-east-1"))
    LmiInferenceComponent(
        east,
        "Small",
        instance_type="ml.g5.xlarge",
        model_id="Qwen/Qwen3-8B",
        scaling={"min_capacity": 0, "max_capacity": 2},
    )
    if with_agnostic:
        SpeculativeVllmEndpoint(cdk.Stack(app, "Anywhere"), "E", **common)
    app.synth()
    return tmp_path / "cdk.out"


def test_an_app_adds_up_its_stacks_per_region(stubs, run_cli, tmp_path):
    from speculative_infra.preflight.targets import assembly_targets

    assembly = _app(tmp_path)
    targets = {t.region: t for t in assembly_targets(assembly)}
    assert targets["us-west-2"].instances == {"ml.g7e.2xlarge": 4}  # 3 at most, plus 1
    assert targets["us-west-2"].hub_models == ["Qwen/Qwen3-32B"]
    assert targets["us-east-1"].instances == {"ml.g5.xlarge": 2} and targets["us-east-1"].hub_models == [
        "Qwen/Qwen3-8B"
    ]

    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 3)])  # us-west-2
    stubs.quota_pages([_quota("ml.g5.xlarge for endpoint usage", 10)])  # us-east-1
    code, out, _ = run_cli("preflight", str(assembly), "--format", "json")
    result = json.loads(out)
    assert code == 1 and result["regions"] == ["us-east-1", "us-west-2"]
    codes = sorted((f["code"], f["message"].split(":")[0]) for f in result["findings"])
    assert [c for c, _ in codes] == ["PF100", "PF130"]  # g7e quota 3 < 4; Qwen3-8B is not on the stand-in Hub
    assert "needs 4 at maximum capacity" in next(
        f["message"] for f in result["findings"] if f["code"] == "PF100"
    )


def test_an_environment_agnostic_stack_needs_a_region(stubs, run_cli, tmp_path):
    assembly = _app(tmp_path, with_agnostic=True)
    code, _, err = run_cli("preflight", str(assembly))
    assert code == 2 and "no region for Anywhere" in err
    stubs.quota_pages([_quota("ml.g7e.2xlarge for endpoint usage", 4)])  # us-west-2: West and Anywhere
    stubs.quota_pages([_quota("ml.g5.xlarge for endpoint usage", 9)])
    code, out, _ = run_cli("preflight", str(assembly), "--region", "us-west-2", "--format", "json")
    result = json.loads(out)
    assert result["regions"] == ["us-east-1", "us-west-2"]
    # Anywhere joins us-west-2 and shares its quota: 4 + 1 instances against 4
    assert "needs 5 at maximum capacity" in next(
        f["message"] for f in result["findings"] if f["code"] == "PF100"
    )


def test_a_folder_that_is_not_an_app(run_cli, tmp_path):
    code, _, err = run_cli("preflight", str(tmp_path))
    assert code == 2 and "not a cloud assembly" in err
