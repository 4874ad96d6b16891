"""The project's own SageMaker security checks: compliant templates pass, crafted violations fail,
and every template the constructs synthesize passes."""

from __future__ import annotations

import pytest
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match

from speculative_infra.security import CHECKS, check_template
from tests.cfn import synth_stack
from tests.constructs import test_vllm_endpoint
from tests.security.test_cdk_nag import _build, _configurations


def _policy(actions, resource):
    return {
        "Type": "AWS::IAM::Policy",
        "Properties": {
            "PolicyDocument": {"Statement": [{"Effect": "Allow", "Action": actions, "Resource": resource}]}
        },
    }


NON_COMPLIANT = {
    "SEC100": {"Resources": {"P": _policy("sagemaker:*", "arn:aws:sagemaker:us-east-1:1:endpoint/x")}},
    "SEC101": {"Resources": {"P": _policy(["sagemaker:InvokeEndpoint"], "*")}},
    "SEC102": {
        "Resources": {
            "M": {
                "Type": "AWS::SageMaker::Model",
                "Properties": {
                    "EnableNetworkIsolation": True,
                    "PrimaryContainer": {"Image": "x", "Environment": {"SM_VLLM_MODEL": "a/b"}},
                },
            }
        }
    },
    "SEC103": {
        "Resources": {
            "M": {
                "Type": "AWS::SageMaker::Model",
                "Properties": {
                    "PrimaryContainer": {"Image": "x"},
                    "VpcConfig": {"Subnets": ["s"], "SecurityGroupIds": []},
                },
            }
        }
    },
    "SEC104": {
        "Resources": {
            "C": {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": {
                    "ProductionVariants": [],
                    "DataCaptureConfig": {"InitialSamplingPercentage": 10},
                },
            }
        }
    },
    "SEC105": {
        "Resources": {
            "IC": {
                "Type": "AWS::SageMaker::InferenceComponent",
                "Properties": {"Specification": {"Container": {"Environment": {"HF_TOKEN": "hf_abc"}}}},
            }
        }
    },
}
COMPLIANT = {
    "SEC100": {
        "Resources": {"P": _policy(["sagemaker:InvokeEndpoint"], "arn:aws:sagemaker:us-east-1:1:endpoint/x")}
    },
    "SEC101": {"Resources": {"P": _policy(["ecr:GetAuthorizationToken"], "*")}},
    "SEC102": {
        "Resources": {
            "M": {
                "Type": "AWS::SageMaker::Model",
                "Properties": {
                    "EnableNetworkIsolation": True,
                    "PrimaryContainer": {"Image": "x", "ModelDataSource": {"S3DataSource": {}}},
                },
            }
        }
    },
    "SEC103": {
        "Resources": {
            "M": {
                "Type": "AWS::SageMaker::Model",
                "Properties": {
                    "PrimaryContainer": {"Image": "x"},
                    "VpcConfig": {"Subnets": ["s"], "SecurityGroupIds": ["g"]},
                },
            }
        }
    },
    "SEC104": {
        "Resources": {
            "C": {
                "Type": "AWS::SageMaker::EndpointConfig",
                "Properties": {"ProductionVariants": [], "DataCaptureConfig": {"KmsKeyId": "k"}},
            }
        }
    },
    "SEC105": {
        "Resources": {
            "M": {
                "Type": "AWS::SageMaker::Model",
                "Properties": {
                    "PrimaryContainer": {
                        "Image": "x",
                        "Environment": {
                            "HF_TOKEN": {
                                "Fn::Join": [
                                    "",
                                    ["{{resolve:secretsmanager:", {"Ref": "S"}, ":SecretString:::}}"],
                                ]
                            }
                        },
                    }
                },
            }
        }
    },
}


def test_every_check_has_cases():
    assert set(CHECKS) == set(NON_COMPLIANT) == set(COMPLIANT)


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_non_compliant(code):
    assert code in {f.code for f in check_template(NON_COMPLIANT[code])}


@pytest.mark.parametrize("code", sorted(CHECKS))
def test_compliant(code):
    assert check_template(COMPLIANT[code]) == []


@pytest.mark.parametrize(
    ("label", "module", "name", "build"),
    list(_configurations()),
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_construct_templates_pass(label, module, name, build):
    _, template = synth_stack(lambda s: _build(module, name, build, s), region="us-east-1")
    assert check_template(template) == []


def test_kms_key_reaches_the_endpoint_config_and_volume():
    def build(stack):
        key = kms.Key(stack, "Key", enable_key_rotation=True)
        test_vllm_endpoint.reference(stack, kms_key=key)

    template, _ = synth_stack(build)
    template.has_resource_properties(
        "AWS::SageMaker::EndpointConfig",
        {"KmsKeyId": {"Fn::GetAtt": [Match.string_like_regexp("^Key"), "Arn"]}},
    )


def test_network_isolation_and_vpc_are_honoured():
    template, raw = synth_stack(lambda s: test_vllm_endpoint._special(s, "s3-weights-vpc-kms-isolated"))
    template.has_resource_properties(
        "AWS::SageMaker::Model",
        {
            "EnableNetworkIsolation": True,
            "VpcConfig": {"SecurityGroupIds": Match.any_value(), "Subnets": Match.any_value()},
        },
    )
    assert check_template(raw) == []
