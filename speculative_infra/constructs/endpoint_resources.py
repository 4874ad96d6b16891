"""The endpoint config and endpoint pair both endpoint constructs create, with the same ids and order."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct


@dataclass(frozen=True)
class EndpointResources:
    config: sagemaker.CfnEndpointConfig
    endpoint: sagemaker.CfnEndpoint


def create_endpoint(
    scope: Construct,
    *,
    variant: sagemaker.CfnEndpointConfig.ProductionVariantProperty,
    role: iam.IRole,
    kms_key: kms.IKey | None,
    endpoint_name: str | None,
    config_role: bool = False,
    deployment_config: sagemaker.CfnEndpoint.DeploymentConfigProperty | None = None,
    async_inference_config: sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty | None = None,
    data_capture_config: sagemaker.CfnEndpointConfig.DataCaptureConfigProperty | None = None,
) -> EndpointResources:
    """`EndpointConfig` and `Endpoint` under `scope`.

    :param config_role: name the role on the endpoint config, which SageMaker needs for inference
        components (they have no model of their own at the endpoint level).
    """
    config = sagemaker.CfnEndpointConfig(
        scope,
        "EndpointConfig",
        execution_role_arn=role.role_arn if config_role else None,
        production_variants=[variant],
        kms_key_id=kms_key.key_arn if kms_key is not None else None,
        async_inference_config=async_inference_config,
        data_capture_config=data_capture_config,
    )
    endpoint = sagemaker.CfnEndpoint(
        scope,
        "Endpoint",
        endpoint_config_name=config.attr_endpoint_config_name,
        endpoint_name=endpoint_name,
        deployment_config=deployment_config,
    )
    # The container pulls its image with the role's policy: create the endpoint only once the policy exists.
    endpoint.node.add_dependency(role)
    return EndpointResources(config, endpoint)
