"""add_dashboard / add_canary / add_slo_alarms, one call each, on SpeculativeVllmEndpoint and
LmiInferenceComponent. The modules behind them load only when called (they add CDK modules to synth time).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration
from constructs import Construct

from speculative_infra.constructs.monitoring_target import MonitoringTarget
from speculative_infra.constructs.prop_checks import require_bool

if TYPE_CHECKING:
    from aws_cdk import aws_sns as sns

    from speculative_infra.constructs.endpoint_canary import CanaryOptions, EndpointCanary
    from speculative_infra.constructs.endpoint_dashboard import EndpointDashboard
    from speculative_infra.constructs.slo_alarms import EndpointSlos, SloAlarms


class Observable:
    """Mixed into a Construct that implements monitoring_target()."""

    dashboard: EndpointDashboard | None = None
    canary: EndpointCanary | None = None
    slo_alarms: SloAlarms | None = None

    def monitoring_target(self) -> MonitoringTarget:
        raise NotImplementedError

    def _scope(self) -> Construct:
        assert isinstance(self, Construct)
        return self

    def _real_time_only(self, what: str) -> None:
        if self.monitoring_target().serving == "async":
            raise ValueError(
                f"{self._scope().node.path}: {what} is built for real-time endpoints (streamed answers and "
                "real-time metrics); an asynchronous endpoint publishes its backlog metrics instead "
                "(ApproximateBacklogSize, HasBacklogWithoutCapacity)"
            )

    def add_dashboard(
        self, *, dashboard_name: str | None = None, default_range: Duration | None = None
    ) -> EndpointDashboard:
        """A CloudWatch dashboard: traffic, errors, latency, concurrency against the scaling target,
        capacity, GPU and host, the benchmark's levels, and the canary and SLO alarms once added."""
        from speculative_infra.constructs.endpoint_dashboard import EndpointDashboard

        if self.dashboard is not None:
            raise ValueError(f"{self._scope().node.path}: add_dashboard() was already called")
        self._real_time_only("add_dashboard()")
        self.dashboard = EndpointDashboard(
            self._scope(),
            "Dashboard",
            target=self,
            dashboard_name=dashboard_name,
            default_range=default_range,
        )
        if self.canary is not None:
            self.dashboard.add_canary_section()
        if self.slo_alarms is not None:
            self.dashboard.add_alarms_section(list(self.slo_alarms.alarms.values()))
        return self.dashboard

    def add_canary(self, options: CanaryOptions | Mapping[str, Any] | None = None) -> EndpointCanary:
        """A scheduled synthetic canary publishing TTFT, TPOT, tokens/s, tokens per chunk and errors.
        Default: 3 requests of 64 tokens every 5 minutes; disabled for an endpoint that scales to zero."""
        from speculative_infra.constructs.endpoint_canary import EndpointCanary

        if self.canary is not None:
            raise ValueError(f"{self._scope().node.path}: add_canary() was already called")
        if self.slo_alarms is not None:
            # The alarms were built without the canary's figures (its failure-rate alarm would be missing).
            raise ValueError(
                f"{self._scope().node.path}: call add_canary() before add_slo_alarms(): the SLO alarms read "
                "the canary's figures"
            )
        self._real_time_only("add_canary()")
        self.canary = EndpointCanary(self._scope(), "Canary", target=self, options=options)
        if self.dashboard is not None:
            self.dashboard.add_canary_section()
        return self.canary

    def add_slo_alarms(
        self,
        slos: EndpointSlos | Mapping[str, Any],
        *,
        topic: sns.ITopic | None = None,
        create_topic: bool = False,
    ) -> SloAlarms:
        """One alarm per objective; with `topic` (or `create_topic`) they notify SNS on ALARM and OK.

        :param slos: EndpointSlos (p90_ttft_ms, p90_tpot_ms, error_rate, min_tokens_per_chunk).
        :param topic: an SNS topic to notify. Default: none.
        :param create_topic: create an encrypted topic CloudWatch can publish to. Default: false.
        """
        from speculative_infra.constructs.slo_alarms import CanarySchedule, SloAlarms, alarm_topic

        scope = self._scope()
        require_bool(create_topic, "create_topic", f"{scope.node.path}/SloAlarms")
        if self.slo_alarms is not None:
            raise ValueError(f"{scope.node.path}: add_slo_alarms() was already called")
        self._real_time_only("add_slo_alarms()")
        if topic is not None and create_topic:
            raise ValueError(f"{scope.node.path}: give topic or create_topic, not both")
        if create_topic:
            topic = alarm_topic(scope, "SloAlarmTopic")
        self.slo_alarms = SloAlarms(
            scope,
            "SloAlarms",
            target=self.monitoring_target(),
            slos=slos,
            canary=None
            if self.canary is None
            else CanarySchedule(self.canary.options.every_minutes, self.canary.enabled),
            topic=topic,
        )
        if self.dashboard is not None:
            self.dashboard.add_alarms_section(list(self.slo_alarms.alarms.values()))
        return self.slo_alarms
