"""How a cycle ends: its record in S3, its metrics and (unless skipped) the start of the next capture window."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_stepfunctions as sfn

from speculative_infra.constructs.retraining_loop.context import CycleContext

METRIC_NAMESPACE = "SpeculativeInfra/EagleRetraining"


@dataclass(frozen=True)
class OutcomeSteps:
    promoted: sfn.IChainable
    kept: sfn.IChainable
    rolled_back: sfn.IChainable
    skipped: sfn.IChainable


def outcome_steps(ctx: CycleContext, *, last_cycle: ssm.StringParameter) -> OutcomeSteps:
    scope, bucket, work = ctx.scope, ctx.bucket, ctx.work

    def record(id_: str, decision: str) -> sfn.IChainable:
        body = sfn.Pass(scope, f"{id_}Decision", parameters={"value": decision}, result_path="$.decision")
        put = ctx.call(
            f"{id_}Record",
            "s3",
            "putObject",
            {
                "Bucket": bucket.bucket_name,
                "Key.$": f"States.Format('{work}{{}}/cycle.json', $.cycle.id)",
                "Body.$": "States.JsonToString($)",
                "ContentType": "application/json",
                "ServerSideEncryption": "AES256",
            },
            [bucket.arn_for_objects(f"{work}*")],
            result_path=sfn.JsonPath.DISCARD,
        )
        metric = ctx.call(
            f"{id_}Metric",
            "cloudwatch",
            "putMetricData",
            {
                "Namespace": METRIC_NAMESPACE,
                "MetricData": [
                    {
                        "MetricName": "Promoted",
                        "Value": 1 if decision == "promoted" else 0,
                        "Unit": "Count",
                        "Dimensions": [{"Name": "Endpoint", "Value": ctx.endpoint_name}],
                    },
                    {
                        "MetricName": "Cycles",
                        "Value": 1,
                        "Unit": "Count",
                        "Dimensions": [
                            {"Name": "Endpoint", "Value": ctx.endpoint_name},
                            {"Name": "Decision", "Value": decision},
                        ],
                    },
                ],
            },
            ["*"],
            result_path=sfn.JsonPath.DISCARD,
            additional_iam_statements=[],
        )
        chain = sfn.Chain.start(body).next(put).next(metric)
        if decision != "skipped":
            since = ctx.call(
                f"{id_}Window",
                "ssm",
                "putParameter",
                {
                    "Name": last_cycle.parameter_name,
                    "Value.$": "$.cycle.started",
                    "Overwrite": True,
                    "Type": "String",
                },
                [last_cycle.parameter_arn],
                result_path=sfn.JsonPath.DISCARD,
            )
            chain = chain.next(since)
        return chain.next(sfn.Succeed(scope, f"{id_}Done"))

    return OutcomeSteps(
        promoted=record("Promoted", "promoted"),
        kept=record("Kept", "kept"),
        rolled_back=record("RolledBack", "rolled_back"),
        skipped=record("Skipped", "skipped"),
    )
