"""EagleRetrainingLoop: the state machine validated by asl-validator, its decisions walked with fixtures
(skip / keep / promote / rolled back / failed), the served head through SSM, IAM and errors."""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import aws_cdk as cdk
import pytest

from speculative_infra import DataCaptureOptions, EagleOptimizationJob, SpeculativeVllmEndpoint
from speculative_infra.constructs.dashboard_body import with_placeholders
from speculative_infra.constructs.retraining_loop import EagleRetrainingLoop, ServedEagleHead
from speculative_infra.constructs.vllm_endpoint import DeploymentGuardrails
from tests.cfn import cfn_lint_errors, normalized, synth_stack
from tests.conftest import REPO


def reference(
    stack: cdk.Stack, endpoint_props: dict[str, Any] | None = None, **props: Any
) -> EagleRetrainingLoop:
    first = EagleOptimizationJob(
        stack,
        "Round1",
        model_id="Qwen/Qwen3-32B",
        model_s3_uri="s3://my-models/qwen3-32b/",
        deployment_instance_type="ml.g7e.2xlarge",
        wait=False,
    )
    head = ServedEagleHead.from_job(stack, "Head", first)
    endpoint = SpeculativeVllmEndpoint(
        stack,
        "Qwen3",
        model_id="Qwen/Qwen3-32B",
        instance_type="ml.g7e.2xlarge",
        vllm_version="0.15.1",
        engine={"max_model_len": 4096, "max_num_seqs": 64},
        speculative=head.speculative_config(num_speculative_tokens=4),
        **{"data_capture": DataCaptureOptions(), **(endpoint_props or {})},
    )
    return EagleRetrainingLoop(
        stack, "Loop", endpoint=endpoint, head=head, model_s3_uri="s3://my-models/qwen3-32b/", **props
    )


CONFIGURATIONS = {"loop-weekly": {}}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return synth_stack(reference)[1]


def _machine(template: dict[str, Any]) -> dict[str, Any]:
    (machine,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::StepFunctions::StateMachine" and "StateMachineName" in r["Properties"]
    ]
    return json.loads(with_placeholders(machine["DefinitionString"]))


def test_snapshot(template, snapshot):
    assert normalized(template) == snapshot


def test_cfn_lint_clean(template):
    assert cfn_lint_errors(template) == []


