"""Keep a promoted EAGLE head through later `cdk deploy`s that change only the endpoint config.

The endpoint's model reads the served head from SSM through a CloudFormation dynamic reference, which
CloudFormation resolves only when it creates or updates the model. A deployment that replaces only the
endpoint config (instance count, capture settings), or updates only the endpoint (its deployment
config), would point the endpoint back at the config and model it created with the head of that day,
undoing what EagleRetrainingLoop promoted. Giving the model a digest of the config's and the endpoint's
properties makes every such change replace the model too, so the head is resolved again and the endpoint
moves to a new config; the endpoint is updated either way, so this costs no extra deployment.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import jsii
from aws_cdk import IStableStringProducer, Lazy, Stack
from aws_cdk import aws_sagemaker as sagemaker

CONFIG_DIGEST_ENV = "SPECULATIVE_INFRA_DEPLOYMENT_DIGEST"
# The endpoint config's properties whose change replaces it (its schema's createOnlyProperties; a tag
# change is made in place and leaves the endpoint alone, so tags are not here).
_CONFIG_PROPERTIES = (
    "production_variants",
    "shadow_production_variants",
    "data_capture_config",
    "async_inference_config",
    "explainer_config",
    "metrics_config",
    "kms_key_id",
    "execution_role_arn",
    "enable_network_isolation",
    "vpc_config",
    "endpoint_config_name",
)
# The endpoint's properties whose change calls UpdateEndpoint with CloudFormation's config (tags do not).
_ENDPOINT_PROPERTIES = (
    "deployment_config",
    "retain_all_variant_properties",
    "exclude_retained_variant_properties",
    "retain_deployment_config",
)


@jsii.implements(IStableStringProducer)
class _DeploymentDigest:
    def __init__(self, config: sagemaker.CfnEndpointConfig, endpoint: sagemaker.CfnEndpoint) -> None:
        self._parts = ((config, _CONFIG_PROPERTIES), (endpoint, _ENDPOINT_PROPERTIES))

    def produce(self) -> str:
        properties: dict[str, Any] = {}
        for resource, names in self._parts:
            stack = Stack.of(resource)
            for name in names:
                properties[f"{resource.cfn_resource_type}.{name}"] = stack.resolve(
                    getattr(resource, name, None)
                )
        text = json.dumps(properties, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def replace_model_with_deployment(
    model: sagemaker.CfnModel, config: sagemaker.CfnEndpointConfig, endpoint: sagemaker.CfnEndpoint
) -> None:
    """Add the digest of the config and the endpoint to the model's container environment (at synth)."""
    model.add_property_override(
        f"PrimaryContainer.Environment.{CONFIG_DIGEST_ENV}", Lazy.string(_DeploymentDigest(config, endpoint))
    )
