"""LmiInferenceComponent: a DJL LMI (vLLM async) model deployed as a SageMaker inference component."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aws_cdk import CfnOutput, Duration, Fn, Names, Tags
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from speculative_infra.check import CheckResult
from speculative_infra.constructs.benchmark_target import BenchmarkTarget
from speculative_infra.constructs.endpoint_benchmark import BenchmarkOptions, EndpointBenchmark
from speculative_infra.constructs.execution_role import add_execution_permissions
from speculative_infra.constructs.image import image_uri, repository_arn, stack_region
from speculative_infra.constructs.inference_component_endpoint import (
    MAX_INSTANCES,
    ROUTING_STRATEGIES,
    InferenceComponentEndpoint,
    RoutingStrategy,
)
from speculative_infra.constructs.monitoring_target import MonitoringTarget
from speculative_infra.constructs.observability import Observable
from speculative_infra.constructs.planned_workload import (
    PlannedEndpoint,
    PlannedWorkload,
    parse_workload,
    scaling_levels,
)
from speculative_infra.constructs.prop_checks import (
    SECRET,
    construct_path,
    require_choice,
    require_duration,
    require_instance,
    require_int,
    require_jsii,
    require_mapping,
    require_mapping_of_str,
    require_str,
    require_tags,
)
from speculative_infra.constructs.props import (
    as_mapping,
    default_timeouts,
    secret_id,
    timeout_seconds,
)
from speculative_infra.constructs.scaling import add_auto_scaling, default_target_value
from speculative_infra.constructs.validation import validate_deployment
from speculative_infra.cost import estimate_cost
from speculative_infra.render import render_environment
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.capacity import ComponentDemand
from speculative_infra.sizing import dtype_bytes, weights_mib
from speculative_infra.spec import EngineArgs, ScalingOptions, SpecError, SpeculativeConfig, parse_spec

# Host memory a copy reserves beyond its weights (Python, tokenizer, CUDA context, buffers).
HOST_MEMORY_OVERHEAD_MB = 4096
# Copies of one component: the endpoint's instances times the copies an instance holds (one per GPU at
# most); far above any quota, so a larger number is a mistake rather than a plan.
MAX_COPIES = 10_000
# SageMaker API reference, InferenceComponentComputeResourceRequirements: MinMemoryRequiredInMb, 128 or
# more (the instance's memory bounds it, rule SI700).
MIN_MEMORY_MB = 128
_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


class LmiInferenceComponent(Construct, Observable, PlannedEndpoint):
    """A DJL LMI model in vLLM async mode on an inference-component endpoint, checked at synth time."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        model_id: str,
        endpoint: InferenceComponentEndpoint | None = None,
        instance_type: str | None = None,
        min_instance_count: int | None = None,
        max_instance_count: int | None = None,
        routing_strategy: RoutingStrategy | None = None,
        lmi_version: str | None = None,
        tensor_parallel_degree: int | None = None,
        engine: EngineArgs | Mapping[str, Any] | None = None,
        speculative: SpeculativeConfig | Mapping[str, Any] | None = None,
        model_facts: Mapping[str, Any] | None = None,
        copy_count: int = 1,
        scaling: ScalingOptions | Mapping[str, Any] | None = None,
        inference_component_name: str | None = None,
        min_memory_required_in_mb: int | None = None,
        container_startup_health_check_timeout: Duration | None = None,
        model_data_download_timeout: Duration | None = None,
        environment: Mapping[str, str] | None = None,
        hf_token: secretsmanager.ISecret | None = None,
        tags: Mapping[str, str] | None = None,
        benchmark: BenchmarkOptions | Mapping[str, Any] | None = None,
        workload: PlannedWorkload | Mapping[str, Any] | None = None,
    ) -> None:
        """
        :param model_id: Hugging Face model id (HF_MODEL_ID).
        :param endpoint: the endpoint to join. Default: the component creates its own from
            ``instance_type`` and the instance-count bounds.
        :param instance_type: only without ``endpoint``.
        :param min_instance_count: only without ``endpoint``. Default: 1, or 0 when ``scaling`` allows
            zero copies.
        :param max_instance_count: only without ``endpoint``. Default: enough instances for
            ``scaling.max_capacity`` copies (else ``copy_count``).
        :param routing_strategy: only without ``endpoint`` (the endpoint's own otherwise). Default:
            LEAST_OUTSTANDING_REQUESTS.
        :param lmi_version: LMI major version. Default: the newest LMI release in the catalog.
        :param tensor_parallel_degree: GPUs per copy. Default: the instance's GPU count.
        :param engine: vLLM engine args, passed as OPTION_* (typed model or mapping).
        :param speculative: vLLM speculative config, passed as OPTION_SPECULATIVE_CONFIG. Default: none.
        :param model_facts: facts for a model the catalog does not know. Default: the catalog's.
        :param copy_count: initial copies. Default: 1.
        :param scaling: copy-count auto-scaling; ``min_capacity: 0`` enables scale to zero.
        :param inference_component_name: Default: derived from the construct path (stable).
        :param min_memory_required_in_mb: host memory per copy. Default: the weights plus 4 GiB.
        :param container_startup_health_check_timeout: Default: sized to the weights.
        :param model_data_download_timeout: Default: sized to the weights.
        :param environment: extra container environment. Default: none.
        :param hf_token: a secret whose value is a Hugging Face token, for gated models (rule SI531). The
            container gets it as HF_TOKEN through a CloudFormation dynamic reference: the template holds
            the secret's ARN, never the token; DescribeModel still shows the resolved value. Default: none.
        :param tags: Default: none.
        :param benchmark: benchmark the component after every deployment (EndpointBenchmark). Default: none.
        :param workload: the tokens per request the component is expected to serve (PlannedWorkload). The
            planner's prediction for one copy at the scaling target's concurrency is stated as an info
            annotation at synth, kept in ``planned_levels``, and published by ``benchmark`` beside what it
            measures. Default: none (no prediction).
        """
        _check_props(
            construct_path(scope, construct_id),
            model_id=model_id,
            endpoint=endpoint,
            instance_type=instance_type,
            min_instance_count=min_instance_count,
            max_instance_count=max_instance_count,
            routing_strategy=routing_strategy,
            lmi_version=lmi_version,
            tensor_parallel_degree=tensor_parallel_degree,
            engine=engine,
            speculative=speculative,
            model_facts=model_facts,
            copy_count=copy_count,
            scaling=scaling,
            inference_component_name=inference_component_name,
            min_memory_required_in_mb=min_memory_required_in_mb,
            timeouts={
                "container_startup_health_check_timeout": container_startup_health_check_timeout,
                "model_data_download_timeout": model_data_download_timeout,
            },
            environment=environment,
            hf_token=hf_token,
            tags=tags,
            benchmark=benchmark,
            workload=workload,
        )
        super().__init__(scope, construct_id)
        self.workload = parse_workload(workload, self.node.path)
        scaling_options = _parse_scaling(scaling, self.node.path)
        if endpoint is None:
            if instance_type is None:
                raise ValueError(
                    f"{self.node.path}: give endpoint, or instance_type for an endpoint of its own"
                )
            endpoint = self._own_endpoint(
                instance_type,
                min_instance_count,
                max_instance_count,
                routing_strategy or "LEAST_OUTSTANDING_REQUESTS",
                copy_count,
                scaling_options,
            )
        elif any(
            v is not None for v in (instance_type, min_instance_count, max_instance_count, routing_strategy)
        ):
            raise ValueError(
                f"{self.node.path}: instance_type, instance counts and routing_strategy belong to the endpoint "
                "when one is given"
            )
        if not isinstance(endpoint, InferenceComponentEndpoint):
            raise ValueError(f"{self.node.path}: endpoint must be an InferenceComponentEndpoint")
        if copy_count < 1:
            raise ValueError(
                f"{self.node.path}: copy_count is {copy_count}; allowed: 1 or more (scale to zero "
                "comes from scaling.min_capacity 0)"
            )
        if (
            scaling_options is not None
            and scaling_options.min_capacity == 0
            and endpoint.min_instance_count != 0
        ):
            raise ValueError(
                f"{self.node.path}: scale to zero (scaling.min_capacity 0) needs the endpoint's managed instance "
                f"scaling at min_instance_count 0; {endpoint.node.path} has {endpoint.min_instance_count}"
            )
        self.endpoint = endpoint
        engine_args = as_mapping(engine)
        if tensor_parallel_degree is not None:
            engine_args["tensor_parallel_size"] = tensor_parallel_degree
        try:
            spec = parse_spec(
                {
                    "region": stack_region(self),
                    "instance_type": endpoint.instance_type,
                    "container": {"framework": "lmi", "version": lmi_version},
                    "model": {"id": model_id, **dict(model_facts or {})},
                    "engine": engine_args,
                    "speculative": as_mapping(speculative) if speculative is not None else None,
                    "inference_ami_version": endpoint.host_request,
                    "environment": dict(environment or {}),
                    "hf_token_secret": secret_id(hf_token),
                    "scaling": scaling_options.model_dump() if scaling_options is not None else None,
                },
                source=self.node.path,
            )
        except SpecError as err:
            raise ValueError(str(err)) from None
        self.check_result: CheckResult = validate_deployment(self, spec)
        self.resolved: ResolvedDeployment = self.check_result.deployment
        container = self.resolved.container
        assert container is not None and self.resolved.model is not None  # guaranteed by the rules

        self.inference_component_name = inference_component_name or _default_name(self)
        if not _NAME.match(self.inference_component_name):
            raise ValueError(
                f"{self.node.path}: inference_component_name {self.inference_component_name!r} must be 1-63 "
                "letters, digits and hyphens, starting and ending with a letter or digit"
            )
        self.tensor_parallel_degree = self.resolved.tensor_parallel_size
        self.min_memory_required_in_mb = min_memory_required_in_mb or _default_memory_mb(self.resolved)
        self.demand = ComponentDemand(
            name=self.node.path,
            accelerators=self.tensor_parallel_degree,
            memory_mb=self.min_memory_required_in_mb,
            copies=copy_count,
        )
        host = self.resolved.host
        endpoint.register(self, host.inference_ami_version if host else None)

        self.role: iam.IRole = endpoint.role
        add_execution_permissions(self.role, image_repository_arns=[repository_arn(self, container)])
        self.environment: dict[str, str] = dict(render_environment(self.resolved) or {})
        self.model = sagemaker.CfnModel(
            self,
            "Model",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=image_uri(self, container), environment=self.environment
            ),
        )
        download_default, startup_default = default_timeouts(self.resolved)
        self.inference_component = sagemaker.CfnInferenceComponent(
            self,
            "InferenceComponent",
            endpoint_name=endpoint.endpoint_name,
            variant_name=endpoint.variant_name,
            inference_component_name=self.inference_component_name,
            specification=sagemaker.CfnInferenceComponent.InferenceComponentSpecificationProperty(
                model_name=self.model.attr_model_name,
                compute_resource_requirements=(
                    sagemaker.CfnInferenceComponent.InferenceComponentComputeResourceRequirementsProperty(
                        number_of_accelerator_devices_required=self.tensor_parallel_degree,
                        min_memory_required_in_mb=self.min_memory_required_in_mb,
                    )
                ),
                startup_parameters=sagemaker.CfnInferenceComponent.InferenceComponentStartupParametersProperty(
                    container_startup_health_check_timeout_in_seconds=timeout_seconds(
                        container_startup_health_check_timeout,
                        "container_startup_health_check_timeout",
                        startup_default,
                    ),
                    model_data_download_timeout_in_seconds=timeout_seconds(
                        model_data_download_timeout, "model_data_download_timeout", download_default
                    ),
                ),
            ),
            runtime_config=sagemaker.CfnInferenceComponent.InferenceComponentRuntimeConfigProperty(
                copy_count=copy_count
            ),
        )
        self.inference_component_arn: str = self.inference_component.ref
        CfnOutput(
            self,
            "InferenceComponentName",
            value=self.inference_component_name,
            description="Send it with every request: InferenceComponentName / "
            "X-Amzn-SageMaker-Inference-Component",
        )

        self.scalable_target: appscaling.ScalableTarget | None = None
        self.scaling_options = scaling_options
        self.scaling_target_value: float | None = None
        if scaling_options is not None:
            self._add_scaling(scaling_options)
        for key, value in (tags or {}).items():
            Tags.of(self).add(key, value)
        levels = scaling_levels(
            scaling_options, self.scaling_target_value, int(self.resolved.engine.get("max_num_seqs", 256))
        )
        self._announce_plan(levels, self._copy_usd_per_hour(), "copy")
        self.benchmark: EndpointBenchmark | None = None
        if benchmark is not None:
            self.benchmark = EndpointBenchmark(self, "Benchmark", target=self, options=benchmark)

    def _own_endpoint(
        self,
        instance_type: str,
        min_count: int | None,
        max_count: int | None,
        routing: RoutingStrategy,
        copy_count: int,
        scaling: ScalingOptions | None,
    ) -> InferenceComponentEndpoint:
        scales_to_zero = scaling is not None and scaling.min_capacity == 0
        minimum = min_count if min_count is not None else (0 if scales_to_zero else 1)
        copies = scaling.max_capacity if scaling is not None else copy_count
        return InferenceComponentEndpoint(
            self,
            "Endpoint",
            instance_type=instance_type,
            min_instance_count=minimum,
            max_instance_count=max_count if max_count is not None else max(1, minimum, copies),
            initial_instance_count=max(1, minimum),
            routing_strategy=routing,
        )

    def _add_scaling(self, options: ScalingOptions) -> None:
        scope = Construct(self, "Scaling")
        self.scaling_target_value = default_target_value(
            options, int(self.resolved.engine.get("max_num_seqs", 256))
        )
        target = add_auto_scaling(
            scope,
            kind="inference-component",
            resource_id=f"inference-component/{self.inference_component_name}",
            options=options,
            target_value=self.scaling_target_value,
            depends_on=self.inference_component,
        )
        self.scalable_target = target
        if options.min_capacity == 0:
            self._add_scale_from_zero(scope, target)

    def _add_scale_from_zero(self, scope: Construct, target: appscaling.ScalableTarget) -> None:
        # At zero copies target tracking has no traffic metric to act on: the first request fails with
        # "no capacity" and this alarm adds a copy (SageMaker developer guide, "Scale an endpoint to zero instances").
        step = appscaling.StepScalingAction(
            scope,
            "ScaleOutFromZero",
            scaling_target=target,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            cooldown=Duration.seconds(60),
        )
        step.add_adjustment(adjustment=1, lower_bound=0)
        self.no_capacity_alarm = cloudwatch.Alarm(
            scope,
            "NoCapacityAlarm",
            metric=self.metric_no_capacity_invocation_failures(),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="Requests found no copy of the inference component: add one (scale from zero).",
        )
        self.no_capacity_alarm.add_alarm_action(cw_actions.ApplicationScalingAction(step))

    def metric_no_capacity_invocation_failures(self, period: Duration | None = None) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace="AWS/SageMaker",
            metric_name="NoCapacityInvocationFailures",
            dimensions_map={"InferenceComponentName": self.inference_component_name},
            statistic="Sum",
            period=period or Duration.minutes(1),
        )

    def benchmark_target(self) -> BenchmarkTarget:
        """What EndpointBenchmark needs to invoke and price this component (one copy)."""
        spec = self.resolved.spec
        return BenchmarkTarget(
            endpoint_name=self.endpoint.endpoint_name,
            component_name=self.inference_component_name,
            container="lmi",
            invoke_arns=[self.endpoint.endpoint_arn, self.inference_component_arn],
            usd_per_hour=self._copy_usd_per_hour(),
            instance_count=1,
            label=f"{self.node.id} {spec.instance_type}",
            deployment_id=Fn.join("/", [self.model.attr_model_name, self.inference_component_name]),
            depends_on=self.inference_component,
            predict=self.benchmark_prediction,
        )

    def _copy_usd_per_hour(self) -> float | None:
        """Cost per copy: the instance's price shared by the GPUs a copy uses."""
        price = estimate_cost(self.resolved.spec.instance_type, self.resolved.region, 1, 1).usd_per_hour
        share = self.tensor_parallel_degree / max(1, self.endpoint.instance.gpu_count)
        return price * share if price is not None else None

    def monitoring_target(self) -> MonitoringTarget:
        """What the dashboard, canary and SLO alarms need to watch this component."""
        spec = self.resolved.spec
        scaling = self.scaling_options
        return MonitoringTarget(
            label=f"{self.node.id} ({self.resolved.model_id})",
            endpoint_name=self.endpoint.endpoint_name,
            variant_name=self.endpoint.variant_name,
            component_name=self.inference_component_name,
            container="lmi",
            invoke_arns=[self.endpoint.endpoint_arn, self.inference_component_arn],
            instance_type=spec.instance_type,
            gpus_per_instance=self.endpoint.instance.gpu_count,
            gpus_per_copy=self.tensor_parallel_degree,
            scaling_metric=scaling.metric if scaling is not None else None,
            scaling_target_value=self.scaling_target_value,
            min_capacity=scaling.min_capacity if scaling is not None else None,
            max_capacity=scaling.max_capacity if scaling is not None else None,
            speculative_method=(self.resolved.speculative or {}).get("method"),
            benchmark=self.benchmark.series() if self.benchmark is not None else None,
        )

    def grant_invoke(self, grantee: iam.IGrantable) -> iam.Grant:
        """Invoke permissions on the component's endpoint (requests name the component)."""
        return self.endpoint.grant_invoke(grantee)


