"""SpeculativeVllmEndpoint(data_capture=...): the endpoint config's DataCaptureConfig against botocore's
service model, KMS everywhere (the template security check SEC104), a bucket that forgets, and the
execution role's rights."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import aws_kms as kms
from botocore.validate import ParamValidator

from speculative_infra.constructs.data_capture import DataCaptureOptions
from speculative_infra.security import check_template
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.constructs import test_vllm_endpoint


def reference(stack: cdk.Stack, **props: Any):
    return test_vllm_endpoint.reference(stack, data_capture=DataCaptureOptions(), **props)


def _own_destination(stack: cdk.Stack):
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    options = DataCaptureOptions(
        destination_s3_uri="s3://my-capture/qwen3/", kms_key=key, sampling_percentage=100, capture="input"
    )
    return test_vllm_endpoint.reference(stack, data_capture=options)


CONFIGURATIONS = {"capture-created-bucket": {}, "capture-own-destination": "special"}


def _special(stack: cdk.Stack, name: str):
    assert name == "capture-own-destination"
    return _own_destination(stack)


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_stack(reference)[1]


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def test_snapshot(template, snapshot):
    assert normalized(template) == snapshot


def test_cfn_lint_clean(template):
    assert cfn_lint_errors(template) == []


def test_capture_config_matches_botocores_shape(template):
    (config,) = _resources(template, "AWS::SageMaker::EndpointConfig")
    capture = config["DataCaptureConfig"]
    request = {
        **capture,
        "DestinationS3Uri": "s3://bucket/datacapture/",
        "KmsKeyId": "arn:aws:kms:us-west-2:1:key/x",
    }
    shape = botocore.session.get_session().get_service_model("sagemaker").shape_for("DataCaptureConfig")
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    assert capture["InitialSamplingPercentage"] == 20
    assert capture["CaptureOptions"] == [{"CaptureMode": "Input"}, {"CaptureMode": "Output"}]
    assert capture["CaptureContentTypeHeader"] == {
        "JsonContentTypes": ["application/json", "text/event-stream"]
    }


def test_capture_is_encrypted_and_the_security_check_agrees(template):
    (config,) = _resources(template, "AWS::SageMaker::EndpointConfig")
    assert "KmsKeyId" in config["DataCaptureConfig"]
    assert not [f for f in check_template(template) if f.code == "SEC104"]
    # The check can fail: the same template without the key is flagged.
    broken = json.loads(json.dumps(template))
    for resource in broken["Resources"].values():
        if resource["Type"] == "AWS::SageMaker::EndpointConfig":
            del resource["Properties"]["DataCaptureConfig"]["KmsKeyId"]
    assert [f for f in check_template(broken) if f.code == "SEC104"]


def test_created_bucket_forgets_and_refuses_plain_http(template):
    (bucket,) = _resources(template, "AWS::S3::Bucket")
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == 30 and rule["Status"] == "Enabled"
    sse = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert sse["SSEAlgorithm"] == "aws:kms"
    (policy,) = _resources(template, "AWS::S3::BucketPolicy")
    assert any(
        s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false"
        for s in policy["PolicyDocument"]["Statement"]
    )


def test_role_writes_only_under_the_capture_prefix():
    _, data = synth_stack(_own_destination)
    statements = [s for p in _resources(data, "AWS::IAM::Policy") for s in p["PolicyDocument"]["Statement"]]
    puts = [s for s in statements if s["Action"] == "s3:PutObject"]
    assert len(puts) == 1 and "my-capture/qwen3/*" in json.dumps(puts[0]["Resource"])
    (config,) = _resources(data, "AWS::SageMaker::EndpointConfig")
    capture = config["DataCaptureConfig"]
    assert capture["DestinationS3Uri"] == "s3://my-capture/qwen3/"
    assert (
        capture["CaptureOptions"] == [{"CaptureMode": "Input"}]
        and capture["InitialSamplingPercentage"] == 100
    )
    assert not _resources(data, "AWS::S3::Bucket")  # the given destination: no bucket created


@pytest.mark.parametrize("value", [0, 100])
def test_sampling_bounds_are_accepted(value):
    assert DataCaptureOptions(sampling_percentage=value).sampling_percentage == value


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sampling_percentage": -1}, "sampling_percentage is -1; allowed: 0 to 100"),
        ({"sampling_percentage": 101}, "sampling_percentage is 101; allowed: 0 to 100"),
        ({"capture": "requests"}, "capture is 'requests'"),
        ({"retention_days": 0}, "retention_days is 0"),
        ({"json_content_types": ()}, "json_content_types has 0 items"),
        ({"destination_s3_uri": "my-capture"}, "data_capture.destination_s3_uri"),
    ],
)
def test_bad_capture_options_name_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DataCaptureOptions(**kwargs)
