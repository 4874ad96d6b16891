"""SLO alarms for an endpoint or inference component: latency and acceptance from the canary, error rate
from SageMaker's own metrics, optionally notifying an SNS topic."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aws_cdk import Annotations, Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct
from pydantic import BaseModel, ConfigDict, Field, model_validator

from speculative_infra.constructs.metrics import canary_metric, invocation_metric
from speculative_infra.constructs.monitoring_target import MonitoringTarget
from speculative_infra.constructs.options import parse_options_model
from speculative_infra.constructs.prop_checks import (
    TOPIC,
    construct_path,
    require_instance,
    require_jsii,
    require_mapping,
)

# Canary figures: a period holds three runs (15 minutes at the default 5-minute schedule); two breaching
# periods in a row alarm, so a single slow run does not page anyone. SageMaker's error rate: 5-minute
# periods, two of the last three.
CANARY_RUNS_PER_PERIOD = 3
MIN_CANARY_PERIOD_MINUTES = 15
MAX_CANARY_EVERY_MINUTES = 60  # beyond, two periods span 6 hours: too slow to call an SLO alarm
CANARY_EVALUATION_PERIODS = 2
ERROR_PERIOD = Duration.minutes(5)
ERROR_EVALUATION_PERIODS, ERROR_DATAPOINTS = 3, 2


@dataclass(frozen=True)
class CanarySchedule:
    """What the alarms need to know of the canary."""

    every_minutes: int
    enabled: bool


class EndpointSlos(BaseModel):
    """Objectives; each one given becomes an alarm. Canary-based objectives need the canary."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    p90_ttft_ms: float | None = Field(default=None, gt=0, description="Canary p90 time to first token.")
    p90_tpot_ms: float | None = Field(default=None, gt=0, description="Canary p90 time per output token.")
    error_rate: float | None = Field(
        default=None,
        gt=0,
        lt=1,
        description="Share of requests answered 5xx (SageMaker), and of canary failures.",
    )
    min_tokens_per_chunk: float | Literal["benchmark"] | None = Field(
        default=None,
        description="Acceptance floor: canary mean tokens per chunk (accepted draft + 1). 'benchmark': the "
        "post-deploy benchmark's value at its lowest level, less `acceptance_drop`.",
    )
    acceptance_drop: float = Field(
        default=0.15, gt=0, lt=1, description="With 'benchmark': the drop that alarms. Default: 0.15."
    )

    @model_validator(mode="after")
    def _floor(self) -> EndpointSlos:
        if "acceptance_drop" in self.model_fields_set and self.min_tokens_per_chunk != "benchmark":
            raise ValueError(
                "acceptance_drop applies with min_tokens_per_chunk='benchmark' only; it would be ignored"
            )
        if isinstance(self.min_tokens_per_chunk, float) and self.min_tokens_per_chunk <= 1:
            raise ValueError(
                "min_tokens_per_chunk must be > 1 (one token per chunk is no speculation at all)"
            )
        return self

    def needs_canary(self) -> list[str]:
        return [
            name
            for name in ("p90_ttft_ms", "p90_tpot_ms", "min_tokens_per_chunk")
            if getattr(self, name) is not None
        ]


def parse_slos(slos: EndpointSlos | Mapping[str, Any], path: str) -> EndpointSlos:
    return parse_options_model(EndpointSlos, slos, path, "slos")


def alarm_topic(scope: Construct, construct_id: str) -> sns.Topic:
    """An SNS topic CloudWatch alarms can publish to: encrypted with its own key, which the AWS-managed SNS
    key would not allow, and TLS only."""
    key = kms.Key(
        scope, f"{construct_id}Key", enable_key_rotation=True, description="speculative-infra SLO alarm topic"
    )
    key.add_to_resource_policy(
        iam.PolicyStatement(
            principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"],
            resources=["*"],  # in a key policy, "*" is this key
        )
    )
    return sns.Topic(scope, construct_id, master_key=key, enforce_ssl=True)


