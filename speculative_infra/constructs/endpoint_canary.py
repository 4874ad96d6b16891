"""EndpointCanary: a scheduled Lambda that sends a few short streaming requests and publishes TTFT, TPOT,
tokens/s, tokens per chunk and errors (lambda/endpoint_canary) through CloudWatch EMF.

Scheduled by EventBridge Scheduler (the schedule's input is the canary's whole configuration); one
invocation takes seconds, never waits for anything but its own requests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct
from pydantic import BaseModel, ConfigDict, Field, model_validator

from speculative_infra.catalog.monitoring import MonitoringPrices, load_monitoring_facts
from speculative_infra.constructs.custom_resource import handler_function, stage_engine_handler
from speculative_infra.constructs.monitoring_target import Monitorable, MonitoringTarget
from speculative_infra.constructs.options import parse_options_model
from speculative_infra.constructs.policies import INVOKE_ACTIONS
from speculative_infra.constructs.prop_checks import construct_path, require_mapping, wrong_type

MEMORY_MB = 256
# Custom metrics one canary publishes: 4 per-request series + Requests + FailedRequests, and one Errors
# series per error class seen (two assumed for the estimate).
CANARY_METRICS = 6
ASSUMED_ERROR_CLASSES = 2
LOG_BYTES_PER_RUN = 3000  # EMF lines, the summary line and Lambda's START/END/REPORT lines
MINUTES_PER_MONTH = 30 * 24 * 60
MAX_RUN_SECONDS = 840  # a Lambda invocation lasts at most 15 minutes; one minute kept back


class CanaryOptions(BaseModel):
    """How often and how hard the canary probes the endpoint."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    every_minutes: int = Field(default=5, ge=1, le=1440, description="Default: 5.")
    requests: int = Field(default=3, ge=1, le=20, description="Requests per run, one at a time. Default: 3.")
    output_tokens: int = Field(default=64, ge=2, le=2048, description="Tokens per request. Default: 64.")
    request_timeout_seconds: float = Field(default=60, gt=0, le=300, description="Default: 60.")
    expected_tpot_ms: float = Field(
        default=30.0, gt=0, description="Time per output token assumed for the cost and timeout. Default: 30."
    )
    enabled: bool | None = Field(
        default=None,
        description="Default: on, except for an endpoint that scales to zero (the canary would keep it awake): "
        "its schedule is created disabled.",
    )

    @model_validator(mode="after")
    def _fits(self) -> CanaryOptions:
        seconds = run_seconds(self)
        limit = min(self.every_minutes * 60, MAX_RUN_SECONDS)
        if seconds > limit:
            raise ValueError(
                f"a run is estimated at {seconds:.0f} s (a warm-up and {self.requests} requests x "
                f"{self.output_tokens} tokens at {self.expected_tpot_ms:g} ms per token); it must fit in {limit} s "
                "(the interval between runs and one Lambda invocation): lower requests or output_tokens, or "
                "raise every_minutes"
            )
        worst = worst_case_seconds(self)
        if worst > MAX_RUN_SECONDS:
            raise ValueError(
                f"{self.requests + 1} requests (with the warm-up) x request_timeout_seconds "
                f"{self.request_timeout_seconds:g} can take {worst:.0f} s; one Lambda invocation allows "
                f"{MAX_RUN_SECONDS} s: lower requests or request_timeout_seconds"
            )
        timeout = function_timeout_seconds(self)
        if timeout > self.every_minutes * 60:
            # Overlapping runs would load a slow endpoint further and count their samples twice a period.
            raise ValueError(
                f"a run may last {timeout} s ({self.requests + 1} requests with the warm-up, each up to "
                f"request_timeout_seconds {self.request_timeout_seconds:g}, and 30 s of margin) but runs start "
                f"every {self.every_minutes * 60} s (every_minutes {self.every_minutes}), so they could "
                "overlap: lower request_timeout_seconds or requests, or raise every_minutes"
            )
        return self


def parse_canary_options(options: CanaryOptions | Mapping[str, Any] | None, path: str) -> CanaryOptions:
    return parse_options_model(CanaryOptions, options, path, "canary options")


@dataclass(frozen=True)
class CanaryCost:
    """What the canary costs per month (list prices; the endpoint's own time is not counted)."""

    runs_per_month: int
    lambda_usd: float
    scheduler_usd: float
    metrics_usd: float
    logs_usd: float

    @property
    def total_usd(self) -> float:
        return self.lambda_usd + self.scheduler_usd + self.metrics_usd + self.logs_usd

    def describe(self) -> str:
        return (
            f"about ${self.total_usd:.2f}/month: {self.runs_per_month} runs (Lambda ${self.lambda_usd:.2f}, "
            f"Scheduler ${self.scheduler_usd:.2f}), {CANARY_METRICS + ASSUMED_ERROR_CLASSES} custom metrics "
            f"${self.metrics_usd:.2f}, logs ${self.logs_usd:.2f}"
        )


def run_seconds(options: CanaryOptions) -> float:  # used by CanaryOptions' validator (defined below it)
    """A run's expected length: a warm-up and its requests one after another, plus start-up."""
    per_request = 0.5 + options.output_tokens * options.expected_tpot_ms / 1000.0
    return 2.0 + (options.requests + 1) * per_request


