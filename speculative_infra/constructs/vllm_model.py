"""SpeculativeVllmModel: the checked vLLM model (execution role, container environment, SageMaker Model)
that SpeculativeVllmEndpoint serves and BatchInference runs as a transform job: on the vLLM DLC, or for
batch on the DJL LMI container (vLLM in async mode)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from aws_cdk import Annotations, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from speculative_infra.check import CheckResult
from speculative_infra.constructs.eagle_job import TrainedDraft
from speculative_infra.constructs.execution_role import add_execution_permissions, create_execution_role
from speculative_infra.constructs.image import image_uri, repository_arn, stack_region
from speculative_infra.constructs.network import model_vpc_config
from speculative_infra.constructs.prop_checks import (
    KEY,
    ROLE,
    SECRET,
    SECURITY_GROUP,
    VPC,
    construct_path,
    require_bool,
    require_choice,
    require_instance,
    require_int,
    require_jsii,
    require_jsii_sequence,
    require_mapping,
    require_mapping_of_str,
    require_sequence,
    require_str,
)
from speculative_infra.constructs.props import as_mapping, secret_id
from speculative_infra.constructs.validation import validate_deployment
from speculative_infra.render import render_environment
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.s3_uri import S3Location, parse_s3_uri
from speculative_infra.spec import (
    DeploymentSpec,
    EngineArgs,
    ScalingOptions,
    SpecError,
    SpeculativeConfig,
    parse_spec,
)

MODEL_MOUNT_PATH = "/opt/ml/model"


class SpeculativeVllmModel(Construct):
    """A SageMaker Model on the vLLM DLC, checked at synth time like an endpoint (every rule runs:
    errors raise CompatibilityError, warnings become annotations). Its ids (`ExecutionRole`, `Model`)
    sit directly under the construct, so an endpoint built on it keeps its resource paths."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        instance_type: str,
        model_id: str | None = None,
        model_data: str | None = None,
        model_facts: Mapping[str, Any] | None = None,
        vllm_version: str | None = None,
        lmi_version: str | None = None,
        engine: EngineArgs | Mapping[str, Any] | None = None,
        speculative: SpeculativeConfig | TrainedDraft | Mapping[str, Any] | None = None,
        instance_count: int = 1,
        inference_ami_version: str | None = None,
        scaling: ScalingOptions | Mapping[str, Any] | None = None,
        role: iam.IRole | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        kms_key: kms.IKey | None = None,
        enable_network_isolation: bool = False,
        volume_size_in_gb: int | None = None,
        environment: Mapping[str, str] | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        extra_model_data: Sequence[S3Location] = (),
        serving: Literal["real_time", "async", "batch"] = "real_time",
    ) -> None:
        """
        :param instance_type: SageMaker instance type, e.g. ``ml.g7e.2xlarge``.
        :param model_id: Hugging Face model id; the container downloads it unless ``model_data`` is given.
        :param model_data: S3 URI of the uncompressed weights (a prefix); mounted at /opt/ml/model.
            Default: none (the weights come from ``model_id``).
        :param model_facts: architecture facts for a model the catalog does not know (as the spec's model
            section). Default: the catalog's.
        :param vllm_version: vLLM DLC release. Default: the newest in the catalog.
        :param lmi_version: run on the DJL LMI container of this major version instead of the vLLM DLC
            (batch only: rule SI602). Default: none (the vLLM DLC).
        :param engine: vLLM engine args (snake_case). Default: chosen by resolve (see `resolved.defaults`).
        :param speculative: vLLM speculative config, or ``EagleOptimizationJob.as_speculative_config()``
            (the trained draft is mounted at /opt/ml/model). Default: none (no speculative decoding).
        :param instance_count: instances that serve it. Default: 1.
        :param inference_ami_version: host image: "auto", "default" or a host image name (see
            SpeculativeVllmEndpoint). Default: "auto".
        :param scaling: the endpoint's auto-scaling, checked with the rest. Default: none.
        :param role: execution role. Default: a role is created with least privilege.
        :param vpc: VPC for the model containers. Default: none (SageMaker's network).
        :param vpc_subnets: Default: the VPC's private subnets.
        :param security_groups: Default: one is created when ``vpc`` is given.
        :param kms_key: key for the ML storage volume. Default: AWS managed encryption.
        :param enable_network_isolation: no outbound network from the container (needs ``model_data``).
            Default: false.
        :param volume_size_in_gb: ML storage volume size. Default: SageMaker's.
        :param environment: extra container environment, checked against SageMaker's limits. Default: none.
        :param hf_token: a secret holding a Hugging Face token, for gated models. Default: none.
        :param extra_model_data: more S3 prefixes the role may read. Default: none.
        :param serving: how it is served ("real_time", "async" or "batch"); the rules check
            the deployment for that kind. Default: "real_time".
        """
        check_model_props(
            construct_path(scope, construct_id),
            instance_type=instance_type,
            model_id=model_id,
            model_data=model_data,
            model_facts=model_facts,
            vllm_version=vllm_version,
            lmi_version=lmi_version,
            engine=engine,
            speculative=speculative,
            instance_count=instance_count,
            inference_ami_version=inference_ami_version,
            scaling=scaling,
            role=role,
            vpc=vpc,
            vpc_subnets=vpc_subnets,
            security_groups=security_groups,
            kms_key=kms_key,
            enable_network_isolation=enable_network_isolation,
            volume_size_in_gb=volume_size_in_gb,
            environment=environment,
            hf_token=hf_token,
            extra_model_data=extra_model_data,
            serving=serving,
        )
        super().__init__(scope, construct_id)
        if model_id is None and model_data is None:
            raise ValueError(f"{self.node.path}: give model_id (a Hugging Face id) or model_data (an S3 URI)")
        self._model_data = parse_s3_uri(model_data, "model_data") if model_data is not None else None
        self._trained_draft = speculative if isinstance(speculative, TrainedDraft) else None
        speculative_config = speculative.config if isinstance(speculative, TrainedDraft) else speculative
        if self._trained_draft is not None and self._model_data is not None:
            raise ValueError(
                f"{self.node.path}: a trained draft and model_data both need the model's one ModelDataSource; "
                "load the target from model_id when serving a draft from EagleOptimizationJob"
            )
        if enable_network_isolation and self._model_data is None:
            raise ValueError(
                f"{self.node.path}: enable_network_isolation needs model_data: an isolated container cannot "
                "download weights from Hugging Face"
            )
        if lmi_version is not None and vllm_version is not None:
            raise ValueError(
                f"{self.node.path}: give vllm_version (the vLLM DLC) or lmi_version (the LMI container), not both"
            )
        container_request = (
            {"framework": "lmi", "version": lmi_version}
            if lmi_version is not None
            else {"framework": "vllm", "version": vllm_version}
        )
        spec_data: dict[str, Any] = {
            "region": stack_region(self),
            "instance_type": instance_type,
            "instance_count": instance_count,
            "volume_size_in_gb": volume_size_in_gb,
            "container": container_request,
            "model": {
                "id": model_id or model_data,
                "weights": "s3" if model_data is not None else "hub",
                **dict(model_facts or {}),
            },
            "engine": as_mapping(engine),
            "speculative": as_mapping(speculative_config) if speculative_config is not None else None,
            "inference_ami_version": inference_ami_version,
            "environment": dict(environment or {}),
            "hf_token_secret": secret_id(hf_token),
            "scaling": as_mapping(scaling) if scaling is not None else None,
            "serving": serving,
        }
        if Token.is_unresolved(instance_type):
            raise ValueError(f"{self.node.path}: instance_type must be a literal: every check depends on it")
        try:
            spec = parse_spec(spec_data, source=self.node.path)
        except SpecError as err:
            raise ValueError(str(err)) from None
        self.spec: DeploymentSpec = spec
        self.check_result: CheckResult = validate_deployment(self, spec)
        self.resolved: ResolvedDeployment = self.check_result.deployment
        container = self.resolved.container
        assert container is not None  # guaranteed by the rules (SI120)

        draft_data = (
            S3Location(bucket=self._trained_draft.bucket.bucket_name, key=self._trained_draft.key_prefix)
            if self._trained_draft is not None
            else None
        )
        readable = [loc for loc in (self._model_data, draft_data, *extra_model_data) if loc is not None]
        self.role: iam.IRole
        if role is None:
            self.role = create_execution_role(
                self,
                "ExecutionRole",
                image_repository_arns=[repository_arn(self, container)],
                model_data=readable,
                kms_key=kms_key,
                in_vpc=vpc is not None,
            )
        else:
            self.role = role
            add_execution_permissions(
                role,
                image_repository_arns=[repository_arn(self, container)],
                model_data=readable,
                kms_key=kms_key,
                in_vpc=vpc is not None,
            )

        if self._trained_draft is not None and not self._trained_draft.waits_for_completion:
            Annotations.of(self).add_warning_v2(
                "speculative-infra:draft-not-awaited",
                "the EagleOptimizationJob does not wait for its job (wait=False): the endpoint will find no "
                "draft until the job completes; deploy the endpoint in a later update",
            )
        environment = render_environment(
            self.resolved, model_location=MODEL_MOUNT_PATH if self._model_data is not None else None
        )
        self.environment: dict[str, str] = dict(environment or {})
        vpc_config, self.security_groups = model_vpc_config(self, vpc, vpc_subnets, security_groups)
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image_uri(self, container),
                environment=self.environment,
                model_data_source=self._model_data_source(),
            ),
            enable_network_isolation=enable_network_isolation or None,
            vpc_config=vpc_config,
        )

        if self._trained_draft is not None:  # the draft exists once the job's resource is complete
            self.model.node.add_dependency(self._trained_draft.job)

    def _model_data_source(self) -> sagemaker.CfnModel.ModelDataSourceProperty | None:
        if self._trained_draft is not None:
            uri = self._trained_draft.s3_uri
        elif self._model_data is not None:
            uri = self._model_data.uri if self._model_data.uri.endswith("/") else self._model_data.uri + "/"
        else:
            return None
        return sagemaker.CfnModel.ModelDataSourceProperty(
            s3_data_source=sagemaker.CfnModel.S3DataSourceProperty(
                s3_uri=uri, s3_data_type="S3Prefix", compression_type="None"
            )
        )


