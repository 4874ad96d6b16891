"""workload= on the endpoint constructs: the planner's prediction at synth (an info annotation and
`planned_levels`), and the prediction EndpointBenchmark publishes beside its measurement."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest

from speculative_infra import PlannedWorkload
from speculative_infra.planner.calibration import CONTEXT_KEY, factor_key
from speculative_infra.planner.predict import predict
from speculative_infra.planner.workload import Workload
from tests.cfn import cfn_lint_errors
from tests.constructs import test_lmi_component, test_vllm_endpoint

WORKLOAD = {"input_tokens": 1000, "output_tokens": 560}


def _stack(context: dict[str, Any] | None = None) -> tuple[cdk.App, cdk.Stack]:
    app = cdk.App(context=context)
    return app, cdk.Stack(app, "S", env=cdk.Environment(region="us-east-1"))


def _messages(app: cdk.App, level: str = "info") -> list[str]:
    stack = app.synth().get_stack_by_name("S")
    return [str(m.entry.data) for m in stack.messages if m.level.value == level.upper()]


def test_annotation_states_the_prediction_at_the_scaling_target() -> None:
    app, stack = _stack()
    ep = test_vllm_endpoint.reference(
        stack, scaling={"max_capacity": 4, "target_value": 24}, workload=WORKLOAD
    )
    assert ep.planned_levels is not None and [lv["concurrency"] for lv in ep.planned_levels] == [24]
    # The same figures as `plan predict` on the resolved deployment (the planner, called directly).
    direct = predict(ep.resolved, Workload(1000, 560), concurrency=[24]).levels[0]
    assert ep.planned_levels[0]["output_tokens_per_s"] == round(direct.output_tokens_per_s or 0, 1)
    plan = next(m for m in _messages(app) if m.startswith("planner:"))
    assert "per instance for 1000 input / 560 output tokens (chat" in plan
    assert f"concurrency 24: {ep.planned_levels[0]['output_tokens_per_s']:,.0f} output tok/s" in plan
    assert "per million output tokens" in plan and "assumed acceptance length" in plan


def test_no_workload_no_prediction() -> None:
    app, stack = _stack()
    ep = test_vllm_endpoint.reference(stack)
    assert ep.workload is None and ep.planned_levels is None
    assert not any(m.startswith("planner:") for m in _messages(app))


def test_without_scaling_the_ends_of_the_batch_are_predicted() -> None:
    _, stack = _stack()
    ep = test_vllm_endpoint.reference(stack, workload=WORKLOAD)
    max_num_seqs = int(ep.resolved.engine.get("max_num_seqs", 256))
    assert ep.planned_levels is not None
    assert [lv["concurrency"] for lv in ep.planned_levels] == [1, max_num_seqs]


def test_invocations_target_is_predicted_as_a_request_rate() -> None:
    _, stack = _stack()
    ep = test_vllm_endpoint.reference(
        stack,
        scaling={"max_capacity": 4, "metric": "invocations", "target_value": 30},
        workload=PlannedWorkload(input_tokens=1000, output_tokens=560, concurrency=None),
    )
    assert ep.planned_levels is not None
    assert [(lv["concurrency"], lv["request_rate"]) for lv in ep.planned_levels] == [(None, 0.5)]


def test_declared_concurrency_and_acceptance_win() -> None:
    _, stack = _stack()
    ep = test_vllm_endpoint.reference(
        stack, workload={**WORKLOAD, "concurrency": [1, 8], "acceptance_length": 3.0}
    )
    assert ep.planned_levels is not None and [lv["concurrency"] for lv in ep.planned_levels] == [1, 8]
    direct = predict(ep.resolved, Workload(1000, 560), concurrency=[8], acceptance_length=3.0).levels[0]
    assert ep.planned_levels[1]["output_tokens_per_s"] == round(direct.output_tokens_per_s or 0, 1)


def test_a_calibration_factor_in_the_context_scales_the_prediction() -> None:
    _, plain_stack = _stack()
    plain = test_vllm_endpoint.reference(plain_stack, workload={**WORKLOAD, "concurrency": [4]})
    key = factor_key(
        "RTX-PRO-6000-Blackwell-Server",
        "vllm 0.15.1",
        "Qwen/Qwen3-32B",
        "RedHatAI/Qwen3-32B-speculator.eagle3",
    )
    context = {CONTEXT_KEY: {key: {"factor": 1.5, "source": "results.json of a test run", "runs": 1}}}
    app, stack = _stack(context)
    scaled = test_vllm_endpoint.reference(stack, workload={**WORKLOAD, "concurrency": [4]})
    assert plain.planned_levels and scaled.planned_levels
    ratio = scaled.planned_levels[0]["output_tokens_per_s"] / plain.planned_levels[0]["output_tokens_per_s"]
    assert ratio == pytest.approx(1.5, rel=0.01)
    assert any("scaled by 1.500, measured on your deployment" in m for m in _messages(app))


def test_a_workload_the_deployment_cannot_hold_is_an_error() -> None:
    _, stack = _stack()
    with pytest.raises(
        ValueError, match=r"Qwen3: workload: a request of 9000 input \+ 560 output .*max_model_len"
    ):
        test_vllm_endpoint.reference(stack, workload={"input_tokens": 9000, "output_tokens": 560})


@pytest.mark.parametrize(
    ("workload", "error", "match"),
    [
        (
            {"input_tokens": 0, "output_tokens": 5},
            ValueError,
            r"workload: input_tokens: .*greater than or equal to 1",
        ),
        ({"input_tokens": 10, "output_tokens": 5, "text_kind": "poetry"}, ValueError, r"workload: text_kind"),
        ({"input_tokens": 10, "output_tokens": 5, "concurrency": []}, ValueError, r"workload: concurrency"),
        (
            {"input_tokens": 10, "output_tokens": 5, "concurrency": [8, 0]},
            ValueError,
            r"workload: concurrency\.1",
        ),
        ({"input_tokens": 10, "output_tokens": 5, "prefix_tokens": 11}, ValueError, r"prefix_tokens \(11\)"),
        (
            {"input_tokens": 10, "output_tokens": 5, "tokens": 1},
            ValueError,
            r"workload: tokens: Extra inputs",
        ),
        ("1000/560", TypeError, r"workload must be a PlannedWorkload or a mapping, got str"),
    ],
)
def test_bad_workloads_name_the_field(workload: Any, error: type[Exception], match: str) -> None:
    _, stack = _stack()
    with pytest.raises(error, match=match):
        test_vllm_endpoint.reference(stack, workload=workload)


def test_inference_component_predicts_one_copy_at_its_share_of_the_price() -> None:
    app, stack = _stack()
    component = test_lmi_component.shared(
        stack, workload={**WORKLOAD, "concurrency": [8]}, scaling={"max_capacity": 2}
    )
    assert component.planned_levels is not None
    level = component.planned_levels[0]
    # The component uses all 4 GPUs of ml.g6e.12xlarge: one copy costs the whole instance.
    copy_price = component.benchmark_target().usd_per_hour
    assert copy_price is not None
    expected = copy_price / 3600 / level["output_tokens_per_s"] * 1e6
    assert level["usd_per_million_output_tokens"] == pytest.approx(expected, rel=0.01)
    assert any(m.startswith("planner: predicted per copy") for m in _messages(app))


def _benchmark_resource(stack: cdk.Stack) -> dict[str, Any]:
    raw = cdk.assertions.Template.from_stack(stack).to_json()
    return next(r for r in raw["Resources"].values() if r["Type"] == "Custom::EndpointBenchmark")


def test_benchmark_carries_the_prediction_for_its_own_levels() -> None:
    _, stack = _stack()
    ep = test_vllm_endpoint.reference(
        stack,
        workload={**WORKLOAD, "text_kind": "tool_calling"},
        benchmark={"concurrency": [1, 8], "input_tokens": 800, "output_tokens": 200},
    )
    resource = _benchmark_resource(stack)
    prediction = json.loads(resource["Properties"]["Prediction"])
    assert [lv["concurrency"] for lv in prediction["levels"]] == [1, 8]
    assert prediction["assumptions"]["text_kind"] == "tool_calling"  # the declared kind of text
    direct = predict(ep.resolved, Workload(800, 200, 0, "tool_calling"), concurrency=[8]).levels[0]
    assert prediction["levels"][1]["output_throughput"] == round(direct.output_tokens_per_s or 0, 1)
    assert ep.benchmark is not None
    assert {"PredictedOutputThroughputHighest", "MeasuredOverPredictedOutputThroughputHighest"} <= set(
        ep.benchmark.attributes
    )
    assert cfn_lint_errors(cdk.assertions.Template.from_stack(stack).to_json()) == []


@pytest.mark.parametrize(
    ("benchmark", "instance_count", "reason"),
    [
        ({"dataset_s3_uri": "s3://bucket/prompts/"}, 1, "the prompts come from a dataset"),
        ({"rate_sweep": {"start_rate": 1, "max_rate": 4}, "slo": {"ttft_ms": 500}}, 1, "a rate sweep"),
        ({"concurrency": [1]}, 2, "the endpoint starts with 2"),
    ],
)
def test_benchmark_without_a_prediction_says_why(
    benchmark: dict[str, Any], instance_count: int, reason: str
) -> None:
    app, stack = _stack()
    ep = test_vllm_endpoint.reference(stack, benchmark=benchmark, instance_count=instance_count)
    assert "Prediction" not in _benchmark_resource(stack)["Properties"]
    assert ep.benchmark is not None and ep.benchmark.prediction is None
    assert "PredictedOutputThroughputHighest" not in ep.benchmark.attributes
    assert any(
        m.startswith("EndpointBenchmark publishes no predicted figures") and reason in m
        for m in _messages(app)
    )