def worst_case_seconds(options: CanaryOptions) -> float:
    """Every request (and the warm-up) running to its timeout: what the function's timeout must allow."""
    return (options.requests + 1) * options.request_timeout_seconds + 10.0


def function_timeout_seconds(options: CanaryOptions) -> int:
    """The function's timeout: room for every request to reach its own timeout, plus the handler's margin
    to print its metrics."""
    return min(900, math.ceil(worst_case_seconds(options) + 20))


def monthly_cost(options: CanaryOptions, prices: MonitoringPrices | None = None) -> CanaryCost:
    prices = prices or load_monitoring_facts().prices
    runs = math.ceil(MINUTES_PER_MONTH / options.every_minutes)
    gb_seconds = runs * run_seconds(options) * MEMORY_MB / 1024
    return CanaryCost(
        runs_per_month=runs,
        lambda_usd=gb_seconds * prices.lambda_usd_per_gb_second
        + runs * prices.lambda_usd_per_million_requests / 1e6,
        scheduler_usd=runs * prices.scheduler_usd_per_million_invocations / 1e6,
        metrics_usd=(CANARY_METRICS + ASSUMED_ERROR_CLASSES) * prices.custom_metric_usd_per_month,
        logs_usd=runs * LOG_BYTES_PER_RUN / 1e9 * prices.logs_ingestion_usd_per_gb,
    )


def schedule_input(target: MonitoringTarget, options: CanaryOptions) -> dict[str, Any]:
    """The handler's configuration (lambda/endpoint_canary/handler.py reads exactly this)."""
    return {
        "target": {
            "kind": "sagemaker",
            "endpoint_name": target.endpoint_name,
            "inference_component_name": target.component_name,
            "container": target.container,
            "client": "boto3",  # AWS's own client: one request at a time needs no more
        },
        "requests": options.requests,
        "output_tokens": options.output_tokens,
        "request_timeout_s": options.request_timeout_seconds,
    }


class EndpointCanary(Construct):
    """A synthetic canary for one endpoint or inference component (see docs/constructs/endpoint-dashboard.md)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        target: Monitorable,
        options: CanaryOptions | Mapping[str, Any] | None = None,
    ) -> None:
        """
        :param target: a SpeculativeVllmEndpoint or LmiInferenceComponent (anything with monitoring_target()).
        :param options: schedule and requests. Default: CanaryOptions() (3 requests of 64 tokens every 5 minutes).
        """
        where = construct_path(scope, construct_id)
        if not isinstance(target, Monitorable):
            raise wrong_type(
                where,
                "target",
                "a SpeculativeVllmEndpoint or an LmiInferenceComponent (anything with monitoring_target())",
                target,
            )
        require_mapping(options, "options", where, models=(CanaryOptions,))
        super().__init__(scope, construct_id)
        self.options = parse_canary_options(options, self.node.path)
        self.target = target.monitoring_target()
        self.enabled = (
            self.options.enabled if self.options.enabled is not None else not self.target.scales_to_zero
        )
        self.function: lambda_.Function = handler_function(
            self,
            "Function",
            handler="endpoint_canary.handler.handler",
            description="endpoint canary",
            timeout=Duration.seconds(function_timeout_seconds(self.options)),
            memory_size=MEMORY_MB,
            code=lambda_.Code.from_asset(stage_engine_handler("endpoint_canary")),
        )
        # Scheduler invokes the function asynchronously, and Lambda retries a failed asynchronous call twice
        # by default: a failed run is reported by the next one, not re-run. An event older than one
        # interval is dropped too (Lambda allows 60 s to 6 hours).
        self.function.configure_async_invoke(
            retry_attempts=0,
            max_event_age=Duration.seconds(min(21600, max(60, self.options.every_minutes * 60))),
        )
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=INVOKE_ACTIONS, resources=self.target.invoke_arns)
        )
        role = iam.Role(
            self,
            "ScheduleRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            ),
            description="speculative-infra endpoint canary schedule",
        )
        role.add_to_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.function.function_arn])
        )
        self.schedule = scheduler.CfnSchedule(
            self,
            "Schedule",
            schedule_expression=f"rate({self.options.every_minutes} minute{'s' * (self.options.every_minutes > 1)})",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            state="ENABLED" if self.enabled else "DISABLED",
            description=f"speculative-infra canary for {self.target.label}",
            target=scheduler.CfnSchedule.TargetProperty(
                arn=self.function.function_arn,
                role_arn=role.role_arn,
                input=Stack.of(self).to_json_string(schedule_input(self.target, self.options)),
                # A missed run is not worth a retry: the next one comes in a few minutes.
                retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(maximum_retry_attempts=0),
            ),
        )
        self.schedule.node.add_dependency(role)
        self.cost = monthly_cost(self.options)
        Annotations.of(self).add_info(f"endpoint canary: {self.cost.describe()}")
        if not self.enabled:
            Annotations.of(self).add_warning_v2(
                "speculative-infra:canary-disabled",
                "the endpoint scales to zero: the canary's schedule is created DISABLED so it does not keep an "
                "instance running; enable it (options enabled=True) to probe it anyway",
            )
