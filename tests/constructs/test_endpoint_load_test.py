"""EndpointLoadTest: the state machine (asl-validator, and a walk of its choices and waves with fixtures),
IAM least privilege, the asset, prop errors, snapshots and cfn-lint (cdk-nag in tests/security)."""

from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Match

from speculative_infra.constructs.custom_resource import stage_engine_handler
from speculative_infra.constructs.endpoint_load_test import EndpointLoadTest
from speculative_infra.constructs.load_test_definition import load_test_definition
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.conftest import REPO
from tests.constructs import test_lmi_component, test_vllm_endpoint

STEPS = [{"duration_s": 600, "request_rate": 5}, {"duration_s": 1200, "request_rate": 15}]


def stepped(stack: cdk.Stack) -> EndpointLoadTest:
    endpoint = test_vllm_endpoint.reference(stack, scaling={"min_capacity": 1, "max_capacity": 4})
    return EndpointLoadTest(stack, "LoadTest", target=endpoint, steps=STEPS, workers=4, slo={"ttft_ms": 2000})


def component_closed_loop(stack: cdk.Stack) -> EndpointLoadTest:
    component = test_lmi_component.shared(stack)
    return EndpointLoadTest(
        stack,
        "LoadTest",
        target=component,
        steps=[{"duration_s": 300, "concurrency": 8}, {"duration_s": 300, "concurrency": 32}],
        workers=2,
    )


CONFIGURATIONS = {"stepped-open-loop": stepped, "component-closed-loop": component_closed_loop}


@pytest.fixture(params=sorted(CONFIGURATIONS), scope="module")
def configuration(request):
    return synth_stack(CONFIGURATIONS[request.param], region="us-east-1")


@pytest.fixture(scope="module")
def template():
    return synth_stack(stepped, region="us-east-1")


def test_snapshot(configuration, snapshot):
    assert normalized(configuration[1]) == snapshot


def test_cfn_lint_clean(configuration):
    assert cfn_lint_errors(configuration[1]) == []


