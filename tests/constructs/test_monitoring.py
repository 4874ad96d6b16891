"""EndpointDashboard, EndpointCanary and SLO alarms on both endpoint constructs.

Every metric a synthesized dashboard plots is checked against what AWS documents (catalog
monitoring.yaml) or what this project's handlers emit (found by running them, not from a second list).
"""

from __future__ import annotations

import json
import math
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns

from speculative_infra.benchmark.sweep import new_benchmark
from speculative_infra.catalog.monitoring import MonitoringPrices, load_monitoring_facts
from speculative_infra.constructs.dashboard_body import (
    plotted_metrics,
    read_dashboard_body,
    with_placeholders,
)
from speculative_infra.constructs.endpoint_canary import CanaryOptions, monthly_cost, run_seconds
from speculative_infra_lambda.endpoint_benchmark import emf as benchmark_emf
from speculative_infra_lambda.endpoint_canary import emf as canary_emf
from speculative_infra_lambda.endpoint_canary import handler as canary_handler
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.conftest import REPO
from tests.constructs import test_lmi_component, test_vllm_endpoint

SLOS = {"p90_ttft_ms": 500, "p90_tpot_ms": 40, "error_rate": 0.01, "min_tokens_per_chunk": "benchmark"}


def reference(stack: cdk.Stack, **props: Any):
    """The reference endpoint with a benchmark, a dashboard, a canary and every SLO alarm."""
    endpoint = test_vllm_endpoint.reference(
        stack,
        scaling={"min_capacity": 1, "max_capacity": 4},
        benchmark={"concurrency": [1, 8, 32]},
        **props,
    )
    endpoint.add_dashboard()
    endpoint.add_canary()
    endpoint.add_slo_alarms(SLOS, create_topic=True)
    return endpoint


def _special(stack: cdk.Stack, name: str):
    assert name == "lmi-scale-to-zero-own-topic"
    component = test_lmi_component.scale_to_zero(stack)
    component.add_canary()  # created disabled: the endpoint scales to zero
    component.add_slo_alarms(
        {"error_rate": 0.05, "min_tokens_per_chunk": 1.8}, topic=sns.Topic(stack, "Pager", enforce_ssl=True)
    )
    component.add_dashboard()  # after the canary and alarms: their sections are still there
    return component


CONFIGURATIONS = {"vllm-reference-observed": {}, "lmi-scale-to-zero-own-topic": "special"}


def _build(name: str):
    props = CONFIGURATIONS[name]
    return (lambda s: _special(s, name)) if props == "special" else (lambda s: reference(s, **props))


@pytest.fixture(scope="module", params=sorted(CONFIGURATIONS))
def configuration(request):
    return request.param, synth_stack(_build(request.param))


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _dashboard(template: dict[str, Any]) -> dict[str, Any]:
    (dashboard,) = _resources(template, "AWS::CloudWatch::Dashboard").values()
    return read_dashboard_body(dashboard["Properties"]["DashboardBody"])


def test_snapshot(configuration, snapshot):
    _, (_, template) = configuration
    assert normalized(template) == snapshot


def test_cfn_lint_clean(configuration):
    _, (_, template) = configuration
    assert cfn_lint_errors(template) == []


@pytest.fixture(scope="module")
def emitted_canary_metrics() -> set[str]:
    """Every metric name the canary handler declares, run against the SageMaker stand-in: once on a
    speculative endpoint (every figure) and once on one that fails (the error-class series)."""
    import contextlib
    import io
    import os

    from tests.benchmark.conftest import SCENARIOS
    from tests.benchmark.stand_ins.server import ServerProcess

    names: set[str] = set()
    saved = dict(os.environ)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
    )
    try:
        with ServerProcess(SCENARIOS) as server:
            for endpoint in ("spec", "sm_model_error"):
                event = {
                    "target": {
                        "kind": "sagemaker",
                        "endpoint_name": endpoint,
                        "region": "us-west-2",
                        "endpoint_url": server.base_url,
                        "container": "vllm",
                        "client": "boto3",
                    },
                    "requests": 2,
                    "output_tokens": 9,
                    "request_timeout_s": 10,
                }
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    canary_handler.run_canary(event, seconds_available=30)
                for line in out.getvalue().splitlines():
                    doc = json.loads(line)
                    for block in doc.get("_aws", {}).get("CloudWatchMetrics", []):
                        names |= {m["Name"] for m in block["Metrics"]}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return names


