"""SpeculativeVllmEndpoint: a SageMaker real-time endpoint on the vLLM DLC with speculative decoding."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aws_cdk import Duration, Fn, Tags
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from speculative_infra.constructs.async_inference import (
    AsyncInferenceOptions,
    add_async_scaling,
    async_inference_config,
    grant_async_outputs,
)
from speculative_infra.constructs.benchmark_target import BenchmarkTarget
from speculative_infra.constructs.data_capture import (
    CaptureDestination,
    DataCaptureOptions,
    capture_destination,
    data_capture_config,
    grant_capture,
)
from speculative_infra.constructs.eagle_job import TrainedDraft
from speculative_infra.constructs.endpoint_benchmark import BenchmarkOptions, EndpointBenchmark
from speculative_infra.constructs.endpoint_resources import create_endpoint
from speculative_infra.constructs.metrics import EndpointMetrics
from speculative_infra.constructs.monitoring_target import MonitoringTarget
from speculative_infra.constructs.observability import Observable
from speculative_infra.constructs.planned_workload import (
    PlannedEndpoint,
    PlannedWorkload,
    parse_workload,
    scaling_levels,
)
from speculative_infra.constructs.policies import grant_invoke
from speculative_infra.constructs.prop_checks import (
    ALARM,
    construct_path,
    require_choice,
    require_duration,
    require_instance,
    require_int,
    require_jsii_sequence,
    require_mapping,
    require_resource_name,
    require_tags,
)
from speculative_infra.constructs.props import (
    default_timeouts,
    publish_cost,
    timeout_seconds,
)
from speculative_infra.constructs.scaling import add_auto_scaling, default_target_value
from speculative_infra.constructs.served_head_refresh import replace_model_with_deployment
from speculative_infra.constructs.vllm_model import SpeculativeVllmModel
from speculative_infra.cost import CostEstimate
from speculative_infra.s3_uri import S3Location
from speculative_infra.spec import (
    DeploymentSpec,
    EngineArgs,
    ScalingOptions,
    SpeculativeConfig,
    load_spec,
    parse_spec,
)

VARIANT_NAME = "AllTraffic"
MODEL_MOUNT_PATH = "/opt/ml/model"
MAX_ROLLBACK_ALARMS = 10  # SageMaker API reference, AutoRollbackConfig: Alarms, 1-10 items


@dataclass(frozen=True)
class DeploymentGuardrails:
    """How endpoint updates roll out, and the alarms that roll them back.

    :param strategy: "blue_green" (default) or "rolling".
    :param alarms: CloudWatch alarms that trigger auto-rollback (at most 10). Default: none.
    :param wait_interval_seconds: bake time before the switch (0-3600). Default: 300.
    :param termination_wait_seconds: blue/green only, how long the old fleet stays (0-3600). Default: 300.
    :param rolling_batch_percent: rolling only, share of capacity per batch (5-50). Default: 25.
    """

    strategy: Literal["blue_green", "rolling"] = "blue_green"
    alarms: Sequence[cloudwatch.IAlarm] = ()
    wait_interval_seconds: int = 300
    # None: the default of the strategy it applies to (300 s, 25%); given for the other strategy, refused.
    termination_wait_seconds: int | None = None
    rolling_batch_percent: int | None = None

    def __post_init__(self) -> None:
        where = "DeploymentGuardrails"
        require_choice(self.strategy, ("blue_green", "rolling"), "strategy", where)
        # SageMaker API reference: AutoRollbackConfig.Alarms 1-10 items; TrafficRoutingConfig and
        # RollingUpdatePolicy WaitIntervalInSeconds 0-3600; BlueGreenUpdatePolicy
        # TerminationWaitInSeconds 0-3600; rolling MaximumBatchSize CAPACITY_PERCENT 5-50 (the
        # "Rolling deployments" guide).
        require_jsii_sequence(self.alarms, ALARM, "alarms", where)
        if len(self.alarms) > MAX_ROLLBACK_ALARMS:
            raise ValueError(
                f"{where}: alarms has {len(self.alarms)} alarms; allowed: at most {MAX_ROLLBACK_ALARMS}"
            )
        require_int(self.wait_interval_seconds, "wait_interval_seconds", where, low=0, high=3600)
        applies = {"termination_wait_seconds": "blue_green", "rolling_batch_percent": "rolling"}
        for name, low, high, default in (
            ("termination_wait_seconds", 0, 3600, 300),
            ("rolling_batch_percent", 5, 50, 25),
        ):
            value = getattr(self, name)
            if value is None:
                if applies[name] == self.strategy:
                    object.__setattr__(self, name, default)
                continue
            if applies[name] != self.strategy:
                raise ValueError(
                    f"{where}: {name} ({value!r}) applies to strategy {applies[name]!r} only; the strategy is "
                    f"{self.strategy!r}, which would ignore it"
                )
            require_int(value, name, where, low=low, high=high)


class SpeculativeVllmEndpoint(SpeculativeVllmModel, EndpointMetrics, Observable, PlannedEndpoint):
    """A SageMaker real-time endpoint serving one model with vLLM, checked at synth time.

    Construction resolves the deployment against the catalog and runs every compatibility rule:
    errors raise CompatibilityError (all at once), warnings become CDK annotations.
    """

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
        engine: EngineArgs | Mapping[str, Any] | None = None,
        speculative: SpeculativeConfig | TrainedDraft | Mapping[str, Any] | None = None,
        instance_count: int = 1,
        inference_ami_version: str | None = None,
        scaling: ScalingOptions | Mapping[str, Any] | None = None,
        role: iam.IRole | None = None,
        endpoint_name: str | None = None,
        vpc: ec2.IVpc | None = None,
        vpc_subnets: ec2.SubnetSelection | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] | None = None,
        kms_key: kms.IKey | None = None,
        enable_network_isolation: bool = False,
        volume_size_in_gb: int | None = None,
        container_startup_health_check_timeout: Duration | None = None,
        model_data_download_timeout: Duration | None = None,
        environment: Mapping[str, str] | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        tags: Mapping[str, str] | None = None,
        deployment_guardrails: DeploymentGuardrails | None = None,
        benchmark: BenchmarkOptions | Mapping[str, Any] | None = None,
        extra_model_data: Sequence[S3Location] = (),
        async_inference: AsyncInferenceOptions | None = None,
        data_capture: DataCaptureOptions | None = None,
        workload: PlannedWorkload | Mapping[str, Any] | None = None,
    ) -> None:
        """
        :param instance_type: SageMaker instance type, e.g. ``ml.g7e.2xlarge``.
        :param model_id: Hugging Face model id; the container downloads it unless ``model_data`` is given.
        :param model_data: S3 URI of the uncompressed weights (a prefix); mounted at /opt/ml/model.
            Default: none (the weights come from ``model_id``).
        :param model_facts: architecture facts for a model the catalog does not know (as the spec's model
            section). Default: the catalog's.
        :param vllm_version: vLLM DLC release. Default: the newest in the catalog.
        :param engine: vLLM engine args (snake_case). Default: chosen by resolve (see `resolved.defaults`).
        :param speculative: vLLM speculative config, or ``EagleOptimizationJob.as_speculative_config()``
            (the trained draft is mounted at /opt/ml/model). Default: none (no speculative decoding).
        :param instance_count: initial instance count. Default: 1.
        :param inference_ami_version: host image: "auto", "default" (SageMaker's default host image,
            whatever it is) or a host image name such as ``al2023-ami-sagemaker-inference-gpu-4-1``.
            Default: "auto" (also for None), as in the spec and the CLI: SageMaker's default host where its
            driver is documented or observed to run the container on this GPU, else the host image whose
            driver drives the GPU and runs the container's CUDA (``resolved.host.reason`` says which).
        :param scaling: traffic-aware auto-scaling of the instance count. Default: none.
        :param role: execution role. Default: a role is created with least privilege.
        :param endpoint_name: Default: generated by CloudFormation.
        :param vpc: VPC for the model containers. Default: none (SageMaker's network).
        :param vpc_subnets: Default: the VPC's private subnets.
        :param security_groups: Default: one is created when ``vpc`` is given.
        :param kms_key: key for the ML storage volume. Default: AWS managed encryption.
        :param enable_network_isolation: no outbound network from the container (needs ``model_data``).
            Default: false.
        :param volume_size_in_gb: ML storage volume size. Default: SageMaker's (instances with NVMe
            storage, such as g5/g6/g6e/g7e, do not accept one: rule SI101).
        :param container_startup_health_check_timeout: Default: sized to the weights (>= 10 minutes).
        :param model_data_download_timeout: Default: sized to the weights (>= 10 minutes).
        :param environment: extra container environment, checked against SageMaker's limits. Default: none.
        :param hf_token: a secret whose value is a Hugging Face token, for gated models (rule SI531). The
            container gets it as HF_TOKEN through a CloudFormation dynamic reference: the template holds
            the secret's ARN, never the token; DescribeModel still shows the resolved value. Default: none.
        :param tags: tags on every resource. Default: none.
        :param deployment_guardrails: blue/green or rolling updates with auto-rollback. Default: none.
        :param benchmark: benchmark the endpoint after every deployment (EndpointBenchmark), with optional
            gates that roll a deployment back. Default: none.
        :param async_inference: serve asynchronously (InvokeEndpointAsync, answers in S3), scaling on the
            backlog and allowed to scale to zero (``scaling.min_capacity`` 0). Default: none (real time).
        :param data_capture: capture a share of the traffic to S3 under KMS (for replay with
            ``speculative-infra bench --dataset`` and EAGLE retraining). Default: none.
        :param workload: the tokens per request the endpoint is expected to serve (PlannedWorkload). The
            planner's prediction for one instance at the scaling target's concurrency is stated as an info
            annotation at synth, kept in ``planned_levels``, and published by ``benchmark`` beside what it
            measures. Default: none (no prediction).
        """
        where = construct_path(scope, construct_id)
        require_resource_name(endpoint_name, "endpoint_name", where)
        for name, timeout in (
            ("container_startup_health_check_timeout", container_startup_health_check_timeout),
            ("model_data_download_timeout", model_data_download_timeout),
        ):
            require_duration(timeout, name, where)  # its range: timeout_seconds (the same message as ever)
        require_tags(tags, "tags", where)
        require_instance(deployment_guardrails, DeploymentGuardrails, "deployment_guardrails", where)
        require_mapping(benchmark, "benchmark", where, models=(BenchmarkOptions,))
        require_instance(async_inference, AsyncInferenceOptions, "async_inference", where)
        require_instance(data_capture, DataCaptureOptions, "data_capture", where)
        require_mapping(workload, "workload", where, models=(PlannedWorkload,))
        super().__init__(
            scope,
            construct_id,
            instance_type=instance_type,
            model_id=model_id,
            model_data=model_data,
            model_facts=model_facts,
            vllm_version=vllm_version,
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
            serving="async" if async_inference is not None else "real_time",
        )
        self.async_inference = async_inference
        self.data_capture = data_capture
        self.workload = parse_workload(workload, self.node.path)
        if async_inference is not None and benchmark is not None:
            raise ValueError(
                f"{self.node.path}: benchmark measures streamed answers (InvokeEndpointWithResponseStream), "
                "which an asynchronous endpoint does not serve; leave benchmark out with async_inference"
            )
        self._build_endpoint(
            self.spec,
            kms_key=kms_key,
            endpoint_name=endpoint_name,
            startup_timeout=container_startup_health_check_timeout,
            download_timeout=model_data_download_timeout,
            tags=tags,
            guardrails=deployment_guardrails,
        )
        levels = scaling_levels(
            self.spec.scaling if async_inference is None else None,  # an async target is a backlog
            self.scaling_target_value,
            self._max_num_seqs(),
        )
        self._announce_plan(levels, self.cost.usd_per_hour, "instance")
        self.benchmark: EndpointBenchmark | None = None
        if benchmark is not None:
            self.benchmark = EndpointBenchmark(self, "Benchmark", target=self, options=benchmark)

    @classmethod
    def from_spec(
        cls,
        scope: Construct,
        construct_id: str,
        spec: DeploymentSpec | Mapping[str, Any] | str | Path,
        **props: Any,
    ) -> SpeculativeVllmEndpoint:
        """Build from a DeploymentSpec (model, mapping or YAML path); other props as keyword arguments."""
        parsed = load_spec(spec) if isinstance(spec, (str, Path)) else parse_spec(spec)
        if parsed.container.framework != "vllm":
            raise ValueError(
                f"{construct_id}: container.framework is {parsed.container.framework!r}; "
                "SpeculativeVllmEndpoint serves the vLLM DLC (use LmiInferenceComponent for lmi)"
            )
        return cls(
            scope,
            construct_id,
            instance_type=parsed.instance_type,
            model_id=parsed.model.id,
            model_facts=parsed.model.described_fields() or None,
            vllm_version=parsed.container.version,
            engine=parsed.engine,
            speculative=parsed.speculative,
            instance_count=parsed.instance_count,
            volume_size_in_gb=parsed.volume_size_in_gb,
            inference_ami_version=parsed.inference_ami_version,
            scaling=parsed.scaling,
            environment=parsed.environment,
            **_secret_props(scope, construct_id, parsed, props),
        )

    # --- construction ----------------------------------------------------------------------------

    def _build_endpoint(
        self,
        spec: DeploymentSpec,
        *,
        kms_key: kms.IKey | None,
        endpoint_name: str | None,
        startup_timeout: Duration | None,
        download_timeout: Duration | None,
        tags: Mapping[str, str] | None,
        guardrails: DeploymentGuardrails | None,
    ) -> None:
        download_default, startup_default = default_timeouts(self.resolved)
        host = self.resolved.host
        self.variant_name = VARIANT_NAME
        self.kms_key = kms_key  # the ML storage volume's key (also what a copy of the config needs)
        self.capture_destination: CaptureDestination | None = None
        capture_config = None
        if self.data_capture is not None:
            self.capture_destination = capture_destination(self, self.data_capture)
            capture_config = data_capture_config(self.data_capture, self.capture_destination)
            grant_capture(self.role, self.capture_destination)
        resources = create_endpoint(
            self,
            variant=sagemaker.CfnEndpointConfig.ProductionVariantProperty(
                variant_name=VARIANT_NAME,
                model_name=self.model.attr_model_name,
                instance_type=spec.instance_type,
                initial_instance_count=spec.instance_count,
                inference_ami_version=host.inference_ami_version if host else None,
                volume_size_in_gb=spec.volume_size_in_gb,
                container_startup_health_check_timeout_in_seconds=timeout_seconds(
                    startup_timeout, "container_startup_health_check_timeout", startup_default
                ),
                model_data_download_timeout_in_seconds=timeout_seconds(
                    download_timeout, "model_data_download_timeout", download_default
                ),
            ),
            role=self.role,
            kms_key=kms_key,
            endpoint_name=endpoint_name,
            deployment_config=_deployment_config(guardrails),
            async_inference_config=async_inference_config(self.async_inference, self._max_num_seqs())
            if self.async_inference is not None
            else None,
            data_capture_config=capture_config,
        )
        if self.async_inference is not None:
            grant_async_outputs(self.role, self.async_inference)
        self.endpoint_config = resources.config
        self.endpoint = resources.endpoint
        draft = self._trained_draft
        if draft is not None and draft.location is not None:  # a served head, resolved from SSM at deploy
            replace_model_with_deployment(self.model, self.endpoint_config, self.endpoint)
        self.model_name: str = self.model.attr_model_name
        self.endpoint_config_name: str = self.endpoint_config.attr_endpoint_config_name
        self.endpoint_name = self.endpoint.attr_endpoint_name
        self.endpoint_arn: str = self.endpoint.ref

        self.scalable_target = None
        self.scaling_target_value: float | None = None
        if spec.scaling is not None and self.async_inference is not None:
            # Backlog per instance: by default one batch's worth of requests waiting per instance.
            self.scaling_target_value = spec.scaling.target_value or float(
                self.async_inference.concurrency(self._max_num_seqs())
            )
            self.scalable_target = add_async_scaling(
                Construct(self, "Scaling"),
                endpoint_name=self.endpoint_name,
                variant_name=VARIANT_NAME,
                options=spec.scaling,
                backlog_per_instance=self.scaling_target_value,
            )
        elif spec.scaling is not None:
            self.scaling_target_value = default_target_value(
                spec.scaling, int(self.resolved.engine.get("max_num_seqs", 256))
            )
            self.scalable_target = add_auto_scaling(
                Construct(self, "Scaling"),
                kind="variant",
                resource_id=f"endpoint/{self.endpoint_name}/variant/{VARIANT_NAME}",
                options=spec.scaling,
                target_value=self.scaling_target_value,
            )
        self.cost: CostEstimate = self.resolved.cost()
        publish_cost(self, self.cost)
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)

    def _max_num_seqs(self) -> int:
        return int(self.resolved.engine.get("max_num_seqs", 256))

    # --- public helpers ---------------------------------------------------------------------------

    def benchmark_target(self) -> BenchmarkTarget:
        """What EndpointBenchmark needs to invoke and price this endpoint."""
        spec = self.resolved.spec
        return BenchmarkTarget(
            endpoint_name=self.endpoint_name,
            component_name=None,
            container="vllm",
            invoke_arns=[self.endpoint_arn],
            usd_per_hour=self.cost.usd_per_hour,
            instance_count=spec.instance_count,
            label=f"{self.node.id} {spec.instance_type}",
            deployment_id=Fn.join("/", [self.endpoint_config_name, self.model_name]),
            depends_on=self.endpoint,
            predict=self.benchmark_prediction,
        )

    def monitoring_target(self) -> MonitoringTarget:
        """What the dashboard, canary and SLO alarms need to watch this endpoint."""
        spec = self.resolved.spec
        gpus = self.resolved.instance.gpu_count if self.resolved.instance is not None else 1
        return MonitoringTarget(
            label=f"{self.node.id} ({self.resolved.model_id})",
            endpoint_name=self.endpoint_name,
            variant_name=self.variant_name,
            component_name=None,
            container="vllm",
            invoke_arns=[self.endpoint_arn],
            instance_type=spec.instance_type,
            gpus_per_instance=gpus,
            gpus_per_copy=gpus,
            scaling_metric=spec.scaling.metric if spec.scaling is not None else None,
            scaling_target_value=self.scaling_target_value,
            min_capacity=spec.scaling.min_capacity if spec.scaling is not None else None,
            max_capacity=spec.scaling.max_capacity if spec.scaling is not None else None,
            speculative_method=(self.resolved.speculative or {}).get("method"),
            benchmark=self.benchmark.series() if self.benchmark is not None else None,
            serving="async" if self.async_inference is not None else "real_time",
        )

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """InvokeEndpoint and InvokeEndpointWithResponseStream on this endpoint only."""
        return grant_invoke(grantee, [self.endpoint_arn])


def _secret_props(
    scope: Construct, construct_id: str, spec: DeploymentSpec, props: dict[str, Any]
) -> dict[str, Any]:
    """The spec's hf_token_secret (name or ARN) as the hf_token prop, unless the caller passes one."""
    if spec.hf_token_secret is None or "hf_token" in props:
        return props
    return {
        **props,
        "hf_token": secret_from_name_or_arn(scope, f"{construct_id}HfToken", spec.hf_token_secret),
    }


