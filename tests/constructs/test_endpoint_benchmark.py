"""EndpointBenchmark: custom resource wiring, IAM, sizing, the time bound, snapshots and cfn-lint."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match

from speculative_infra import BenchmarkOptions, EndpointBenchmark
from speculative_infra.constructs.custom_resource import stage_engine_handler
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.constructs import test_lmi_component, test_vllm_endpoint


def vllm_with_gates(stack: cdk.Stack):
    return test_vllm_endpoint.reference(
        stack, benchmark={"concurrency": [1, 8, 32], "min_output_throughput": 500, "max_p99_ttft_ms": 2000}
    )


def lmi_component(stack: cdk.Stack):
    return test_lmi_component.shared(stack, benchmark=BenchmarkOptions(concurrency=[1, 4]))


CONFIGURATIONS = {"vllm-with-gates": vllm_with_gates, "lmi-component": lmi_component}


@pytest.fixture(params=sorted(CONFIGURATIONS))
def configuration(request):
    return synth_stack(CONFIGURATIONS[request.param], region="us-east-1")


def test_snapshot(configuration, snapshot):
    assert normalized(configuration[1]) == snapshot


def test_cfn_lint_clean(configuration):
    assert cfn_lint_errors(configuration[1]) == []


def test_custom_resource_carries_config_gates_and_deployment_id():
    template, raw = synth_stack(vllm_with_gates)
    resource = next(r for r in raw["Resources"].values() if r["Type"] == "Custom::EndpointBenchmark")
    props = resource["Properties"]
    assert props["FailOnError"] == "false" and props["ResultsPrefix"] == "endpoint-benchmarks/"
    assert "EndpointConfigName" in json.dumps(props["DeploymentId"]) and "ModelName" in json.dumps(
        props["DeploymentId"]
    )
    config_json = json.dumps(props["Config"])
    assert (
        '\\"concurrency_levels\\":[1,8,32]' in config_json and '\\"price_per_hour\\":4.2,' in config_json
    )  # us-west-2: the seed benchmark's price
    assert '\\"min_output_throughput\\":500' in json.dumps(props["Gates"])
    assert any(d.startswith("Qwen3Endpoint") for d in resource["DependsOn"])
    template.has_output(
        "*", {"Value": {"Fn::GetAtt": [Match.string_like_regexp("Benchmark"), "OutputThroughputHighest"]}}
    )


def test_invoke_permission_is_the_endpoint_only():
    _, raw = synth_stack(vllm_with_gates)
    statements = [
        s
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    invoke = [s for s in statements if "sagemaker:InvokeEndpointWithResponseStream" in s["Action"]]
    assert len(invoke) == 1 and "Qwen3Endpoint" in json.dumps(invoke[0]["Resource"])
    s3 = [s for s in statements if s["Action"] == ["s3:GetObject", "s3:PutObject"]]
    assert s3 and all("endpoint-benchmarks/*" in json.dumps(s["Resource"]) for s in s3)


def test_lmi_component_invokes_endpoint_and_component():
    _, raw = synth_stack(lmi_component, region="us-east-1")
    invoke = next(
        s
        for r in raw["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if "sagemaker:InvokeEndpoint" in s["Action"]
    )
    assert len(invoke["Resource"]) == 2
    resource = next(r for r in raw["Resources"].values() if r["Type"] == "Custom::EndpointBenchmark")
    assert '\\"container\\":\\"lmi\\"' in json.dumps(resource["Properties"]["Config"])


def test_memory_sized_for_the_concurrency():
    template, _ = synth_stack(
        lambda s: test_vllm_endpoint.reference(
            s, benchmark={"concurrency": [1, 300], "requests_per_level": 8}
        )
    )
    template.has_resource_properties(
        "AWS::Lambda::Function",
        {"Handler": "endpoint_benchmark.handler.is_complete", "MemorySize": 3538, "Timeout": 900},
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"requests_per_level": 400}, "one level must fit one 15-minute Lambda"),
        (
            {"concurrency": [2, 2, 3, 4, 6, 8, 12, 16], "requests_per_level": 40, "expected_tpot_ms": 55},
            "CloudFormation waits at most 60 min",
        ),
        ({"concurrency": [0]}, "concurrency levels must be >= 1"),
        ({"max_p99_ttft_ms": -1}, "max_p99_ttft_ms"),
        ({"bogus": 1}, "bogus"),
        ({"request_rates": [1, 0]}, "request rates must be > 0"),
        ({"max_concurrency": 4}, "apply to request_rates"),
        ({"dataset_s3_uri": "file:///tmp/x"}, "dataset_s3_uri: 'file:///tmp/x' is not an S3 URI"),
        ({"output_length": "record"}, "apply with dataset_s3_uri only"),
        ({"request_rates": [0.05], "requests_per_level": 60}, "rate 0.05/s is estimated"),
        ({"slo": {"ttft_ms": 0}}, "slo.ttft_ms"),
        ({"rate_sweep": {"start_rate": 1, "max_rate": 8}}, "rate_sweep needs slo"),
        (
            {"rate_sweep": {"start_rate": 1, "max_rate": 8}, "slo": {"ttft_ms": 500}, "request_rates": [1]},
            "give request_rates or rate_sweep, not both",
        ),
        ({"rate_sweep": {"start_rate": 4, "max_rate": 2}, "slo": {"ttft_ms": 500}}, "must be >= start_rate"),
        ({"rate_sweep": {"start_rate": 1}, "slo": {"ttft_ms": 500}}, "max_rate"),
        # 81 requests at 0.1 requests/s: 13.5 minutes, more than one Lambda invocation can run.
        (
            {
                "rate_sweep": {"start_rate": 0.1, "max_rate": 0.4},
                "slo": {"ttft_ms": 500},
                "requests_per_level": 80,
            },
            "rate 0.1/s is estimated",
        ),
    ],
)
def test_options_that_cannot_work_fail_at_synth(options, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(ValueError, match=message):
        test_vllm_endpoint.reference(stack, benchmark=options)


def test_estimate_is_conservative_for_the_default():
    options = BenchmarkOptions()
    assert options.estimated_total_seconds() < 50 * 60
    assert max(options.estimated_level_seconds(c) for c in options.concurrency) < 13 * 60


def test_asset_bundles_handler_and_engine_without_dev_only_modules():
    staged = Path(stage_engine_handler("endpoint_benchmark"))
    assert (staged / "endpoint_benchmark" / "handler.py").is_file()
    assert (staged / "speculative_infra" / "benchmark" / "sweep.py").is_file()
    assert (staged / "speculative_infra" / "benchmark" / "transports" / "sagemaker.py").is_file()
    assert not (
        staged / "speculative_infra" / "benchmark" / "report.py"
    ).exists()  # matplotlib is not in Lambda
    assert not (staged / "speculative_infra" / "constructs").exists()
    assert not list(staged.rglob("__pycache__"))


def test_standalone_construct_rejects_other_targets():
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    with pytest.raises(ValueError, match="target must be"):
        EndpointBenchmark(stack, "B", target=stack)  # type: ignore[arg-type]


def test_standalone_construct_on_an_endpoint():
    def build(stack):
        endpoint = test_vllm_endpoint.reference(stack)
        EndpointBenchmark(stack, "Bench", target=endpoint, options={"concurrency": [4]})

    template, _ = synth_stack(build)
    template.resource_count_is("Custom::EndpointBenchmark", 1)


def test_open_loop_dataset_and_slo_reach_the_engine_config_and_the_role():
    options = {
        "request_rates": [0.5, 2],
        "max_concurrency": 16,
        "slo": {"ttft_ms": 500, "tpot_ms": 50},
        "dataset_s3_uri": "s3://captures/qwen3/AllTraffic/",
        "dataset_format": "datacapture",
    }
    _, raw = synth_stack(lambda s: test_vllm_endpoint.reference(s, benchmark=options))
    resource = next(r for r in raw["Resources"].values() if r["Type"] == "Custom::EndpointBenchmark")
    config_text = "".join(
        p if isinstance(p, str) else "" for p in resource["Properties"]["Config"]["Fn::Join"][1]
    )
    # The target part holds tokens (the endpoint name); everything from "workload" on is literal JSON.
    config = json.loads("{" + config_text[config_text.index('"workload"') :])
    assert config["load"]["request_rates"] == [0.5, 2] and config["load"]["max_concurrency"] == 16
    assert config["slo"] == {"ttft_ms": 500, "tpot_ms": 50}
    assert config["workload"]["dataset"] == {
        "path": "s3://captures/qwen3/AllTraffic/",
        "format": "datacapture",
        "output_length": "forced",
    }
    policies = json.dumps([r for r in raw["Resources"].values() if r["Type"] == "AWS::IAM::Policy"])
    assert "qwen3/AllTraffic/*" in policies and '"s3:prefix": ["qwen3/AllTraffic/*"]' in policies
    assert cfn_lint_errors(raw) == []


def test_rate_sweep_reaches_the_engine_and_its_answer_is_an_output():
    from speculative_infra.benchmark.config import RateSweepConfig

    options = {
        "rate_sweep": {"start_rate": 0.5, "max_rate": 3, "bisection_steps": 1},
        "slo": {"ttft_ms": 800},
        "requests_per_level": 16,
    }
    stack_holder = {}

    def build(stack):
        stack_holder["endpoint"] = test_vllm_endpoint.reference(stack, benchmark=options)

    _, raw = synth_stack(build)
    resource = next(r for r in raw["Resources"].values() if r["Type"] == "Custom::EndpointBenchmark")
    config_text = "".join(
        p if isinstance(p, str) else "" for p in resource["Properties"]["Config"]["Fn::Join"][1]
    )
    config = json.loads("{" + config_text[config_text.index('"workload"') :])
    # The engine's own config type accepts what the construct wrote.
    assert RateSweepConfig(**config["rate_sweep"]) == RateSweepConfig(
        start_rate=0.5, max_rate=3, bisection_steps=1, min_attainment=0.9
    )
    assert config["load"].get("request_rates") is None and config["slo"]["ttft_ms"] == 800
    outputs = [o["Value"] for o in raw["Outputs"].values() if isinstance(o["Value"], dict)]
    assert any(v.get("Fn::GetAtt", [None, None])[1] == "MaxSustainedRate" for v in outputs)
    benchmark = stack_holder["endpoint"].benchmark
    # The dashboard's series: the doublings (0.5, 1, 2, then the cap 3); bisection probes are in the results.
    assert benchmark.series().level_values == ["0.5", "1", "2", "3"]
    assert cfn_lint_errors(raw) == []


def test_every_attribute_the_construct_reads_is_one_the_handler_returns():
    from speculative_infra_lambda.endpoint_benchmark.runner import ATTRIBUTES

    _, raw = synth_stack(vllm_with_gates)
    read = {
        value["Fn::GetAtt"][1]
        for output in raw["Outputs"].values()
        if isinstance(value := output["Value"], dict)
        and "Fn::GetAtt" in value
        and "Benchmark" in value["Fn::GetAtt"][0]
    }
    assert read and read <= set(ATTRIBUTES)
