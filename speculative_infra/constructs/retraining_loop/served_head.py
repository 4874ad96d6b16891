"""ServedEagleHead: the EAGLE head an endpoint serves, named by an SSM parameter.

The endpoint reads the parameter through a CloudFormation dynamic reference, so a later `cdk deploy` keeps
the head the retraining loop promoted.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Names
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from speculative_infra.constructs.eagle_job import EagleOptimizationJob, TrainedDraft, mounted_draft_config


class ServedEagleHead(Construct):
    """The EAGLE head an endpoint serves, named by an SSM parameter the loop updates on promotion."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        heads_bucket: s3.IBucket,
        heads_prefix: str,
        initial_s3_uri: str,
        initial_ready: bool = True,
    ) -> None:
        """
        :param heads_bucket: where the heads live (the initial one and those the loop trains).
        :param heads_prefix: the prefix under which every head lives (the endpoint's role reads it).
        :param initial_s3_uri: the head served before the first promotion.
        :param initial_ready: whether that head exists when the endpoint deploys (false: a job that does
            not wait; the endpoint then warns, as with a TrainedDraft). Default: true.
        """
        super().__init__(scope, construct_id)
        self.heads_bucket = heads_bucket
        self.initial_ready = initial_ready
        self.heads_prefix = heads_prefix if heads_prefix.endswith("/") else heads_prefix + "/"
        # A literal name: a CloudFormation dynamic reference must name the parameter as written.
        self.parameter_name = f"/speculative-infra/{Names.unique_id(self)}/served-head"
        self.parameter = ssm.StringParameter(
            self,
            "Parameter",
            parameter_name=self.parameter_name,
            string_value=initial_s3_uri,
            description="The EAGLE head the endpoint serves (updated by its retraining loop)",
        )

    @classmethod
    def from_job(cls, scope: Construct, construct_id: str, job: EagleOptimizationJob) -> ServedEagleHead:
        """Start from an EagleOptimizationJob's head; the loop keeps its heads in the same bucket and prefix."""
        head = cls(
            scope,
            construct_id,
            heads_bucket=job.output_bucket,
            heads_prefix=job.output_root,
            initial_s3_uri=job.draft_s3_uri,
            initial_ready=job.wait,
        )
        head.node.add_dependency(job.resource)
        return head

    def speculative_config(
        self, *, num_speculative_tokens: int, method: str = "eagle3", **extra: Any
    ) -> TrainedDraft:
        """For SpeculativeVllmEndpoint(speculative=...): the head mounted at /opt/ml/model from wherever the
        parameter points when CloudFormation deploys the model."""
        return TrainedDraft(
            config=mounted_draft_config(method, num_speculative_tokens, extra),
            bucket=self.heads_bucket,
            key_prefix=self.heads_prefix,
            job=self.parameter,
            waits_for_completion=self.initial_ready,
            location=f"{{{{resolve:ssm:{self.parameter_name}}}}}",
        )
