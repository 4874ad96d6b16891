"""What every state of a cycle shares: the loop as their scope, the loop's names and where a cycle writes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from speculative_infra.constructs.retraining_loop.arns import sagemaker_arn


@dataclass(frozen=True)
class CycleContext:
    """`scope` is the loop itself: every state is its child, so a state's construct id (and with it the
    template) does not depend on which module builds it."""

    scope: Construct
    prefix: str  # every job, model, config and endpoint a cycle creates is named `<prefix>-...-<cycle id>`
    endpoint_name: str  # the served endpoint
    bucket: s3.IBucket  # the heads bucket; a cycle writes under `work`
    work: str

    def call(
        self, id_: str, service: str, action: str, params: dict[str, Any], resources: list[str], **more: Any
    ) -> tasks.CallAwsService:
        """A Step Functions AWS SDK call, retried on transient errors."""
        task = tasks.CallAwsService(
            self.scope,
            id_,
            service=service,
            action=action,
            parameters=params,
            iam_resources=resources,
            **more,
        )
        # Throttling and transient service errors: three tries with backoff before any Catch applies.
        task.add_retry(
            errors=["States.TaskFailed"], max_attempts=3, interval=Duration.seconds(5), backoff_rate=3
        )
        return task

    def arn(self, resource: str, name: str) -> str:
        return sagemaker_arn(self.scope, resource, name)

    def named(self, infix: str) -> str:
        """This cycle's `<prefix><infix>{cycle id}`, as an intrinsic for a `...$` parameter."""
        return f"States.Format('{self.prefix}{infix}{{}}', $.cycle.id)"

    @property
    def job_name(self) -> str:
        return self.named("-")

    @property
    def candidate_name(self) -> str:
        """The candidate's model, endpoint config and endpoint."""
        return self.named("-c-")

    @property
    def source_name(self) -> str:
        """The optimization job's source model."""
        return self.named("-s-")

    @property
    def control_name(self) -> str:
        """The control endpoint (on the served config)."""
        return self.named("-b-")

    @property
    def cycle_dir(self) -> str:
        """The cycle's folder, with `{}` for its id (a States.Format or JsonPath.format template)."""
        return f"s3://{self.bucket.bucket_name}/{self.work}{{}}/"

    @property
    def heads_uri(self) -> str:
        """Where the optimization job writes."""
        return f"States.Format('{self.cycle_dir}', $.cycle.id)"

    @property
    def new_head_uri(self) -> str:
        """The head the job trained."""
        return f"States.Format('{self.cycle_dir}draft/', $.cycle.id)"
