"""CloudWatch metrics of a SageMaker endpoint variant (kept apart from the constructs that expose them)."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

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
        """Microseconds from SageMaker handing the request to the container to its response (end of stream)."""
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