def check_model_props(
    where: str,
    *,
    instance_type: Any,
    model_id: Any,
    model_data: Any,
    model_facts: Any,
    vllm_version: Any,
    lmi_version: Any,
    engine: Any,
    speculative: Any,
    instance_count: Any,
    inference_ami_version: Any,
    scaling: Any,
    role: Any,
    vpc: Any,
    vpc_subnets: Any,
    security_groups: Any,
    kms_key: Any,
    enable_network_isolation: Any,
    volume_size_in_gb: Any,
    environment: Any,
    hf_token: Any,
    extra_model_data: Any,
    serving: Any,
) -> None:
    """The model props' types (and that none is ignored), before any jsii call sees them. Their values
    (counts, sizes, engine args) are the spec's to check."""
    require_str(instance_type, "instance_type", where, optional=False, non_empty=True)
    for name, value in (
        ("model_id", model_id),
        ("model_data", model_data),
        ("vllm_version", vllm_version),
        ("lmi_version", lmi_version),
        ("inference_ami_version", inference_ami_version),
    ):
        require_str(value, name, where)
    require_mapping(model_facts, "model_facts", where)
    require_mapping(engine, "engine", where, models=(EngineArgs,))
    require_mapping(speculative, "speculative", where, models=(SpeculativeConfig, TrainedDraft))
    require_mapping(scaling, "scaling", where, models=(ScalingOptions,))
    require_int(instance_count, "instance_count", where)
    require_int(volume_size_in_gb, "volume_size_in_gb", where, optional=True)
    require_bool(enable_network_isolation, "enable_network_isolation", where)
    require_mapping_of_str(environment, "environment", where)
    require_jsii(role, ROLE, "role", where)
    require_jsii(kms_key, KEY, "kms_key", where)
    require_jsii(hf_token, SECRET, "hf_token", where)
    require_jsii(vpc, VPC, "vpc", where)
    require_instance(vpc_subnets, ec2.SubnetSelection, "vpc_subnets", where)
    if security_groups is not None:
        require_jsii_sequence(security_groups, SECURITY_GROUP, "security_groups", where)
    if vpc is None:
        given = [n for n, v in (("vpc_subnets", vpc_subnets), ("security_groups", security_groups)) if v]
        if given:
            raise ValueError(
                f"{where}: {' and '.join(given)} apply to the model's VPC; give vpc too (without it the "
                "containers run in SageMaker's network and these would be ignored)"
            )
    require_sequence(
        extra_model_data,
        "extra_model_data",
        where,
        lambda item, name: require_instance(item, S3Location, name, where, optional=False),
        optional=False,
    )
    require_choice(serving, ("real_time", "async", "batch"), "serving", where)
