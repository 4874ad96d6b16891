"""The candidate's states: a copy of the served model, config and endpoint on the new head, a control
endpoint on the served config, and the bounded wait for both to be in service."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_stepfunctions as sfn

from speculative_infra.constructs.retraining_loop.context import CycleContext
from speculative_infra.constructs.retraining_loop.roles import pass_role_to_sagemaker


@dataclass(frozen=True)
class CandidateSteps:
    served: sfn.TaskStateBase
    served_config: sfn.TaskStateBase
    served_model: sfn.TaskStateBase
    candidate_model: sfn.TaskStateBase
    patch: sfn.Pass
    config_name: sfn.Pass
    merged: sfn.Pass
    config_with_key: sfn.TaskStateBase
    config_without_key: sfn.TaskStateBase
    create_candidate: sfn.TaskStateBase
    create_control: sfn.TaskStateBase
    describe_control: sfn.TaskStateBase
    polls_candidate: sfn.Pass
    wait_candidate: sfn.Wait
    describe_candidate: sfn.TaskStateBase
    count_candidate: sfn.Pass


def candidate_steps(ctx: CycleContext, *, endpoint_role_arn: str) -> CandidateSteps:
    scope, sm, candidate = ctx.scope, "sagemaker", ctx.candidate_name
    served = ctx.call(
        "DescribeServedEndpoint",
        sm,
        "describeEndpoint",
        {"EndpointName": ctx.endpoint_name},
        [ctx.arn("endpoint", "*")],
        result_selector={"config.$": "$.EndpointConfigName"},
        result_path="$.served",
    )
    served_config = ctx.call(
        "DescribeServedConfig",
        sm,
        "describeEndpointConfig",
        {"EndpointConfigName.$": "$.served.config"},
        [ctx.arn("endpoint-config", "*")],
        result_selector={
            "variant.$": "$.ProductionVariants[0]",
            "capture.$": "$.DataCaptureConfig",
            "config.$": "$",
        },
        result_path="$.servedConfig",
    )
    served_model = ctx.call(
        "DescribeServedModel",
        sm,
        "describeModel",
        {"ModelName.$": "$.servedConfig.variant.ModelName"},
        [ctx.arn("model", "*")],
        result_selector={
            "role.$": "$.ExecutionRoleArn",
            "image.$": "$.PrimaryContainer.Image",
            "env.$": "$.PrimaryContainer.Environment",
        },
        result_path="$.servedModel",
    )
    candidate_model = ctx.call(
        "CreateCandidateModel",
        sm,
        "createModel",
        {
            "ModelName.$": candidate,
            "ExecutionRoleArn.$": "$.servedModel.role",
            "PrimaryContainer": {
                "Image.$": "$.servedModel.image",
                "Environment.$": "$.servedModel.env",
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri.$": ctx.new_head_uri,
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                    }
                },
            },
        },
        [ctx.arn("model", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
        additional_iam_statements=[pass_role_to_sagemaker(endpoint_role_arn)],
    )
    patch = sfn.Pass(
        scope, "CandidateVariant", parameters={"ModelName.$": candidate}, result_path="$.candidatePatch"
    )
    config_name = sfn.Pass(
        scope, "CandidateConfigName", parameters={"name.$": candidate}, result_path="$.candidateConfig"
    )
    merged = sfn.Pass(
        scope,
        "MergeVariant",
        parameters={"variant.$": "States.JsonMerge($.servedConfig.variant, $.candidatePatch, false)"},
        result_path="$.candidate",
    )
    # The served config's capture and key go with the candidate: a promotion keeps both.
    config_with_key = ctx.call(
        "CreateCandidateConfigWithKey",
        sm,
        "createEndpointConfig",
        {
            "EndpointConfigName.$": candidate,
            "ProductionVariants.$": "States.Array($.candidate.variant)",
            "DataCaptureConfig.$": "$.servedConfig.capture",
            "KmsKeyId.$": "$.servedConfig.config.KmsKeyId",
        },
        [ctx.arn("endpoint-config", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
    )
    config_without_key = ctx.call(
        "CreateCandidateConfig",
        sm,
        "createEndpointConfig",
        {
            "EndpointConfigName.$": candidate,
            "ProductionVariants.$": "States.Array($.candidate.variant)",
            "DataCaptureConfig.$": "$.servedConfig.capture",
        },
        [ctx.arn("endpoint-config", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
    )
    create_candidate = ctx.call(
        "CreateCandidateEndpoint",
        sm,
        "createEndpoint",
        {"EndpointName.$": candidate, "EndpointConfigName.$": candidate},
        [ctx.arn("endpoint", f"{ctx.prefix}-*"), ctx.arn("endpoint-config", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
    )
    # A control endpoint on the served config: both measured idle, side by side, so production traffic on
    # the served endpoint does not make the candidate look faster than it is.
    create_control = ctx.call(
        "CreateControlEndpoint",
        sm,
        "createEndpoint",
        {"EndpointName.$": ctx.control_name, "EndpointConfigName.$": "$.served.config"},
        [ctx.arn("endpoint", f"{ctx.prefix}-*"), ctx.arn("endpoint-config", "*")],
        result_path=sfn.JsonPath.DISCARD,
    )
    describe_control = ctx.call(
        "DescribeControl",
        sm,
        "describeEndpoint",
        {"EndpointName.$": ctx.control_name},
        [ctx.arn("endpoint", f"{ctx.prefix}-*")],
        result_selector={"status.$": "$.EndpointStatus"},
        result_path="$.controlStatus",
    )
    polls_candidate = sfn.Pass(scope, "CandidatePolls", parameters={"count": 0}, result_path="$.polls")
    wait_candidate = sfn.Wait(scope, "WaitForCandidate", time=sfn.WaitTime.duration(Duration.minutes(1)))
    describe_candidate = ctx.call(
        "DescribeCandidate",
        sm,
        "describeEndpoint",
        {"EndpointName.$": candidate},
        [ctx.arn("endpoint", f"{ctx.prefix}-*")],
        result_selector={"status.$": "$.EndpointStatus"},
        result_path="$.candidateStatus",
    )
    count_candidate = sfn.Pass(
        scope,
        "CountCandidatePoll",
        parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
        result_path="$.polls",
    )
    return CandidateSteps(
        served=served,
        served_config=served_config,
        served_model=served_model,
        candidate_model=candidate_model,
        patch=patch,
        config_name=config_name,
        merged=merged,
        config_with_key=config_with_key,
        config_without_key=config_without_key,
        create_candidate=create_candidate,
        create_control=create_control,
        describe_control=describe_control,
        polls_candidate=polls_candidate,
        wait_candidate=wait_candidate,
        describe_candidate=describe_candidate,
        count_candidate=count_candidate,
    )
