"""CloudWatch facts: the SageMaker metrics AWS documents, and the prices of watching an endpoint.

Kept apart from the main catalog: only the monitoring constructs read it, so a deployment without a
dashboard never parses it.
"""

from __future__ import annotations

import functools
import re

from pydantic import BaseModel, ConfigDict

from speculative_infra.catalog.loader import CatalogError, _parse, _read_yaml

_PERCENTILE = re.compile(r"^p(\d{1,2}(\.\d+)?|100)$")


class DocumentedMetric(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    namespace: str
    dimensions: list[list[str]]
    unit: str | None
    statistics: list[str] | None
    """CloudWatch statistic names AWS lists; None: AWS lists none (any standard statistic)."""
    percentiles: bool = False
    period_seconds: int = 60
    published_per_instance: bool = False
    meaning: str
    source: str

    def allows(self, statistic: str) -> bool:
        if _PERCENTILE.match(statistic):
            return self.percentiles or self.statistics is None
        if self.statistics is None:
            return statistic in ("Average", "Sum", "Minimum", "Maximum", "SampleCount")
        return statistic in self.statistics


class NotPublished(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: str


class MonitoringPrices(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    lambda_usd_per_gb_second: float
    lambda_usd_per_million_requests: float
    lambda_source: str
    custom_metric_usd_per_month: float
    logs_ingestion_usd_per_gb: float
    dashboard_usd_per_month: float
    alarm_usd_per_month: float
    cloudwatch_source: str
    scheduler_usd_per_million_invocations: float
    scheduler_source: str


class MonitoringFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: list[DocumentedMetric]
    not_published: list[NotPublished]
    prices: MonitoringPrices

    def metric(self, namespace: str, name: str) -> DocumentedMetric:
        for metric in self.metrics:
            if metric.namespace == namespace and metric.name == name:
                return metric
        raise CatalogError(f"monitoring.yaml documents no metric {namespace} {name}")


@functools.cache
def load_monitoring_facts() -> MonitoringFacts:
    facts: MonitoringFacts = _parse(MonitoringFacts, _read_yaml("monitoring.yaml"), "monitoring.yaml")
    return facts