def _machine(template_json: dict[str, Any]) -> dict[str, Any]:
    (machine,) = [
        r["Properties"]
        for r in template_json["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine"
    ]
    return machine


def test_definition_passes_the_asl_validator(configuration, tmp_path):
    machine = _machine(configuration[1])
    text = machine["DefinitionString"]
    assert set(machine["DefinitionSubstitutions"]) >= {
        "PlanFunctionArn",
        "WorkerFunctionArn",
        "MergeFunctionArn",
    }
    path = tmp_path / "load-test.json"
    path.write_text(re.sub(r"\$\{[A-Za-z0-9.]+\}", "resolved", text))
    done = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_construct_test_is_in_the_definition_with_the_endpoint_substituted(template):
    machine = _machine(template[1])
    definition = json.loads(machine["DefinitionString"])
    defaults = definition["States"]["Plan"]["Parameters"]["Payload"]["defaults"]
    assert defaults["steps"][1] == {
        "duration_s": 1200.0,
        "request_rate": 15.0,
        "ramp_to_rate": None,
        "concurrency": None,
    }
    assert defaults["benchmark"]["target"]["endpoint_name"] == "${EndpointName}"
    assert defaults["benchmark"]["slo"]["ttft_ms"] == 2000
    assert "EndpointName" in machine["DefinitionSubstitutions"]


# --- the walk: every state the executions pass through, with fixtures for the tasks -------------------


def _get(data: Any, path: str, context: dict[str, Any]) -> Any:
    if path == "$":
        return data
    root, rest = (context, path[3:]) if path.startswith("$$.") else (data, path[2:])
    value = root
    for part in rest.split("."):
        if not isinstance(value, dict) or part not in value:
            raise AssertionError(f"{path} is not in the state: the execution would fail here")
        value = value[part]
    return value


def _fill(template_: Any, data: Any, context: dict[str, Any]) -> Any:
    if isinstance(template_, dict):
        out = {}
        for key, value in template_.items():
            if key.endswith(".$"):
                out[key[:-2]] = _get(data, value, context)
            else:
                out[key] = _fill(value, data, context)
        return out
    return template_


def _set(data: dict[str, Any], path: str | None, value: Any) -> Any:
    if path is None:
        return value
    out = json.loads(json.dumps(data))
    node = out
    parts = path[2:].split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


def _holds(rule: dict[str, Any], data: Any, context: dict[str, Any]) -> bool:
    value = _get(data, rule["Variable"], context)
    if "BooleanEquals" in rule:
        return value is rule["BooleanEquals"]
    if "NumericEquals" in rule:
        return value == rule["NumericEquals"]
    if "TimestampGreaterThanPath" in rule:
        other = _get(data, rule["TimestampGreaterThanPath"], context)
        return _ts(value) > _ts(other)
    raise AssertionError(f"an operator the walker does not know: {rule}")


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class Walk:
    """Runs a definition: tasks are fixtures by function placeholder; Wait advances a fake clock."""

    def __init__(
        self, definition: dict[str, Any], tasks: dict[str, Any], items: list[dict[str, Any]], now: datetime
    ):
        self.definition, self.tasks, self.items, self.now = definition, tasks, items, now
        self.visited: list[str] = []
        self.waited: list[str] = []

    def run(self, machine: dict[str, Any], data: Any, context: dict[str, Any]) -> tuple[str, Any]:
        name = machine["StartAt"]
        while True:
            self.visited.append(name)
            state = machine["States"][name]
            ctx = {**context, "State": {"EnteredTime": self.now.isoformat().replace("+00:00", "Z")}}
            kind = state["Type"]
            if kind == "Pass":
                result = _fill(state["Parameters"], data, ctx) if "Parameters" in state else data
                data = result
                if "OutputPath" in state:
                    data = _get(data, state["OutputPath"], ctx)
            elif kind == "Choice":
                name = next((r["Next"] for r in state["Choices"] if _holds(r, data, ctx)), state["Default"])
                continue
            elif kind == "Wait":
                when = _ts(_get(data, state["TimestampPath"], ctx))
                self.waited.append(when.isoformat())
                self.now = max(self.now, when)
            elif kind == "Task":
                params = _fill(state["Parameters"], data, ctx)
                payload = self.tasks[params["FunctionName"]](params["Payload"], self)
                result = _fill(state["ResultSelector"], {"Payload": payload}, ctx)
                data = _set(
                    data, state.get("ResultPath", "$")[:] if state.get("ResultPath") else None, result
                )
            elif kind == "Map":
                _fill(state["ItemReader"]["Parameters"], data, ctx)  # its paths must exist
                children = []
                for item in self.items:
                    child_input = _fill(
                        state["ItemSelector"], data, {**ctx, "Map": {"Item": {"Value": item}}}
                    )
                    children.append(self.run(state["ItemProcessor"], child_input, context)[1])
                data = _set(data, state["ResultPath"], {"children": children})
            elif kind == "Fail":
                return name, state
            if state.get("End"):
                return name, data
            name = state["Next"]


NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def _iso(t: datetime) -> str:
    return t.isoformat().replace("+00:00", "Z")


def _plan_fixture(ok: bool = True, launches: int = 3):
    def plan(payload, walk):
        assert payload["execution"] == "exec-1" and payload["bucket"] == "${ResultsBucket}"
        if not ok:
            return {"ok": False, "error": "load test config: steps: expected at least one step"}
        return {
            "ok": True,
            "bucket": "b",
            "run_prefix": "p/exec-1/",
            "items_key": "p/exec-1/items.json",
            "map_results_prefix": "p/exec-1/map-results",
            "merge_at": _iso(NOW + timedelta(minutes=40)),
        }

    return plan


def _walk(reported: int = 3, ok: bool = True, entered_late: bool = False):
    definition = load_test_definition(
        defaults={"steps": STEPS}, target={"endpoint_name": "e"}, results_prefix="p/"
    )
    ran: list[tuple[int, int]] = []

    def worker(payload, walk):
        ran.append((payload["item"]["wave"], payload["item"]["worker"]))
        return {"wave": payload["item"]["wave"], "worker": payload["item"]["worker"], "status": "ok"}

    def merge(payload, walk):
        assert payload["target"] == {"endpoint_name": "e"} and payload["plan"]["run_prefix"] == "p/exec-1/"
        return {"status": "complete", "reported": reported, "expected": 3}

    launches = [NOW + timedelta(seconds=40 + 720 * w) for w in range(3)]
    items = [
        {"wave": w, "worker": 0, "launch_at": _iso(t), "latest_launch": _iso(t + timedelta(seconds=60))}
        for w, t in enumerate(launches)
    ]
    start = NOW + (timedelta(hours=1) if entered_late else timedelta(0))
    walk = Walk(
        definition,
        {
            "${PlanFunctionArn}": _plan_fixture(ok),
            "${WorkerFunctionArn}": worker,
            "${MergeFunctionArn}": merge,
        },
        items,
        start,
    )
    end, output = walk.run(definition, {"config": None}, {"Execution": {"Name": "exec-1"}})
    return walk, end, output, ran, launches


def test_a_refused_plan_fails_the_execution_with_its_reason():
    _, end, output, ran, _ = _walk(ok=False)
    assert end == "PlanRefused" and output["CausePath"] == "$.plan.error" and ran == []


def test_each_wave_waits_for_its_own_launch_time_not_for_the_previous_wave():
    walk, end, output, ran, launches = _walk()
    assert end == "Done" and output == {"status": "complete", "reported": 3, "expected": 3}
    assert ran == [(0, 0), (1, 0), (2, 0)]
    # Each child waited for its wave's scheduled launch (the walker's clock is shared, as wall time is).
    assert walk.waited[:3] == [t.isoformat() for t in launches]
    assert walk.visited.count("WaitForLaunch") == 3 and walk.visited.count("RunWorker") == 3
    assert "WaitForMetrics" in walk.visited


def test_a_child_that_reaches_its_launch_late_is_skipped_not_run():
    walk, end, _, ran, _ = _walk(entered_late=True)
    assert ran == [] and walk.visited.count("TooLate") == 3 and end == "Done"


def test_no_worker_reporting_fails_the_execution():
    _, end, _, _, _ = _walk(reported=0)
    assert end == "NoWorkerReported"


# --- IAM, asset, props -------------------------------------------------------------------------


def test_the_worker_invokes_the_endpoint_only_and_the_machine_starts_only_its_own_children(template):
    t = template[0]
    t.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": [
                                    "sagemaker:InvokeEndpoint",
                                    "sagemaker:InvokeEndpointWithResponseStream",
                                ]
                            }
                        )
                    ]
                )
            }
        },
    )
    statements = [
        s
        for r in template[1]["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    start = [s for s in statements if s["Action"] == "states:StartExecution"]
    assert len(start) == 1 and "stateMachine:speculative-infra-" in json.dumps(start[0]["Resource"])
    put_metric = [
        s for s in statements if s["Action"] == "cloudwatch:PutMetricData" and "LoadTest" in json.dumps(s)
    ]
    assert [s["Condition"] for s in put_metric] == [
        {"StringEquals": {"cloudwatch:namespace": "SpeculativeInfra/EndpointLoadTest"}}
    ]
    assert not [s for s in statements if s["Action"] == "*" or s["Action"] == ["*"]]


def test_the_asset_carries_the_engine_and_ddsketch_without_protobuf():
    staged = Path(stage_engine_handler("endpoint_load_test"))
    assert (staged / "endpoint_load_test" / "handler.py").is_file()
    assert (staged / "speculative_infra" / "benchmark" / "distributed" / "merge.py").is_file()
    assert (staged / "ddsketch" / "ddsketch.py").is_file() and (staged / "six.py").is_file()
    assert not (staged / "ddsketch" / "pb").exists()
    assert not (staged / "speculative_infra" / "constructs").exists()


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"steps": []}, "steps: expected at least one step"),
        ({"steps": [{"duration_s": 60}]}, "request_rate"),
        ({"steps": [{"duration_s": 60, "request_rate": 1, "concurrency": 2}]}, "exactly one"),
        ({"wave_seconds": 850.0}, "wave_s"),
        ({"workers": 0}, "workers"),
        ({"steps": "5 req/s"}, "steps"),
        ({"worker_memory_mb": 64}, "worker_memory_mb"),
    ],
)
def test_bad_props_fail_at_synth_naming_the_field(props, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-east-1"))
    endpoint = test_vllm_endpoint.reference(stack)
    with pytest.raises((ValueError, TypeError)) as error:
        EndpointLoadTest(stack, "LoadTest", target=endpoint, **{"steps": STEPS, **props})
    assert message in str(error.value)
    assert "LoadTest" in str(error.value)


def test_a_target_that_is_not_an_endpoint_is_refused():
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(TypeError, match="target"):
        EndpointLoadTest(stack, "LoadTest", target=object(), steps=STEPS)  # type: ignore[arg-type]


def test_the_staged_handler_imports_from_its_asset_alone(tmp_path):
    """Every module handler.py imports is in the asset (a filter once dropped distributed/report.py)."""
    staged = stage_engine_handler("endpoint_load_test")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import endpoint_load_test.handler, speculative_infra, ddsketch;"
        "assert speculative_infra.__file__.startswith(sys.argv[1]), speculative_infra.__file__;"
        "assert ddsketch.__file__.startswith(sys.argv[1]), ddsketch.__file__"
    )
    import sys

    done = subprocess.run([sys.executable, "-c", code, staged], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_function_may_list_its_prefix_so_a_missing_output_is_a_404(template):
    statements = [
        s
        for r in template[1]["Resources"].values()
        if r["Type"] == "AWS::IAM::Policy"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
        if s["Action"] == "s3:ListBucket"
    ]
    assert len(statements) == 3
    assert all(s["Condition"] == {"StringLike": {"s3:prefix": ["endpoint-load-tests/*"]}} for s in statements)


def test_executions_are_bounded_by_the_definition():
    definition = load_test_definition(defaults={}, target={}, results_prefix="p/")
    assert definition["TimeoutSeconds"] == 8 * 86_400
