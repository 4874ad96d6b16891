"""The endpoint's side of the test window: CloudWatch metrics per minute and scaling activities."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

NAMESPACE = "AWS/SageMaker"
INSTANCE_NAMESPACE = "/aws/sagemaker/Endpoints"
COMPONENT_NAMESPACE = "/aws/sagemaker/InferenceComponents"
MAX_PAGES = 20
"""GetMetricData pages (each up to 100,800 points) and scaling-activity pages (50 each) read at most."""


def metric_queries(target: dict[str, Any]) -> list[dict[str, Any]]:
    """Capacity (instances or copies reporting CPU each minute), in-flight requests, invocations."""
    component = target.get("inference_component_name")
    if component:
        invocation_dims = [{"Name": "InferenceComponentName", "Value": component}]
        capacity = {
            "Namespace": COMPONENT_NAMESPACE,
            "MetricName": "CPUUtilizationNormalized",
            "Dimensions": invocation_dims,
        }
        concurrency_name = "ConcurrentRequestsPerCopy"
    else:
        invocation_dims = [
            {"Name": "EndpointName", "Value": target["endpoint_name"]},
            {"Name": "VariantName", "Value": target.get("variant_name") or "AllTraffic"},
        ]
        capacity = {
            "Namespace": INSTANCE_NAMESPACE,
            "MetricName": "CPUUtilization",
            "Dimensions": invocation_dims,
        }
        concurrency_name = "ConcurrentRequestsPerModel"
    return [
        {"Id": "capacity", "MetricStat": {"Metric": capacity, "Period": 60, "Stat": "SampleCount"}},
        {
            "Id": "concurrency",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": concurrency_name,
                    "Dimensions": invocation_dims,
                },
                "Period": 60,
                "Stat": "Maximum",
            },
        },
        {
            "Id": "invocations",
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": "Invocations",
                    "Dimensions": invocation_dims,
                },
                "Period": 60,
                "Stat": "Sum",
            },
        },
    ]


def fetch_metrics(
    cloudwatch: Any, target: dict[str, Any], start: datetime, end: datetime
) -> dict[str, list[tuple[float, float]]]:
    """Series per query id as (seconds from ``start``, value)."""
    series: dict[str, list[tuple[float, float]]] = {"capacity": [], "concurrency": [], "invocations": []}
    kwargs: dict[str, Any] = {
        "MetricDataQueries": metric_queries(target),
        "StartTime": start - timedelta(minutes=1),
        "EndTime": end,
        "ScanBy": "TimestampAscending",
    }
    for _ in range(MAX_PAGES):
        page = cloudwatch.get_metric_data(**kwargs)
        for data in page["MetricDataResults"]:
            for at, value in zip(data["Timestamps"], data["Values"], strict=True):
                series[data["Id"]].append(((at - start).total_seconds(), float(value)))
        token = page.get("NextToken")
        if not token:
            break
        kwargs["NextToken"] = token
    return {key: sorted(values) for key, values in series.items()}


def scaling_resource_id(target: dict[str, Any]) -> str:
    component = target.get("inference_component_name")
    if component:
        return f"inference-component/{component}"
    return f"endpoint/{target['endpoint_name']}/variant/{target.get('variant_name') or 'AllTraffic'}"


def fetch_activities(
    autoscaling: Any, target: dict[str, Any], start: datetime, end: datetime
) -> list[dict[str, Any]]:
    """Application Auto Scaling's activities for the target that began inside the window."""
    out = []
    kwargs: dict[str, Any] = {"ServiceNamespace": "sagemaker", "ResourceId": scaling_resource_id(target)}
    for _ in range(MAX_PAGES):
        page = autoscaling.describe_scaling_activities(**kwargs)
        for activity in page["ScalingActivities"]:
            began = activity["StartTime"]
            if start <= began <= end:
                ended = activity.get("EndTime")
                out.append(
                    {
                        "start_s": round((began - start).total_seconds(), 3),
                        "end_s": None if ended is None else round((ended - start).total_seconds(), 3),
                        "status": activity.get("StatusCode"),
                        "description": activity.get("Description", ""),
                        "cause": activity.get("Cause", ""),
                    }
                )
        token = page.get("NextToken")
        if not token:
            break
        kwargs["NextToken"] = token
    return sorted(out, key=lambda a: a["start_s"])
