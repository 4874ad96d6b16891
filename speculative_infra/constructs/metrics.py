"""CloudWatch metrics of a SageMaker endpoint variant (kept apart from the constructs that expose them)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

from speculative_infra.constructs.monitoring_target import MonitoringTarget

INVOCATION_NAMESPACE = "AWS/SageMaker"
INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"


def variant_metric(
    metric_name: str,
    *,
    endpoint_name: str,
    variant_name: str,
    namespace: str = INVOCATION_NAMESPACE,
    statistic: str = "Average",
    period: Duration | None = None,
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=metric_name,
        dimensions_map={"EndpointName": endpoint_name, "VariantName": variant_name},
        statistic=statistic,
        period=period or Duration.minutes(1),
    )


class EndpointMetrics:
    """metric_* helpers; mixed into constructs that set `endpoint_name` and `variant_name`."""

    endpoint_name: str
    variant_name: str

    def metric(
        self,
        metric_name: str,
        *,
        namespace: str = INVOCATION_NAMESPACE,
        statistic: str = "Average",
        period: Duration | None = None,
    ) -> cloudwatch.Metric:
        return variant_metric(
            metric_name,
            endpoint_name=self.endpoint_name,
            variant_name=self.variant_name,
            namespace=namespace,
            statistic=statistic,
            period=period,
        )

    def metric_invocations(self, period: Duration | None = None) -> cloudwatch.Metric:
        return self.metric("Invocations", statistic="Sum", period=period)

    def metric_model_latency(
        self, statistic: str = "p50", period: Duration | None = None
    ) -> cloudwatch.Metric:
        """Microseconds the model takes to respond as SageMaker sees it (for a stream, AWS does not say
        whether to the first or the last byte)."""
        return self.metric("ModelLatency", statistic=statistic, period=period)

    def metric_overhead_latency(
        self, statistic: str = "p50", period: Duration | None = None
    ) -> cloudwatch.Metric:
        return self.metric("OverheadLatency", statistic=statistic, period=period)

    def metric_invocation_4xx_errors(self, period: Duration | None = None) -> cloudwatch.Metric:
        return self.metric("Invocation4XXErrors", statistic="Sum", period=period)

    def metric_invocation_5xx_errors(self, period: Duration | None = None) -> cloudwatch.Metric:
        return self.metric("Invocation5XXErrors", statistic="Sum", period=period)

    def metric_concurrent_requests_per_model(self, period: Duration | None = None) -> cloudwatch.Metric:
        """In-flight requests (streams count until their last token); published every 10 seconds."""
        return self.metric(
            "ConcurrentRequestsPerModel", statistic="Maximum", period=period or Duration.seconds(10)
        )

    def metric_gpu_utilization(self, period: Duration | None = None) -> cloudwatch.Metric:
        """Percent, summed over the instance's GPUs (100 per GPU)."""
        return self.metric("GPUUtilization", namespace=INSTANCE_NAMESPACE, period=period)

    def metric_gpu_memory_utilization(self, period: Duration | None = None) -> cloudwatch.Metric:
        return self.metric("GPUMemoryUtilization", namespace=INSTANCE_NAMESPACE, period=period)


# --- Metrics of a watched target (dashboard, SLO alarms) ------------------------------------------
# Every AWS metric here is listed in catalog/data/monitoring.yaml with a statistic AWS documents for it;
# tests check each synthesized dashboard against that file.

COMPONENT_NAMESPACE = "/aws/sagemaker/InferenceComponents"
CANARY_NAMESPACE = "SpeculativeInfra/EndpointCanary"  # written by lambda/endpoint_canary/emf.py
BENCHMARK_NAMESPACE = "SpeculativeInfra/EndpointBenchmark"  # written by lambda/endpoint_benchmark/emf.py


def _invocation_dimensions(target: MonitoringTarget) -> dict[str, str]:
    if target.component_name is not None:
        return {"InferenceComponentName": target.component_name}
    return {"EndpointName": target.endpoint_name, "VariantName": target.variant_name}


def invocation_metric(
    target: MonitoringTarget,
    metric_name: str,
    statistic: str,
    *,
    period: Duration | None = None,
    label: str | None = None,
) -> cloudwatch.Metric:
    """AWS/SageMaker, per variant (endpoint) or per inference component."""
    return cloudwatch.Metric(
        namespace=INVOCATION_NAMESPACE,
        metric_name=metric_name,
        dimensions_map=_invocation_dimensions(target),
        statistic=statistic,
        period=period or Duration.minutes(1),
        label=label,
    )


def concurrency_metric(target: MonitoringTarget) -> cloudwatch.Metric:
    """Requests in flight per model server (per copy for a component): what target tracking scales on."""
    name = "ConcurrentRequestsPerCopy" if target.is_component else "ConcurrentRequestsPerModel"
    return invocation_metric(
        target, name, "Maximum", period=Duration.seconds(10), label=f"{name} (max, 10 s)"
    )


def utilization_metric(
    target: MonitoringTarget, kind: str, statistic: str = "Average", label: str | None = None
) -> cloudwatch.Metric:
    """CPU, Memory, GPU or GPUMemory utilization: per instance of an endpoint (summed over its GPUs) or,
    for a component, normalized per copy. Disk exists per instance only."""
    if target.is_component and kind != "Disk":
        return cloudwatch.Metric(
            namespace=COMPONENT_NAMESPACE,
            metric_name=f"{kind}UtilizationNormalized",
            dimensions_map={"InferenceComponentName": target.component_name or ""},
            statistic=statistic,
            period=Duration.minutes(1),
            label=label,
        )
    return variant_metric(
        f"{kind}Utilization",
        endpoint_name=target.endpoint_name,
        variant_name=target.variant_name,
        namespace=INSTANCE_NAMESPACE,
        statistic=statistic,
    ).with_(label=label)


def reporting_capacity_metric(target: MonitoringTarget) -> cloudwatch.Metric:
    """Instances (or copies) in service: AWS publishes no count, but each one reports its CPU utilization
    once a minute, so the number of samples per minute counts them."""
    unit = "copies" if target.is_component else "instances"
    return utilization_metric(target, "CPU", statistic="SampleCount", label=f"{unit} reporting")


def canary_metric(
    target: MonitoringTarget,
    metric_name: str,
    statistic: str,
    *,
    period: Duration | None = None,
    label: str | None = None,
) -> cloudwatch.Metric:
    return cloudwatch.Metric(
        namespace=CANARY_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"Target": target.target_name},
        statistic=statistic,
        period=period or Duration.minutes(15),
        label=label,
    )


def benchmark_metric(target: MonitoringTarget, metric_name: str, level_value: str) -> cloudwatch.Metric:
    """One level's figure from the post-deploy benchmark (one sample per deployment)."""
    assert target.benchmark is not None
    dimension = target.benchmark.level_dimension
    return cloudwatch.Metric(
        namespace=BENCHMARK_NAMESPACE,
        metric_name=metric_name,
        dimensions_map={"Target": target.target_name, dimension: level_value},
        statistic="Maximum",
        period=Duration.days(1),
        label=f"{dimension.lower()} {level_value}",
    )
