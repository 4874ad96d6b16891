"""What preflight checks, per region: instances needed at maximum capacity, models, S3 data.

From a spec, or from a synthesized app (a cloud assembly such as cdk.out): every stack's endpoint
configurations (instance type, initial count, managed instance scaling maximum, the scaling target's
maximum), its models' Hub ids and S3 data. Stacks of one region share the account's quotas, so their
needs add up.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from speculative_infra.safe_files import MAX_TEMPLATE_BYTES, InputFileError, read_json
from speculative_infra.spec import DeploymentSpec

# Environment variables the containers read their Hugging Face model id from (vLLM DLC, LMI).
_MODEL_VARIABLES = ("SM_VLLM_MODEL", "HF_MODEL_ID")


@dataclass
class Target:
    """One region's worth of deployment."""

    region: str | None  # None: an environment-agnostic stack (needs --region)
    instances: dict[str, int] = field(default_factory=dict)  # instance type -> instances at maximum
    hub_models: list[str] = field(default_factory=list)  # Hub ids the containers download
    s3_uris: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)  # the stacks or spec it came from


def spec_target(spec: DeploymentSpec, region: str, source: str) -> Target:
    needed = spec.instance_count
    if spec.scaling is not None and spec.container.framework == "vllm":
        needed = max(needed, spec.scaling.max_capacity)
    models = [spec.model.id] if spec.model.weights == "hub" else []
    return Target(region=region, instances={spec.instance_type: needed}, hub_models=models, sources=[source])


class AssemblyError(ValueError):
    """The folder is not a readable cloud assembly."""


def _get_atts(value: Any) -> Iterator[str]:
    """Logical ids that a property references with Fn::GetAtt or Ref."""
    if isinstance(value, dict):
        if "Fn::GetAtt" in value and isinstance(value["Fn::GetAtt"], list) and value["Fn::GetAtt"]:
            yield str(value["Fn::GetAtt"][0])
        if "Ref" in value:
            yield str(value["Ref"])
        for item in value.values():
            yield from _get_atts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _get_atts(item)


def _stack_needs(template: dict[str, Any]) -> tuple[dict[str, int], list[str], list[str]]:
    resources = template.get("Resources", {})
    by_type: dict[str, dict[str, dict[str, Any]]] = {}
    for logical_id, resource in resources.items():
        by_type.setdefault(resource.get("Type", ""), {})[logical_id] = resource.get("Properties", {})
    config_of_endpoint = {
        endpoint_id: next(iter(_get_atts(props.get("EndpointConfigName"))), "")
        for endpoint_id, props in by_type.get("AWS::SageMaker::Endpoint", {}).items()
    }
    scaled_max: dict[str, int] = {}  # endpoint config -> the instance scaling target's maximum
    for props in by_type.get("AWS::ApplicationAutoScaling::ScalableTarget", {}).values():
        if props.get("ScalableDimension") != "sagemaker:variant:DesiredInstanceCount":
            continue
        for endpoint_id in _get_atts(props.get("ResourceId")):
            config = config_of_endpoint.get(endpoint_id)
            if config and isinstance(props.get("MaxCapacity"), int):
                scaled_max[config] = max(scaled_max.get(config, 0), props["MaxCapacity"])
    instances: dict[str, int] = {}
    for config_id, props in by_type.get("AWS::SageMaker::EndpointConfig", {}).items():
        for variant in props.get("ProductionVariants", []):
            instance_type = variant.get("InstanceType")
            if not isinstance(instance_type, str):
                continue
            managed = (variant.get("ManagedInstanceScaling") or {}).get("MaxInstanceCount")
            counts = [variant.get("InitialInstanceCount"), managed, scaled_max.get(config_id)]
            needed = max((c for c in counts if isinstance(c, int)), default=1)
            instances[instance_type] = instances.get(instance_type, 0) + needed
    models: list[str] = []
    s3_uris: list[str] = []
    containers = [
        props.get("PrimaryContainer", {}) for props in by_type.get("AWS::SageMaker::Model", {}).values()
    ]
    containers += [
        (props.get("Specification") or {}).get("Container", {})
        for props in by_type.get("AWS::SageMaker::InferenceComponent", {}).values()
    ]
    for container in containers:
        environment = container.get("Environment") or {}
        for variable in _MODEL_VARIABLES:
            value = environment.get(variable)
            if isinstance(value, str) and "/" in value and not value.startswith(("/", "s3://")):
                models.append(value)
        uri = ((container.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
        if isinstance(uri, str):
            s3_uris.append(uri)
    return instances, sorted(set(models)), sorted(set(s3_uris))


def merge_by_region(targets: list[Target]) -> list[Target]:
    """Stacks of one region share its quotas: their needs add up."""
    merged: dict[str | None, Target] = {}
    for target in targets:
        into = merged.setdefault(target.region, Target(region=target.region))
        for instance_type, count in target.instances.items():
            into.instances[instance_type] = into.instances.get(instance_type, 0) + count
        into.hub_models = sorted({*into.hub_models, *target.hub_models})
        into.s3_uris = sorted({*into.s3_uris, *target.s3_uris})
        into.sources += target.sources
    return list(merged.values())


def assembly_targets(folder: Path, default_region: str | None = None) -> list[Target]:
    """One target per region of the app's stacks (a stack without a region: region None)."""
    if not folder.is_dir():
        raise AssemblyError(f"{folder}: not a cloud assembly (not a directory; give the cdk.out folder)")
    try:
        manifest = read_json(folder / "manifest.json", max_bytes=MAX_TEMPLATE_BYTES, what="manifest.json")
    except InputFileError as err:
        raise AssemblyError(f"{folder}: not a cloud assembly ({err})") from None
    artifacts = manifest.get("artifacts") if isinstance(manifest, dict) else None
    if not isinstance(artifacts, dict):
        raise AssemblyError(f"{folder}/manifest.json: no 'artifacts' object; not a cloud assembly's manifest")
    targets = []
    for name, artifact in artifacts.items():
        if not isinstance(artifact, dict) or artifact.get("type") != "aws:cloudformation:stack":
            continue
        region = str(artifact.get("environment", "")).rsplit("/", 1)[-1]
        properties = artifact.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        template_name = properties.get("templateFile", f"{name}.template.json")
        template_file = folder / str(template_name)
        # The manifest names files inside the assembly; a path that leaves it (or no path) is not CDK's.
        try:
            inside = template_file.resolve().is_relative_to(folder.resolve())
        except (OSError, ValueError):  # a NUL in the name, a symlink loop
            inside = False
        if not inside:
            raise AssemblyError(
                f"{folder}/manifest.json: templateFile {template_name!r} is outside the assembly"
            )
        try:
            template = read_json(template_file, max_bytes=MAX_TEMPLATE_BYTES, what="stack template")
        except InputFileError as err:
            raise AssemblyError(f"cannot read the stack's template ({err})") from None
        try:
            instances, models, s3_uris = _stack_needs(template)
        except (
            AttributeError,
            TypeError,
            ValueError,
            IndexError,
            KeyError,
        ):  # a value of the wrong JSON type
            raise AssemblyError(
                f"{template_file}: not shaped as a CloudFormation template (Resources, Properties and "
                "their values must be objects, lists and strings as CloudFormation writes them)"
            ) from None
        known = None if region in ("", "unknown-region") else region
        targets.append(Target(known or default_region, instances, models, s3_uris, [name]))
    return merge_by_region(targets)