def secret_from_name_or_arn(scope: Construct, construct_id: str, name_or_arn: str) -> secretsmanager.ISecret:
    if name_or_arn.startswith("arn:"):
        return secretsmanager.Secret.from_secret_complete_arn(scope, construct_id, name_or_arn)
    return secretsmanager.Secret.from_secret_name_v2(scope, construct_id, name_or_arn)


def _deployment_config(
    guardrails: DeploymentGuardrails | None,
) -> sagemaker.CfnEndpoint.DeploymentConfigProperty | None:
    if guardrails is None:
        return None
    rollback = (
        sagemaker.CfnEndpoint.AutoRollbackConfigProperty(
            alarms=[sagemaker.CfnEndpoint.AlarmProperty(alarm_name=a.alarm_name) for a in guardrails.alarms]
        )
        if guardrails.alarms
        else None
    )
    if guardrails.strategy == "rolling":
        return sagemaker.CfnEndpoint.DeploymentConfigProperty(
            auto_rollback_configuration=rollback,
            rolling_update_policy=sagemaker.CfnEndpoint.RollingUpdatePolicyProperty(
                maximum_batch_size=sagemaker.CfnEndpoint.CapacitySizeProperty(
                    type="CAPACITY_PERCENT", value=guardrails.rolling_batch_percent or 25
                ),
                wait_interval_in_seconds=guardrails.wait_interval_seconds,
            ),
        )
    return sagemaker.CfnEndpoint.DeploymentConfigProperty(
        auto_rollback_configuration=rollback,
        blue_green_update_policy=sagemaker.CfnEndpoint.BlueGreenUpdatePolicyProperty(
            traffic_routing_configuration=sagemaker.CfnEndpoint.TrafficRoutingConfigProperty(
                type="ALL_AT_ONCE", wait_interval_in_seconds=guardrails.wait_interval_seconds
            ),
            termination_wait_in_seconds=guardrails.termination_wait_seconds or 0,
        ),
    )