class SloAlarms(Construct):
    """One alarm per objective (see docs/constructs/endpoint-dashboard.md for periods and missing data)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: MonitoringTarget,
        slos: EndpointSlos | Mapping[str, Any],
        canary: CanarySchedule | None,
        topic: sns.ITopic | None = None,
    ) -> None:
        """
        :param canary: the canary's schedule, if there is one (its figures feed the canary alarms).
        """
        where = construct_path(scope, construct_id)
        require_instance(target, MonitoringTarget, "target", where, optional=False)
        require_mapping(slos, "slos", where, models=(EndpointSlos,), optional=False)
        require_instance(canary, CanarySchedule, "canary", where)
        require_jsii(topic, TOPIC, "topic", where)
        super().__init__(scope, construct_id)
        self.slos = parse_slos(slos, self.node.path)
        missing = self.slos.needs_canary()
        if missing and canary is None:
            raise ValueError(
                f"{self.node.path}: {', '.join(missing)} are measured by the canary: call add_canary() before "
                "add_slo_alarms(), or leave them out"
            )
        if missing and canary is not None and not canary.enabled:
            Annotations.of(self).add_warning_v2(
                "speculative-infra:slo-on-disabled-canary",
                f"{', '.join(missing)} are measured by the canary, whose schedule is disabled (enabled=False, "
                "the default when the endpoint scales to zero): their alarms stay OK until it is enabled "
                "(CanaryOptions enabled=True)"
                + (
                    ", and the acceptance alarm will not start retraining"
                    if "min_tokens_per_chunk" in missing
                    else ""
                ),
            )
        uses_canary = bool(missing) or (
            self.slos.error_rate is not None and canary is not None and canary.enabled
        )
        if canary is not None and uses_canary and canary.every_minutes > MAX_CANARY_EVERY_MINUTES:
            raise ValueError(
                f"{self.node.path}: the canary runs every {canary.every_minutes} minutes; SLO alarms on its "
                f"figures need a run at least every {MAX_CANARY_EVERY_MINUTES} minutes (CanaryOptions.every_minutes)"
            )
        self.canary = canary
        self.canary_period = Duration.minutes(
            max(MIN_CANARY_PERIOD_MINUTES, CANARY_RUNS_PER_PERIOD * (canary.every_minutes if canary else 5))
        )
        if self.slos.min_tokens_per_chunk == "benchmark" and target.benchmark is None:
            raise ValueError(
                f"{self.node.path}: min_tokens_per_chunk='benchmark' needs the post-deploy benchmark "
                "(benchmark=...) or give the floor as a number"
            )
        self.target = target
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        slos_ = self.slos
        if slos_.p90_ttft_ms is not None:
            self._canary_alarm(
                "P90Ttft", "TimeToFirstToken", "p90", slos_.p90_ttft_ms, "p90 time to first token (ms)"
            )
        if slos_.p90_tpot_ms is not None:
            self._canary_alarm(
                "P90Tpot", "TimePerOutputToken", "p90", slos_.p90_tpot_ms, "p90 time per output token (ms)"
            )
        if slos_.error_rate is not None:
            self._error_rate_alarms(slos_.error_rate)
        if slos_.min_tokens_per_chunk is not None:
            self._acceptance_alarm()
        self.topic = topic
        if topic is not None:
            for alarm in self.alarms.values():
                alarm.add_alarm_action(cw_actions.SnsAction(topic))
                alarm.add_ok_action(cw_actions.SnsAction(topic))

    @property
    def acceptance_alarm(self) -> cloudwatch.Alarm | None:
        """The acceptance-drop alarm: what should start EAGLE retraining."""
        return self.alarms.get("AcceptanceDrop")

    def _canary_alarm(self, name: str, metric_name: str, statistic: str, threshold: float, what: str) -> None:
        self.alarms[name] = cloudwatch.Alarm(
            self,
            name,
            metric=canary_metric(self.target, metric_name, statistic, period=self.canary_period),
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=CANARY_EVALUATION_PERIODS,
            datapoints_to_alarm=CANARY_EVALUATION_PERIODS,
            # No successful canary request, no sample: the error-rate alarm speaks for failures.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{self.target.label}: canary {what} above {threshold:g} for "
            f"{CANARY_EVALUATION_PERIODS * int(self.canary_period.to_minutes())} minutes",
        )

    def _error_rate_alarms(self, rate: float) -> None:
        self.alarms["ErrorRate"] = cloudwatch.Alarm(
            self,
            "ErrorRate",
            # 1 per 5xx answer and 0 per other answer: the average is the share answered 5xx.
            metric=invocation_metric(self.target, "Invocation5XXErrors", "Average", period=ERROR_PERIOD),
            threshold=rate,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=ERROR_EVALUATION_PERIODS,
            datapoints_to_alarm=ERROR_DATAPOINTS,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,  # no traffic, no errors
            alarm_description=f"{self.target.label}: more than {rate:.1%} of requests answered 5xx",
        )
        # Only with a running canary: its silence is what this alarm treats as breaching, and a disabled
        # canary (scale to zero) is silent by design.
        if self.canary is not None and self.canary.enabled:
            # Canary failures include what SageMaker does not count: errors in the middle of a stream.
            failed = cloudwatch.MathExpression(
                expression="IF(requests > 0, failed / requests, 0)",
                using_metrics={
                    "failed": canary_metric(self.target, "FailedRequests", "Sum", period=self.canary_period),
                    "requests": canary_metric(self.target, "Requests", "Sum", period=self.canary_period),
                },
                period=self.canary_period,
                label="canary failure rate",
            )
            self.alarms["CanaryFailureRate"] = cloudwatch.Alarm(
                self,
                "CanaryFailureRate",
                metric=failed,
                threshold=rate,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=CANARY_EVALUATION_PERIODS,
                datapoints_to_alarm=CANARY_EVALUATION_PERIODS,
                # The canary not running at all is a failure to see: alarm on it.
                treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
                alarm_description=f"{self.target.label}: more than {rate:.1%} of canary requests failed, "
                "or the canary stopped reporting",
            )

    def _acceptance_alarm(self) -> None:
        floor = self.slos.min_tokens_per_chunk
        # Twice the canary period (six runs): acceptance moves slowly, a single run should not decide.
        period = Duration.minutes(2 * int(self.canary_period.to_minutes()))
        tokens_per_chunk = canary_metric(self.target, "TokensPerChunk", "Average", period=period)
        if floor == "benchmark":
            assert self.target.benchmark is not None
            keep = 1 - self.slos.acceptance_drop
            # tokens/chunk < baseline * keep  <=>  tokens/chunk / keep < baseline; the baseline is only known
            # once the benchmark has run, so it is the threshold (an attribute of the benchmark resource).
            metric: cloudwatch.IMetric = cloudwatch.MathExpression(
                expression=f"tpc / {keep:g}",
                using_metrics={"tpc": tokens_per_chunk},
                period=period,
                label=f"canary tokens per chunk / {keep:g}",
            )
            self.target.benchmark.require_baseline()
            threshold = Token.as_number(self.target.benchmark.tokens_per_chunk_baseline)
            what = f"more than {self.slos.acceptance_drop:.0%} below the post-deploy benchmark's"
        else:
            assert isinstance(floor, float)
            metric, threshold, what = tokens_per_chunk, floor, f"below {floor:g}"
        self.alarms["AcceptanceDrop"] = cloudwatch.Alarm(
            self,
            "AcceptanceDrop",
            metric=metric,
            threshold=threshold,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=2,
            datapoints_to_alarm=2,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=f"{self.target.label}: canary tokens per chunk {what} for "
            f"{2 * int(period.to_minutes())} minutes: the draft accepts fewer tokens on today's traffic (retrain it)",
        )
