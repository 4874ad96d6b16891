"""The optimization job's states: a source model on the served head, the job, and its bounded polling."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_stepfunctions as sfn

from speculative_infra.constructs.image import image_uri, newest_lmi_container
from speculative_infra.constructs.retraining_loop.context import CycleContext
from speculative_infra.constructs.retraining_loop.roles import pass_role_to_sagemaker
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead
from speculative_infra.s3_uri import S3Location

EAGLE_CHANNEL = "eagle_model"


@dataclass(frozen=True)
class TrainingSteps:
    served_head: sfn.TaskStateBase
    source_model: sfn.TaskStateBase
    start_job: sfn.TaskStateBase
    polls_job: sfn.Pass
    wait_job: sfn.Wait
    describe_job: sfn.TaskStateBase
    count_job: sfn.Pass
    max_job_polls: int
    job_failed: sfn.Fail


def training_steps(
    ctx: CycleContext,
    *,
    head: ServedEagleHead,
    job_role: iam.IRole,
    target: S3Location,
    instance_type: str,
    poll: Duration,
    runtime: Duration,
) -> TrainingSteps:
    scope, sm = ctx.scope, "sagemaker"
    served_head = ctx.call(
        "ServedHead",
        "ssm",
        "getParameter",
        {"Name": head.parameter_name},
        [head.parameter.parameter_arn],
        result_selector={"uri.$": "$.Parameter.Value"},
        result_path="$.head",
    )
    lmi = newest_lmi_container()
    source_model = ctx.call(
        "RegisterSourceModel",
        sm,
        "createModel",
        {
            "ModelName.$": ctx.source_name,
            "ExecutionRoleArn": job_role.role_arn,
            "PrimaryContainer": {
                "Image": image_uri(scope, lmi),
                "ModelDataSource": {
                    "S3DataSource": {
                        "S3Uri": target.uri if target.uri.endswith("/") else target.uri + "/",
                        "S3DataType": "S3Prefix",
                        "CompressionType": "None",
                    }
                },
                "AdditionalModelDataSources": [
                    {
                        "ChannelName": EAGLE_CHANNEL,
                        "S3DataSource": {
                            "S3Uri.$": "$.head.uri",
                            "S3DataType": "S3Prefix",
                            "CompressionType": "None",
                        },
                    }
                ],
            },
        },
        [ctx.arn("model", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
        additional_iam_statements=[pass_role_to_sagemaker(job_role.role_arn)],
    )
    start_job = ctx.call(
        "StartJob",
        sm,
        "createOptimizationJob",
        {
            "OptimizationJobName.$": ctx.job_name,
            "RoleArn": job_role.role_arn,
            "ModelSource": {"SageMakerModel": {"ModelName.$": ctx.source_name}},
            "DeploymentInstanceType": instance_type,
            "OptimizationConfigs": [
                {
                    "ModelSpeculativeDecodingConfig": {
                        "Technique": "EAGLE",
                        "TrainingDataSource": {"S3Uri.$": "$.dataset.uri", "S3DataType": "S3Prefix"},
                    }
                }
            ],
            "OutputConfig": {"S3OutputLocation.$": ctx.heads_uri},
            "StoppingCondition": {"MaxRuntimeInSeconds": int(runtime.to_seconds())},
        },
        [ctx.arn("optimization-job", f"{ctx.prefix}-*")],
        result_path=sfn.JsonPath.DISCARD,
        additional_iam_statements=[pass_role_to_sagemaker(job_role.role_arn)],
    )
    polls_job = sfn.Pass(scope, "JobPolls", parameters={"count": 0}, result_path="$.polls")
    wait_job = sfn.Wait(scope, "WaitForJob", time=sfn.WaitTime.duration(poll))
    describe_job = ctx.call(
        "DescribeJob",
        sm,
        "describeOptimizationJob",
        {"OptimizationJobName.$": ctx.job_name},
        [ctx.arn("optimization-job", f"{ctx.prefix}-*")],
        result_selector={"status.$": "$.OptimizationJobStatus"},
        result_path="$.job",
    )
    count_job = sfn.Pass(
        scope,
        "CountJobPoll",
        parameters={"count.$": "States.MathAdd($.polls.count, 1)"},
        result_path="$.polls",
    )
    job_failed = sfn.Fail(
        scope,
        "JobFailed",
        error="OptimizationJobFailed",
        cause="the optimization job failed, stopped or outlived its polls; the served head is unchanged",
    )
    return TrainingSteps(
        served_head=served_head,
        source_model=source_model,
        start_job=start_job,
        polls_job=polls_job,
        wait_job=wait_job,
        describe_job=describe_job,
        count_job=count_job,
        max_job_polls=int(runtime.to_seconds() // poll.to_seconds()) + 2,
        job_failed=job_failed,
    )