def _check_props(
    where: str,
    *,
    model_id: Any,
    endpoint: Any,
    instance_type: Any,
    min_instance_count: Any,
    max_instance_count: Any,
    routing_strategy: Any,
    lmi_version: Any,
    tensor_parallel_degree: Any,
    engine: Any,
    speculative: Any,
    model_facts: Any,
    copy_count: Any,
    scaling: Any,
    inference_component_name: Any,
    min_memory_required_in_mb: Any,
    timeouts: dict[str, Any],
    environment: Any,
    hf_token: Any,
    tags: Any,
    benchmark: Any,
    workload: Any,
) -> None:
    """Types and ranges of the props, before any jsii call sees them (the engine's are the spec's)."""
    require_str(model_id, "model_id", where, optional=False, non_empty=True)
    require_instance(endpoint, InferenceComponentEndpoint, "endpoint", where)
    require_str(instance_type, "instance_type", where)
    require_int(min_instance_count, "min_instance_count", where, low=0, high=MAX_INSTANCES, optional=True)
    require_int(max_instance_count, "max_instance_count", where, low=1, high=MAX_INSTANCES, optional=True)
    require_choice(routing_strategy, ROUTING_STRATEGIES, "routing_strategy", where, optional=True)
    require_str(lmi_version, "lmi_version", where)
    require_int(tensor_parallel_degree, "tensor_parallel_degree", where, low=1, optional=True)
    require_mapping(engine, "engine", where, models=(EngineArgs,))
    require_mapping(speculative, "speculative", where, models=(SpeculativeConfig,))
    require_mapping(model_facts, "model_facts", where)
    require_int(copy_count, "copy_count", where, high=MAX_COPIES)
    require_mapping(scaling, "scaling", where, models=(ScalingOptions,))
    require_str(inference_component_name, "inference_component_name", where)
    require_int(
        min_memory_required_in_mb, "min_memory_required_in_mb", where, low=MIN_MEMORY_MB, optional=True
    )
    for name, timeout in timeouts.items():
        require_duration(timeout, name, where)  # its range: timeout_seconds (the same message as ever)
    require_mapping_of_str(environment, "environment", where)
    require_jsii(hf_token, SECRET, "hf_token", where)
    require_tags(tags, "tags", where)
    require_mapping(benchmark, "benchmark", where, models=(BenchmarkOptions,))
    require_mapping(workload, "workload", where, models=(PlannedWorkload,))


def _parse_scaling(value: ScalingOptions | Mapping[str, Any] | None, path: str) -> ScalingOptions | None:
    if value is None or isinstance(value, ScalingOptions):
        return value
    try:
        return ScalingOptions.model_validate(dict(value))
    except ValueError as err:
        raise ValueError(f"{path}: scaling: {err}") from None


def _default_name(scope: Construct) -> str:
    """Stack name + construct path + a hash of the path: stable across deployments, unique per stack."""
    name = Names.unique_resource_name(scope, max_length=63, separator="-")
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-zA-Z0-9-]", "-", name)).strip("-")


def _default_memory_mb(deployment: ResolvedDeployment) -> int:
    assert deployment.model is not None
    weights = weights_mib(deployment.model, dtype_bytes(deployment.engine.get("dtype")))
    needed = int(weights * 2**20 / 1e6) + HOST_MEMORY_OVERHEAD_MB
    instance = deployment.instance
    if instance is not None and instance.memory_gib is not None:
        needed = min(needed, int(instance.memory_gib * 1024 * 0.9))
    return needed