def test_definition_passes_the_asl_validator(template, tmp_path):
    text = json.dumps(_machine(template))
    for token, value in (
        ("${AWS::Partition}", "aws"),
        ("${AWS::Region}", "us-west-2"),
        ("${AWS::AccountId}", "1" * 12),
    ):
        text = text.replace(token, value)
    path = tmp_path / "loop.json"
    path.write_text(re.sub(r"\$\{[A-Za-z0-9.]+\}", "resolved", text))
    done = subprocess.run(
        ["npx", "--no-install", "asl-validator", "--json-path", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- the decisions, walked -----------------------------------------------------------------------


def _path(state: dict[str, Any], path: str) -> Any:
    value: Any = state
    for part in path.removeprefix("$.").split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


_MISSING = object()


def _holds(rule: dict[str, Any], state: dict[str, Any]) -> bool:
    """The Choice-rule operators this state machine uses, as the ASL specification defines them."""
    if "And" in rule:
        return all(_holds(r, state) for r in rule["And"])
    if "Or" in rule:
        return any(_holds(r, state) for r in rule["Or"])
    value = _path(state, rule["Variable"])
    if "IsPresent" in rule:
        return (value is not _MISSING) == rule["IsPresent"]
    if value is _MISSING:  # Step Functions fails the execution on a missing variable: so does the walker
        raise AssertionError(f"{rule['Variable']} is not in the state: the execution would fail here")
    ops = {
        "BooleanEquals": lambda a, b: a is b,
        "StringEquals": lambda a, b: a == b,
        "NumericGreaterThan": lambda a, b: a > b,
        "NumericGreaterThanEquals": lambda a, b: a >= b,
    }
    for op, compare in ops.items():
        if op in rule:
            return compare(value, rule[op])
        if op + "Path" in rule:
            other = _path(state, rule[op + "Path"])
            if other is _MISSING:
                raise AssertionError(f"{rule[op + 'Path']} is not in the state")
            return compare(value, other)
    raise AssertionError(f"an operator the walker does not know: {rule}")


def _choose(definition: dict[str, Any], choice: str, state: dict[str, Any]) -> str:
    spec = definition["States"][choice]
    for rule in spec["Choices"]:
        if _holds(rule, state):
            return str(rule["Next"])
    return str(spec["Default"])


EVALUATION = {
    "served": {"output_throughput": 900.0, "tokens_per_chunk": 2.8},
    "required_output_throughput": 945.0,  # 5 % more
}


@pytest.mark.parametrize(
    ("choice", "state", "expected"),
    [
        ("Alone", {"running": {"count": 1}}, "ReadLastCycle"),
        ("Alone", {"running": {"count": 2}}, "AlreadyRunning"),
        ("EnoughConversations", {"dataset": {"skip": True}}, "SkippedDecision"),
        ("EnoughConversations", {"dataset": {"skip": False}}, "ServedHead"),
        ("JobDone", {"job": {"status": "COMPLETED"}, "polls": {"count": 3}}, "DescribeServedEndpoint"),
        ("JobDone", {"job": {"status": "FAILED"}, "polls": {"count": 3}}, "JobFailed"),
        ("JobDone", {"job": {"status": "INPROGRESS"}, "polls": {"count": 3}}, "CountJobPoll"),
        ("JobDone", {"job": {"status": "INPROGRESS"}, "polls": {"count": 10_000}}, "JobFailed"),
        (
            "CandidateInService",
            {
                "candidateStatus": {"status": "InService"},
                "controlStatus": {"status": "Creating"},
                "polls": {"count": 5},
            },
            "CountCandidatePoll",
        ),
        (
            "CandidateInService",
            {
                "candidateStatus": {"status": "InService"},
                "controlStatus": {"status": "InService"},
                "polls": {"count": 5},
            },
            "Evaluate",
        ),
        (
            "CandidateInService",
            {
                "candidateStatus": {"status": "Creating"},
                "controlStatus": {"status": "Failed"},
                "polls": {"count": 5},
            },
            "CandidateOrControlNotInService",
        ),
        (
            "CandidateInService",
            {
                "candidateStatus": {"status": "Creating"},
                "controlStatus": {"status": "Creating"},
                "polls": {"count": 91},
            },
            "CandidateOrControlNotInService",
        ),
        # Faster by more than the margin, acceptance not lower: promote.
        (
            "FasterThanServed",
            {
                "evaluation": {
                    **EVALUATION,
                    "candidate": {"output_throughput": 1000.0, "tokens_per_chunk": 3.1},
                }
            },
            "Promote",
        ),
        # Boundary: exactly the required throughput is not faster.
        (
            "FasterThanServed",
            {
                "evaluation": {
                    **EVALUATION,
                    "candidate": {"output_throughput": 945.0, "tokens_per_chunk": 3.1},
                }
            },
            "KeptDecision",
        ),
        # Faster but accepting fewer drafted tokens: keep.
        (
            "FasterThanServed",
            {
                "evaluation": {
                    **EVALUATION,
                    "candidate": {"output_throughput": 1000.0, "tokens_per_chunk": 2.7},
                }
            },
            "KeptDecision",
        ),
        # The endpoint runs the candidate's config (named apart from its model): promoted.
        (
            "PromotionDone",
            {
                "promotion": {"status": "InService", "config": "cfg-1"},
                "candidateConfig": {"name": "cfg-1"},
                "candidate": {"variant": {"ModelName": "model-1"}},
                "polls": {"count": 4},
            },
            "ServeNewHead",
        ),
        (
            "PromotionDone",
            {
                "promotion": {"status": "InService", "config": "old"},
                "candidateConfig": {"name": "cfg-1"},
                "polls": {"count": 4},
            },
            "RolledBackDecision",
        ),
        (
            "PromotionDone",
            {
                "promotion": {"status": "Updating", "config": "old"},
                "candidateConfig": {"name": "cfg-1"},
                "polls": {"count": 4},
            },
            "CountPromotePoll",
        ),
        (
            "PromotionDone",
            {
                "promotion": {"status": "UpdateRollbackFailed", "config": "old"},
                "candidateConfig": {"name": "cfg-1"},
                "polls": {"count": 4},
            },
            "PromotionFailed",
        ),
        (
            "ServedConfigHasKey",
            {"servedConfig": {"config": {"KmsKeyId": "arn:aws:kms:..."}}},
            "CreateCandidateConfigWithKey",
        ),
        ("ServedConfigHasKey", {"servedConfig": {"config": {}}}, "CreateCandidateConfig"),
    ],
)
def test_decisions(template, choice, state, expected):
    assert _choose(_machine(template), choice, state) == expected


def test_every_task_after_the_candidate_exists_cleans_it_up(template):
    states = _machine(template)["States"]
    for name in (
        "CreateCandidateEndpoint",
        "CreateControlEndpoint",
        "DescribeCandidate",
        "DescribeControl",
        "Evaluate",
        "DeleteCandidateEndpoint",
        "DeleteControlEndpoint",
    ):
        assert [c["Next"] for c in states[name]["Catch"]] == ["CleanUpCandidate"], name
    assert states["CleanUpCandidate"]["Next"] == "CleanUpControl"
    assert states["CleanUpControl"]["Next"] == "CycleFailed"
    assert states["CandidateOrControlNotInService"]["Next"] == "CleanUpCandidate"
    # Every AWS call retries before a Catch applies.
    calls = [v for v in states.values() if v["Type"] == "Task" and ":aws-sdk:" in json.dumps(v["Resource"])]
    assert calls and all(t.get("Retry") for t in calls)


def test_the_state_machine_may_do_each_call_it_makes(template):
    statements = [
        st
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith("LoopStateMachineRole")
        for st in r["Properties"]["PolicyDocument"]["Statement"]
    ]
    actions = {
        a.lower()
        for st in statements
        for a in ([st["Action"]] if isinstance(st["Action"], str) else st["Action"])
    }
    for needed in (
        "states:listexecutions",
        "sagemaker:createoptimizationjob",
        "sagemaker:createendpoint",
        "sagemaker:updateendpoint",
        "sagemaker:deleteendpoint",
        "ssm:putparameter",
        "iam:passrole",
        "lambda:invokefunction",
    ):
        assert needed in actions, needed
    assert not any(a.endswith(":*") for a in actions)
    list_executions = next(st for st in statements if "listexecutions" in json.dumps(st["Action"]).lower())
    assert ":stateMachine:speculative-infra-" in json.dumps(list_executions["Resource"])


def test_the_evaluation_compares_two_idle_endpoints(template):
    states = _machine(template)["States"]
    assert states["CreateControlEndpoint"]["Parameters"]["EndpointConfigName.$"] == "$.served.config"
    payload = states["Evaluate"]["Parameters"]["Payload"]
    assert "-b-" in payload["served.$"] and "-c-" in payload["candidate.$"]


def test_the_promoted_config_keeps_capture_and_the_new_head_is_served_from_ssm(template):
    states = _machine(template)["States"]
    params = states["CreateCandidateConfig"]["Parameters"]
    assert params["DataCaptureConfig.$"] == "$.servedConfig.capture"
    assert states["ServeNewHead"]["Parameters"]["Name"].endswith("/served-head")
    models = [r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Model"]
    (served,) = [m for m in models if "ModelDataSource" in m["PrimaryContainer"]]
    uri = served["PrimaryContainer"]["ModelDataSource"]["S3DataSource"]["S3Uri"]
    assert uri.startswith("{{resolve:ssm:/speculative-infra/") and uri.endswith("/served-head}}")


def _served_model(template: dict[str, Any]) -> dict[str, Any]:
    (model,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SageMaker::Model" and "ModelDataSource" in r["Properties"]["PrimaryContainer"]
    ]
    return model


DIGEST = "SPECULATIVE_INFRA_DEPLOYMENT_DIGEST"


@pytest.mark.parametrize(
    "change",
    [
        {"instance_count": 2},
        {"data_capture": DataCaptureOptions(sampling_percentage=50)},
        {"container_startup_health_check_timeout": cdk.Duration.minutes(45)},
        {"deployment_guardrails": DeploymentGuardrails()},  # the endpoint's DeploymentConfig only
    ],
)
def test_a_config_only_change_replaces_the_model_so_the_promoted_head_is_resolved_again(template, change):
    # CloudFormation resolves the head's dynamic reference only when it creates or updates the model: a
    # change to the endpoint config or the endpoint alone must change the model too (its environment
    # needs replacement), or the endpoint goes back to the head it was created with.
    before = _served_model(template)["PrimaryContainer"]["Environment"][DIGEST]
    changed = synth_stack(lambda stack: reference(stack, endpoint_props=change))[1]
    after = _served_model(changed)["PrimaryContainer"]["Environment"][DIGEST]
    assert re.fullmatch(r"[0-9a-f]{16}", before) and after != before


def test_the_digest_is_stable_and_only_on_a_served_head(template):
    again = synth_stack(reference)[1]
    assert (
        _served_model(again)["PrimaryContainer"]["Environment"][DIGEST]
        == (_served_model(template)["PrimaryContainer"]["Environment"][DIGEST])
    )
    plain = synth_stack(
        lambda stack: SpeculativeVllmEndpoint(
            stack, "Plain", model_id="Qwen/Qwen3-8B", instance_type="ml.g6e.xlarge", vllm_version="0.15.1"
        )
    )[1]
    assert all(
        DIGEST not in r["Properties"]["PrimaryContainer"]["Environment"]
        for r in plain["Resources"].values()
        if r["Type"] == "AWS::SageMaker::Model"
    )


def test_source_model_carries_the_served_head_as_eagle_model(template):
    params = _machine(template)["States"]["RegisterSourceModel"]["Parameters"]
    (channel,) = params["PrimaryContainer"]["AdditionalModelDataSources"]
    assert channel["ChannelName"] == "eagle_model" and channel["S3DataSource"]["S3Uri.$"] == "$.head.uri"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("no-capture", "needs data_capture"),
        ("not-the-head", "must serve the head's parameter"),
        ("margin", "margin is 1.5"),
        ("schedule", "schedule is 'weekly'"),
    ],
)
def test_bad_loops_name_the_problem(change, message):
    stack = cdk.Stack(cdk.App(), "S", env=cdk.Environment(region="us-west-2"))
    with pytest.raises(ValueError, match=message):
        if change == "margin":
            reference(stack, margin=1.5)
        elif change == "schedule":
            reference(stack, schedule="weekly")
        else:
            first = EagleOptimizationJob(
                stack,
                "R1",
                model_id="Qwen/Qwen3-32B",
                model_s3_uri="s3://my-models/qwen3-32b/",
                deployment_instance_type="ml.g7e.2xlarge",
                wait=False,
            )
            head = ServedEagleHead.from_job(stack, "Head", first)
            speculative = (
                first.as_speculative_config(num_speculative_tokens=4)
                if change == "not-the-head"
                else head.speculative_config(num_speculative_tokens=4)
            )
            endpoint = SpeculativeVllmEndpoint(
                stack,
                "E",
                model_id="Qwen/Qwen3-32B",
                instance_type="ml.g7e.2xlarge",
                vllm_version="0.15.1",
                engine={"max_model_len": 4096},
                speculative=speculative,
                data_capture=DataCaptureOptions() if change == "not-the-head" else None,
            )
            EagleRetrainingLoop(
                stack, "Loop", endpoint=endpoint, head=head, model_s3_uri="s3://my-models/qwen3-32b/"
            )


def test_keys_are_granted_where_the_cycle_uses_them():
    from aws_cdk import aws_kms as kms

    def build(stack):
        key = kms.Key(stack, "VolumeKey", enable_key_rotation=True)
        heads_key = kms.Key(stack, "HeadsKey", enable_key_rotation=True)
        first = EagleOptimizationJob(
            stack,
            "Round1",
            model_id="Qwen/Qwen3-32B",
            model_s3_uri="s3://my-models/qwen3-32b/",
            deployment_instance_type="ml.g7e.2xlarge",
            wait=False,
            kms_key=heads_key,
        )
        head = ServedEagleHead.from_job(stack, "Head", first)
        endpoint = SpeculativeVllmEndpoint(
            stack,
            "Qwen3",
            model_id="Qwen/Qwen3-32B",
            instance_type="ml.g7e.2xlarge",
            vllm_version="0.15.1",
            engine={"max_model_len": 4096, "max_num_seqs": 64},
            kms_key=key,
            speculative=head.speculative_config(num_speculative_tokens=4),
            data_capture=DataCaptureOptions(),
        )
        EagleRetrainingLoop(
            stack, "Loop", endpoint=endpoint, head=head, model_s3_uri="s3://my-models/qwen3-32b/"
        )

    _, data = synth_stack(build)
    policies = {
        k: v["Properties"]["PolicyDocument"]["Statement"]
        for k, v in data["Resources"].items()
        if v["Type"] == "AWS::IAM::Policy"
    }
    machine = next(v for k, v in policies.items() if k.startswith("LoopStateMachineRole"))
    assert any("kms:CreateGrant" in json.dumps(st["Action"]) for st in machine)
    for prefix in ("LoopDatasetFunctionRole", "LoopEvaluateFunctionRole"):
        statements = next(v for k, v in policies.items() if k.startswith(prefix))
        assert any("kms:Decrypt" in json.dumps(st["Action"]) for st in statements), prefix


def test_a_tag_change_does_not_replace_the_model(template):
    # Tags on the endpoint config and the endpoint change in place, without UpdateEndpoint: no revert to
    # undo, and no model replacement (which would redeploy the endpoint) for a tag.
    def tagged(stack: cdk.Stack) -> None:
        loop = reference(stack)
        cdk.Tags.of(loop.node.scope).add("team", "inference")

    after = _served_model(synth_stack(tagged)[1])["PrimaryContainer"]["Environment"][DIGEST]
    assert after == _served_model(template)["PrimaryContainer"]["Environment"][DIGEST]


def test_the_digest_follows_every_replacing_property_of_the_endpoint_config():
    # The properties CloudFormation replaces an endpoint config for, from cfn-lint's resource schema.
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    from speculative_infra.constructs.served_head_refresh import _CONFIG_PROPERTIES

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", "AWS::SageMaker::EndpointConfig").schema
    replacing = {p.rsplit("/", 1)[1] for p in schema["createOnlyProperties"]}
    covered = {"".join(w.capitalize() for w in name.split("_")) for name in _CONFIG_PROPERTIES}
    assert replacing <= covered, replacing - covered