def _emitted_benchmark_metrics() -> set[str]:
    level = {key: 1.0 for _, key, _ in benchmark_emf._METRICS} | {"concurrency": 1}
    doc = json.loads(benchmark_emf.level_metrics_line("t", level, now_ms=0))
    return {m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def test_every_dashboard_metric_is_documented_by_aws_or_emitted_by_our_handlers(
    configuration, emitted_canary_metrics
):
    _, (_, template) = configuration
    facts = load_monitoring_facts()
    assert set(canary_emf.METRIC_NAMES) == emitted_canary_metrics  # the run emitted every series
    ours = {
        canary_emf.NAMESPACE: (emitted_canary_metrics, [["Target"]]),
        benchmark_emf.NAMESPACE: (
            _emitted_benchmark_metrics(),
            [["Target", "Concurrency"], ["Target", "RequestRate"]],
        ),
    }
    plotted = plotted_metrics(_dashboard(template))
    assert len(plotted) > 20
    for metric in plotted:
        where = f"{metric.widget}: {metric.namespace} {metric.name} {metric.statistic}"
        if metric.namespace in ours:
            names, dimension_sets = ours[metric.namespace]
            assert metric.name in names, where
            assert sorted(metric.dimensions) in [sorted(d) for d in dimension_sets], where
            continue
        documented = facts.metric(metric.namespace, metric.name)
        assert sorted(metric.dimensions) in [sorted(d) for d in documented.dimensions], where
        assert documented.allows(metric.statistic), where
        assert metric.period % documented.period_seconds == 0, where


def test_every_alarm_metric_is_documented_or_emitted(configuration, emitted_canary_metrics):
    _, (_, template) = configuration
    facts = load_monitoring_facts()
    for alarm in _resources(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        stats = [m["MetricStat"] for m in props.get("Metrics", []) if "MetricStat" in m]
        metrics = [(s["Metric"]["Namespace"], s["Metric"]["MetricName"], s["Stat"]) for s in stats] or [
            (
                props["Namespace"],
                props["MetricName"],
                props.get("Statistic") or props.get("ExtendedStatistic"),
            )
        ]
        for namespace, name, statistic in metrics:
            if namespace == canary_emf.NAMESPACE:
                assert name in emitted_canary_metrics, name
            else:
                assert facts.metric(namespace, name).allows(statistic), (namespace, name, statistic)


def test_the_documented_list_rejects_what_aws_does_not_publish():
    """The check above can fail: statistics and metrics AWS does not list are refused."""
    facts = load_monitoring_facts()
    assert not facts.metric("AWS/SageMaker", "OverheadLatency").allows("p90")
    assert facts.metric("AWS/SageMaker", "ModelLatency").allows("p99")
    assert not facts.metric("AWS/SageMaker", "ConcurrentRequestsPerModel").allows("Average")
    with pytest.raises(Exception, match="ModelSetupTime"):
        facts.metric("AWS/SageMaker", "ModelSetupTime")


def test_dashboard_rows_cover_the_issue_list():
    _, template = synth_stack(_build("vllm-reference-observed"))
    plotted = {(m.namespace, m.name, m.statistic) for m in plotted_metrics(_dashboard(template))}
    for expected in [
        ("AWS/SageMaker", "Invocations", "Sum"),
        ("AWS/SageMaker", "Invocation4XXErrors", "Average"),
        ("AWS/SageMaker", "Invocation5XXErrors", "Average"),
        ("AWS/SageMaker", "ModelLatency", "p50"),
        ("AWS/SageMaker", "ModelLatency", "p90"),
        ("AWS/SageMaker", "ModelLatency", "p99"),
        ("AWS/SageMaker", "OverheadLatency", "Maximum"),
        ("AWS/SageMaker", "ConcurrentRequestsPerModel", "Maximum"),
        ("/aws/sagemaker/Endpoints", "CPUUtilization", "SampleCount"),  # instances reporting
        ("/aws/sagemaker/Endpoints", "GPUUtilization", "Average"),
        ("/aws/sagemaker/Endpoints", "GPUMemoryUtilization", "Average"),
        ("/aws/sagemaker/Endpoints", "MemoryUtilization", "Average"),
        ("/aws/sagemaker/Endpoints", "DiskUtilization", "Average"),
        ("SpeculativeInfra/EndpointCanary", "TimeToFirstToken", "p90"),
        ("SpeculativeInfra/EndpointCanary", "TokensPerChunk", "Average"),
        ("SpeculativeInfra/EndpointBenchmark", "OutputThroughput", "Maximum"),
    ]:
        assert expected in plotted, expected


def test_scaling_target_and_gpu_ceiling_are_drawn():
    _, template = synth_stack(_build("vllm-reference-observed"))
    widgets = {w["properties"].get("title"): w["properties"] for w in _dashboard(template)["widgets"]}
    concurrency = next(p for t, p in widgets.items() if t and t.startswith("Concurrent requests"))
    # max_num_seqs 64 in the reference engine: target 75% of it.
    assert concurrency["annotations"]["horizontal"] == [
        {"label": "scaling target", "value": 48, "yAxis": "left"}
    ]
    gpu = next(p for t, p in widgets.items() if t and t.startswith("GPU per instance"))
    assert gpu["annotations"]["horizontal"][0]["value"] == 100  # one GPU on g7e.2xlarge
    alarms = next(p for t, p in widgets.items() if t == "SLO alarms")
    assert len(alarms["alarms"]) == 5  # TTFT, TPOT, 5xx rate, canary failures, acceptance


def test_component_dashboard_uses_per_copy_metrics():
    _, template = synth_stack(_build("lmi-scale-to-zero-own-topic"))
    plotted = plotted_metrics(_dashboard(template))
    names = {(m.namespace, m.name) for m in plotted}
    assert ("AWS/SageMaker", "ConcurrentRequestsPerCopy") in names
    assert ("/aws/sagemaker/InferenceComponents", "GPUUtilizationNormalized") in names
    assert ("/aws/sagemaker/Endpoints", "DiskUtilization") in names
    assert ("AWS/SageMaker", "ConcurrentRequestsPerModel") not in names
    invocations = next(m for m in plotted if m.name == "Invocations")
    assert list(invocations.dimensions) == ["InferenceComponentName"]
    titles = [w["properties"].get("title") for w in _dashboard(template)["widgets"]]
    assert "SLO alarms" in titles and "Canary time to first token (ms)" in titles
    body = json.dumps(_dashboard(template))
    assert "CPU (% of the copy's CPUs)" in body and "100 per core" not in body


def test_widgets_fit_the_grid_without_overlap():
    for name in CONFIGURATIONS:
        _, template = synth_stack(_build(name))
        cells = set()
        for widget in _dashboard(template)["widgets"]:
            assert widget["x"] + widget["width"] <= 24
            for x in range(widget["x"], widget["x"] + widget["width"]):
                for y in range(widget["y"], widget["y"] + widget["height"]):
                    assert (x, y) not in cells, (name, widget)
                    cells.add((x, y))


def test_canary_target_dimension_is_what_the_handler_emits_for_the_schedule_input():
    """The schedule's input, run through the handler's own config code, names the target exactly as the
    dashboard and alarms do: a mismatch would leave every canary widget empty."""
    _, template = synth_stack(_build("vllm-reference-observed"))
    (schedule,) = _resources(template, "AWS::Scheduler::Schedule").values()
    event = json.loads(with_placeholders(schedule["Properties"]["Target"]["Input"]))
    config = canary_handler.benchmark_config(event)
    emitted = new_benchmark(config).result.target_name()
    canary = [m for m in plotted_metrics(_dashboard(template)) if m.namespace == canary_emf.NAMESPACE]
    assert canary and {m.dimensions["Target"] for m in canary} == {emitted}
    benchmark = [m for m in plotted_metrics(_dashboard(template)) if m.namespace == benchmark_emf.NAMESPACE]
    assert {m.dimensions["Target"] for m in benchmark} == {emitted}
    assert sorted(m.dimensions["Concurrency"] for m in benchmark if m.name == "OutputThroughput") == [
        "1",
        "32",
        "8",
    ]


def test_canary_schedule_and_permissions():
    _, data = synth_stack(_build("vllm-reference-observed"))
    (schedule,) = _resources(data, "AWS::Scheduler::Schedule").values()
    props = schedule["Properties"]
    assert props["ScheduleExpression"] == "rate(5 minutes)"
    assert props["State"] == "ENABLED"
    assert props["Target"]["RetryPolicy"] == {"MaximumRetryAttempts": 0}
    event = json.loads(with_placeholders(props["Target"]["Input"]))
    assert event["requests"] == 3 and event["output_tokens"] == 64 and event["target"]["container"] == "vllm"
    canary_fn = [
        r
        for r in _resources(data, "AWS::Lambda::Function").values()
        if r["Properties"]["Handler"] == "endpoint_canary.handler.handler"
    ]
    assert len(canary_fn) == 1 and canary_fn[0]["Properties"]["Timeout"] <= 900
    policies = json.dumps(_resources(data, "AWS::IAM::Policy"))
    assert '"lambda:InvokeFunction"' in policies
    assert "sagemaker:InvokeEndpointWithResponseStream" in policies


def test_scale_to_zero_canary_is_created_disabled_with_a_warning():
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=cdk.Environment(region="us-west-2"))
    component = test_lmi_component.scale_to_zero(stack)
    canary = component.add_canary()
    assert canary.enabled is False
    data = app.synth().get_stack_by_name("S")
    (schedule,) = _resources(data.template, "AWS::Scheduler::Schedule").values()
    assert schedule["Properties"]["State"] == "DISABLED"
    messages = [m.entry.data for m in data.messages]
    assert any("canary-disabled" in str(m) for m in messages)
    assert any("custom metrics" in str(m) for m in messages)  # the cost annotation

    stack2 = cdk.Stack(app, "S2", env=cdk.Environment(region="us-west-2"))
    forced = test_lmi_component.scale_to_zero(stack2).add_canary(
        {"enabled": True, "every_minutes": 1, "request_timeout_seconds": 7.5}
    )
    assert forced.enabled is True
    assert forced.schedule.schedule_expression == "rate(1 minute)"


def test_alarms_thresholds_periods_and_missing_data():
    _, data = synth_stack(_build("vllm-reference-observed"))
    alarms = {k: v["Properties"] for k, v in _resources(data, "AWS::CloudWatch::Alarm").items()}
    by_metric: dict[str, dict[str, Any]] = {}
    for props in alarms.values():
        key = props.get("MetricName") or "+".join(
            m["MetricStat"]["Metric"]["MetricName"] for m in props["Metrics"] if "MetricStat" in m
        )
        by_metric[key] = props
    ttft = by_metric["TimeToFirstToken"]
    assert (ttft["Threshold"], ttft["ExtendedStatistic"], ttft["Period"]) == (500, "p90", 900)
    assert (ttft["EvaluationPeriods"], ttft["DatapointsToAlarm"]) == (2, 2)
    assert ttft["ComparisonOperator"] == "GreaterThanThreshold"
    assert ttft["TreatMissingData"] == "notBreaching"
    assert by_metric["TimePerOutputToken"]["Threshold"] == 40
    errors = by_metric["Invocation5XXErrors"]
    assert (errors["Threshold"], errors["Statistic"], errors["Period"]) == (0.01, "Average", 300)
    assert (errors["EvaluationPeriods"], errors["DatapointsToAlarm"]) == (3, 2)
    canary_failures = by_metric["FailedRequests+Requests"]
    assert canary_failures["TreatMissingData"] == "breaching"
    # The stack now reads the benchmark's new attribute: declared, so an existing stack reruns it once.
    (benchmark,) = _resources(data, "Custom::EndpointBenchmark").values()
    assert benchmark["Properties"]["Attributes"] == "TokensPerChunkBaseline"
    acceptance = by_metric["TokensPerChunk"]
    assert acceptance["ComparisonOperator"] == "LessThanThreshold"
    # The baseline is the benchmark's measured tokens per chunk; the expression scales the canary by 1/0.85.
    benchmark, attribute = acceptance["Threshold"]["Fn::GetAtt"]
    assert attribute == "TokensPerChunkBaseline"
    assert data["Resources"][benchmark]["Type"] == "Custom::EndpointBenchmark"
    expression = next(m["Expression"] for m in acceptance["Metrics"] if "Expression" in m)
    assert expression == "tpc / 0.85"
    # Alarm and OK both notify the created topic.
    assert all(len(p["AlarmActions"]) == 1 and len(p["OKActions"]) == 1 for p in alarms.values())


def test_given_acceptance_floor_is_a_plain_threshold():
    _, data = synth_stack(_build("lmi-scale-to-zero-own-topic"))
    alarms = [v["Properties"] for v in _resources(data, "AWS::CloudWatch::Alarm").values()]
    acceptance = next(a for a in alarms if a.get("MetricName") == "TokensPerChunk")
    assert acceptance["Threshold"] == 1.8 and acceptance["Period"] == 1800
    # Its canary is disabled (scale to zero): no alarm on the canary's silence.
    assert not any("Metrics" in a for a in alarms)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda e: e.add_slo_alarms({"p90_ttft_ms": 500}), "p90_ttft_ms are measured by the canary"),
        (lambda e: e.add_slo_alarms({"error_rate": 1.5}), "slos: error_rate: .*less than 1"),
        (lambda e: e.add_slo_alarms({"min_tokens_per_chunk": 0.9}), "must be > 1"),
        (lambda e: e.add_slo_alarms({"p90_ttfb": 1}), "slos: p90_ttfb: Extra inputs"),
        (
            lambda e: (e.add_canary(), e.add_slo_alarms({"min_tokens_per_chunk": "benchmark"})),
            "needs the post-deploy benchmark",
        ),
        (
            lambda e: e.add_canary({"every_minutes": 0}),
            "canary options: every_minutes: .*greater than or equal to 1",
        ),
        (lambda e: e.add_canary({"requests": "many"}), "canary options: requests: .*'many'"),
        (
            lambda e: e.add_canary({"requests": 20, "output_tokens": 1024}),
            "estimated at 658 s .* fit in 300 s",
        ),
        (lambda e: (e.add_canary(), e.add_canary()), "add_canary\\(\\) was already called"),
        (lambda e: (e.add_dashboard(), e.add_dashboard()), "add_dashboard\\(\\) was already called"),
        (
            lambda e: e.add_slo_alarms({"error_rate": 0.1}, topic=sns.Topic(e, "T"), create_topic=True),
            "not both",
        ),
    ],
)
def test_bad_monitoring_input_raises_a_clear_error(setup, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    endpoint = test_vllm_endpoint.reference(stack)
    with pytest.raises(ValueError, match=message):
        setup(endpoint)


def test_a_run_must_fit_between_runs_boundary():
    # 2 s + (1 + a warm-up) x (0.5 s + tokens x 30 ms) against one minute: 949 tokens take 59.94 s, 950 60.0 s
    # (allowed), 951 60.06 s.
    assert CanaryOptions(every_minutes=1, requests=1, output_tokens=950, request_timeout_seconds=15)
    with pytest.raises(ValueError, match="fit in 60 s"):
        CanaryOptions(every_minutes=1, requests=1, output_tokens=951, request_timeout_seconds=15)
    # Above 14 minutes between runs the Lambda's 840 s is the limit, not the interval.
    with pytest.raises(ValueError, match="fit in 840 s"):
        CanaryOptions(every_minutes=60, requests=20, output_tokens=1400)


def test_every_request_may_reach_its_timeout_within_one_invocation():
    # (20 + 1) x timeout + 10 s <= 840 s: 39.5 s fits (839.5 s), 40 s does not (850 s).
    assert CanaryOptions(every_minutes=15, requests=20, output_tokens=8, request_timeout_seconds=39.5)
    with pytest.raises(ValueError, match="can take 850 s"):
        CanaryOptions(every_minutes=15, requests=20, output_tokens=8, request_timeout_seconds=40)


def test_runs_never_overlap_boundary():
    # The function may run (3 + 1) x timeout + 10 s + 20 s: 7.5 s makes exactly 60 s, one minute apart.
    assert CanaryOptions(every_minutes=1, request_timeout_seconds=7.5)
    with pytest.raises(ValueError, match=r"may last 61 s .* every 60 s .* could overlap"):
        CanaryOptions(every_minutes=1, request_timeout_seconds=7.75)
    assert CanaryOptions(every_minutes=5)  # the defaults: 270 s in 300 s


def test_a_failed_run_is_not_retried_by_lambda():
    _, data = synth_stack(_build("vllm-reference-observed"))
    (config,) = _resources(data, "AWS::Lambda::EventInvokeConfig").values()
    assert config["Properties"]["MaximumRetryAttempts"] == 0
    assert config["Properties"]["MaximumEventAgeInSeconds"] == 300  # one interval at the default schedule


def test_the_canary_must_come_before_the_slo_alarms():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    endpoint = test_vllm_endpoint.reference(stack)
    endpoint.add_slo_alarms({"error_rate": 0.01})
    with pytest.raises(ValueError, match="call add_canary\\(\\) before add_slo_alarms\\(\\)"):
        endpoint.add_canary()


def test_slo_alarms_on_a_disabled_canary_warn():
    def warnings(enabled: bool | None) -> list[str]:
        app = cdk.App()
        stack = cdk.Stack(app, "S", env=cdk.Environment(region="us-west-2"))
        component = test_lmi_component.scale_to_zero(stack)
        component.add_canary({"enabled": enabled} if enabled is not None else None)
        component.add_slo_alarms({"p90_ttft_ms": 800, "min_tokens_per_chunk": 2.0})
        return [str(m.entry.data) for m in app.synth().get_stack_by_name("S").messages]

    disabled = [m for m in warnings(None) if "slo-on-disabled-canary" in m]
    assert len(disabled) == 1
    assert "p90_ttft_ms, min_tokens_per_chunk" in disabled[0] and "will not start retraining" in disabled[0]
    assert not [m for m in warnings(True) if "slo-on-disabled-canary" in m]


def test_canary_alarm_periods_follow_the_schedule():
    for every, period in ((5, 900), (10, 1800), (60, 10800)):
        app = cdk.App()
        stack = cdk.Stack(app, f"S{every}", env=cdk.Environment(region="us-west-2"))
        endpoint = test_vllm_endpoint.reference(stack)
        endpoint.add_canary({"every_minutes": every})
        endpoint.add_slo_alarms({"p90_ttft_ms": 500, "min_tokens_per_chunk": 2.0})
        alarms = [
            r["Properties"]
            for r in app.synth().get_stack_by_name(f"S{every}").template["Resources"].values()
            if r["Type"] == "AWS::CloudWatch::Alarm"
        ]
        ttft = next(a for a in alarms if a.get("MetricName") == "TimeToFirstToken")
        acceptance = next(a for a in alarms if a.get("MetricName") == "TokensPerChunk")
        assert (ttft["Period"], acceptance["Period"]) == (period, 2 * period)
    stack = cdk.Stack(cdk.App(), "S61", env=cdk.Environment(region="us-west-2"))
    endpoint = test_vllm_endpoint.reference(stack)
    endpoint.add_canary({"every_minutes": 61})
    with pytest.raises(ValueError, match="runs every 61 minutes"):
        endpoint.add_slo_alarms({"p90_ttft_ms": 500})


def test_canary_monthly_cost_by_hand():
    prices = MonitoringPrices(
        lambda_usd_per_gb_second=0.0000166667,
        lambda_usd_per_million_requests=0.20,
        lambda_source="x",
        custom_metric_usd_per_month=0.30,
        logs_ingestion_usd_per_gb=0.50,
        dashboard_usd_per_month=3.0,
        alarm_usd_per_month=0.10,
        cloudwatch_source="x",
        scheduler_usd_per_million_invocations=1.0,
        scheduler_source="x",
    )
    options = CanaryOptions()
    # (3 requests + a warm-up) x (0.5 s + 64 tokens x 30 ms) + 2 s start-up = 11.68 s; every 5 minutes: 8,640 runs.
    assert run_seconds(options) == pytest.approx(11.68)
    cost = monthly_cost(options, prices)
    assert cost.runs_per_month == 8640
    assert cost.lambda_usd == pytest.approx(8640 * 11.68 * 0.25 * 0.0000166667 + 8640 * 0.2e-6)
    assert cost.metrics_usd == pytest.approx(8 * 0.30)
    assert cost.scheduler_usd == pytest.approx(0.00864)
    assert cost.logs_usd == pytest.approx(8640 * 3000 / 1e9 * 0.5)
    assert 2.5 < cost.total_usd < 3.0
    every_minute = monthly_cost(
        CanaryOptions(every_minutes=1, output_tokens=16, request_timeout_seconds=5), prices
    )
    # 4 x (0.5 + 16 x 0.03) + 2 = 5.92 s per run, 43,200 runs.
    assert every_minute.runs_per_month == 43200
    assert every_minute.lambda_usd == pytest.approx(43200 * 5.92 * 0.25 * 0.0000166667 + 43200 * 0.2e-6)
    assert math.isclose(every_minute.metrics_usd, cost.metrics_usd)


def test_catalog_prices_are_the_ones_the_docs_state():
    prices = load_monitoring_facts().prices
    assert "aws.amazon.com/lambda/pricing" in prices.lambda_source
    assert prices.custom_metric_usd_per_month == 0.30
    doc = (REPO / "docs" / "constructs" / "endpoint-dashboard.md").read_text()
    assert f"${prices.dashboard_usd_per_month:.2f} a month" in doc
    assert f"${prices.alarm_usd_per_month:.2f} a month per metric" in doc
