"""EndpointDashboard: one CloudWatch dashboard per endpoint or inference component.

Layout only: the metrics come from constructs/metrics.py. Rows, top to bottom: traffic and errors,
latency, concurrency against the scaling target with the capacity serving it, GPU, host, then (when they
exist) the post-deploy benchmark, the canary's token figures and the SLO alarms. Sections for a canary
or alarms added after the dashboard are appended when they are added.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from constructs import Construct

from speculative_infra.constructs.metrics import (
    benchmark_metric,
    canary_metric,
    concurrency_metric,
    invocation_metric,
    reporting_capacity_metric,
    utilization_metric,
)
from speculative_infra.constructs.monitoring_target import Monitorable, MonitoringTarget
from speculative_infra.constructs.prop_checks import construct_path, require_duration, require_str, wrong_type

FULL, HALF, THIRD = 24, 12, 8
DASHBOARD_NAME = re.compile(r"^[A-Za-z0-9_-]{1,255}$")
MAX_RANGE_SECONDS = 455 * 24 * 3600  # CloudWatch keeps metric data 15 months (455 days)
GRAPH_HEIGHT = 6


def _graph(
    title: str,
    left: Sequence[cloudwatch.IMetric],
    *,
    width: int = HALF,
    right: Sequence[cloudwatch.IMetric] = (),
    left_label: str | None = None,
    right_label: str | None = None,
    annotations: Sequence[cloudwatch.HorizontalAnnotation] = (),
    view: cloudwatch.GraphWidgetView | None = None,
) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(
        title=title,
        left=list(left),
        right=list(right),
        width=width,
        height=GRAPH_HEIGHT,
        left_y_axis=cloudwatch.YAxisProps(label=left_label, show_units=False, min=0),
        right_y_axis=cloudwatch.YAxisProps(label=right_label, show_units=False, min=0) if right else None,
        left_annotations=list(annotations) or None,
        view=view,
        # A bar of a once-per-deployment figure: one value over the whole range shown, not per period.
        set_period_to_time_range=True if view == cloudwatch.GraphWidgetView.BAR else None,
    )


def traffic_row(target: MonitoringTarget) -> list[cloudwatch.IWidget]:
    errors = [
        invocation_metric(target, name, "Average", label=label)
        for name, label in (
            ("Invocation4XXErrors", "4xx rate"),
            ("Invocation5XXErrors", "5xx rate"),
            ("InvocationModelErrors", "model error rate"),
        )
    ]
    latency = [
        invocation_metric(target, "ModelLatency", stat, label=f"ModelLatency {stat}")
        for stat in ("p50", "p90", "p99")
    ]
    return [
        _graph(
            "Requests and error rates",
            [invocation_metric(target, "Invocations", "Sum", label="requests / min")],
            right=errors,
            left_label="requests",
            right_label="rate (0-1)",
        ),
        _graph("Model latency (µs; a stream: as SageMaker times it)", latency, left_label="µs"),
    ]


def capacity_row(target: MonitoringTarget) -> list[cloudwatch.IWidget]:
    annotations = []
    if target.scaling_target_value is not None and target.scaling_metric == "concurrent_requests":
        annotations.append(
            cloudwatch.HorizontalAnnotation(value=target.scaling_target_value, label="scaling target")
        )
    unit = "copies" if target.is_component else "instances"
    overhead = [
        invocation_metric(target, "OverheadLatency", stat, label=f"OverheadLatency {stat}")
        for stat in ("Average", "Maximum")
    ]
    return [
        _graph(
            f"Concurrent requests against the scaling target, and {unit}",
            [concurrency_metric(target)],
            right=[reporting_capacity_metric(target)],
            left_label="requests in flight",
            right_label=unit,
            annotations=annotations,
        ),
        # AWS lists no percentile statistics for OverheadLatency.
        _graph("SageMaker overhead latency (µs)", overhead, left_label="µs"),
    ]


def resources_row(target: MonitoringTarget) -> list[cloudwatch.IWidget]:
    if target.is_component:
        gpu_title = f"GPU per copy (% of its {target.gpus_per_copy} GPU{'s' * (target.gpus_per_copy > 1)})"
        ceiling = 100.0
    else:
        gpu_title = f"GPU per instance (100 per GPU; {target.gpus_per_instance} on {target.instance_type})"
        ceiling = 100.0 * target.gpus_per_instance
    gpu = [
        utilization_metric(target, "GPU", label="GPU utilization"),
        utilization_metric(target, "GPUMemory", label="GPU memory"),
    ]
    host = [
        # Per instance, CPUUtilization is 100 per core; per copy, CPUUtilizationNormalized is a percentage
        # of the CPUs the copy reserves.
        utilization_metric(
            target, "CPU", label="CPU (% of the copy's CPUs)" if target.is_component else "CPU (100 per core)"
        ),
        utilization_metric(target, "Memory", label="memory"),
        utilization_metric(target, "Disk", label="disk"),
    ]
    return [
        _graph(
            gpu_title,
            gpu,
            left_label="%",
            annotations=[cloudwatch.HorizontalAnnotation(value=ceiling, label="all GPUs busy")],
        ),
        _graph("Host: CPU, memory, disk", host, left_label="%"),
    ]


def canary_row(target: MonitoringTarget) -> list[cloudwatch.IWidget]:
    def percentiles(name: str) -> list[cloudwatch.IMetric]:
        return [canary_metric(target, name, stat, label=f"{stat}") for stat in ("p50", "p90")]

    return [
        cloudwatch.TextWidget(
            markdown="### Canary: a few short streaming requests on a schedule (SpeculativeInfra/EndpointCanary)",
            width=FULL,
            height=1,
        ),
        _graph(
            "Canary time to first token (ms)", percentiles("TimeToFirstToken"), width=THIRD, left_label="ms"
        ),
        _graph(
            "Canary time per output token (ms)",
            percentiles("TimePerOutputToken"),
            width=THIRD,
            left_label="ms",
        ),
        _graph(
            "Canary tokens per chunk (accepted draft + 1) and tokens/s",
            [canary_metric(target, "TokensPerChunk", "Average", label="tokens per chunk")],
            right=[canary_metric(target, "OutputTokensPerSecond", "Average", label="output tokens/s")],
            width=THIRD,
            left_label="tokens",
            right_label="tokens/s",
        ),
        _graph(
            "Canary requests and failures",
            [
                canary_metric(target, "Requests", "Sum", label="requests"),
                canary_metric(target, "FailedRequests", "Sum", label="failed"),
            ],
            width=FULL,
            left_label="requests / 15 min",
        ),
    ]


def benchmark_row(target: MonitoringTarget) -> list[cloudwatch.IWidget]:
    assert target.benchmark is not None
    values = target.benchmark.level_values

    def per_level(name: str) -> list[cloudwatch.IMetric]:
        return [benchmark_metric(target, name, value) for value in values]

    return [
        cloudwatch.TextWidget(
            markdown="### Post-deploy benchmark, one bar per level (SpeculativeInfra/EndpointBenchmark)",
            width=FULL,
            height=1,
        ),
        _graph(
            "Benchmark output throughput (tokens/s)",
            per_level("OutputThroughput"),
            left_label="tokens/s",
            view=cloudwatch.GraphWidgetView.BAR,
        ),
        _graph(
            "Benchmark median TTFT (ms)",
            per_level("MedianTtft"),
            left_label="ms",
            view=cloudwatch.GraphWidgetView.BAR,
        ),
    ]


def header(target: MonitoringTarget) -> cloudwatch.TextWidget:
    lines = [f"## {target.label}", f"{target.instance_type}"]
    if target.speculative_method:
        lines[-1] += f", speculative decoding: {target.speculative_method}"
    if target.min_capacity is not None:
        lines[-1] += f", scaling {target.min_capacity}-{target.max_capacity}"
    return cloudwatch.TextWidget(markdown="\n\n".join(lines), width=FULL, height=2)


class EndpointDashboard(Construct):
    """A CloudWatch dashboard for one endpoint or inference component (see docs/constructs/endpoint-dashboard.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: Monitorable,
        dashboard_name: str | None = None,
        default_range: Duration | None = None,
    ) -> None:
        """
        :param target: a SpeculativeVllmEndpoint or LmiInferenceComponent (anything with monitoring_target()).
        :param dashboard_name: Default: generated by CloudFormation.
        :param default_range: the time range the dashboard opens with. Default: 3 hours.
        """
        where = construct_path(scope, construct_id)
        if not isinstance(target, Monitorable):
            raise wrong_type(
                where,
                "target",
                "a SpeculativeVllmEndpoint or an LmiInferenceComponent (anything with monitoring_target())",
                target,
            )
        # PutDashboard: DashboardName, up to 255 letters, digits, "-" and "_" (CloudWatch API reference).
        require_str(dashboard_name, "dashboard_name", where)
        if (
            dashboard_name is not None
            and not Token.is_unresolved(dashboard_name)
            and not DASHBOARD_NAME.match(dashboard_name)
        ):
            raise ValueError(
                f"{where}: dashboard_name is {dashboard_name!r}; allowed: 1-255 letters, digits, - and _"
            )
        # The dashboard's time range: a period CloudWatch keeps metrics for (15 months).
        require_duration(
            default_range, "default_range", where, low_seconds=60, high_seconds=MAX_RANGE_SECONDS
        )
        super().__init__(scope, construct_id)
        self.target = target.monitoring_target()
        self.dashboard = cloudwatch.Dashboard(
            self,
            "Resource",
            dashboard_name=dashboard_name,
            default_interval=default_range or Duration.hours(3),
            period_override=cloudwatch.PeriodOverride.INHERIT,
        )
        self.dashboard.add_widgets(header(self.target))
        for row in (traffic_row, capacity_row, resources_row):
            self.dashboard.add_widgets(*row(self.target))
        if self.target.benchmark is not None:
            self.dashboard.add_widgets(*benchmark_row(self.target))
        self._has_canary = False

    def add_canary_section(self) -> None:
        """The canary's widgets (called by add_canary(); once)."""
        if not self._has_canary:
            self._has_canary = True
            self.dashboard.add_widgets(*canary_row(self.target))

    def add_alarms_section(self, alarms: Sequence[cloudwatch.IAlarm]) -> None:
        """An alarm-status row for the SLO alarms (called by add_slo_alarms())."""
        if alarms:
            self.dashboard.add_widgets(
                cloudwatch.AlarmStatusWidget(alarms=list(alarms), title="SLO alarms", width=FULL, height=3)
            )
