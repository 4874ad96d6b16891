"""Can the container download the model, and is the token that lets it kept out of the template?"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.render.container_env import TOKEN_VARIABLES, is_dynamic_reference
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation

_TOKEN_FIX = (
    "put the token in AWS Secrets Manager and pass it as hf_token (spec: hf_token_secret), which renders a "
    "CloudFormation dynamic reference; or serve the weights from S3 (model_data)"
)


@rule(
    code="SI530",
    name="hf-token-not-in-plaintext",
    severity=Severity.ERROR,
    title="No Hugging Face token in plaintext",
    rationale="A literal token in the environment ends up in the CloudFormation template, its history and "
    "in DescribeModel for anyone with read access.",
)
def hf_token_not_in_plaintext(d: ResolvedDeployment) -> Iterator[Violation]:
    for key in TOKEN_VARIABLES:
        value = d.spec.environment.get(key)
        if value is not None and not is_dynamic_reference(value):
            yield Violation(
                message=f"environment.{key} holds a token in plaintext",
                fix=_TOKEN_FIX,
                field=f"environment.{key}",
            )


@rule(
    code="SI531",
    name="gated-model-access",
    severity=Severity.ERROR,
    title="A gated model comes with a token or from S3",
    rationale="The Hub refuses to serve a gated model's files without a token of an account that accepted "
    "its licence; the container then fails after minutes of start-up.",
)
def gated_model_access(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.model is None or not d.model.gated or d.spec.model.weights == "s3":
        return
    if d.spec.hf_token_secret is not None or any(k in d.spec.environment for k in TOKEN_VARIABLES):
        return
    yield Violation(
        message=f"{d.model_id} is gated on the Hugging Face Hub and neither a token nor S3 weights are given",
        fix="accept the model's licence on its Hub page, store a token of that account in Secrets Manager and "
        "pass it as hf_token (spec: hf_token_secret); or copy the weights to S3 and pass model_data",
        field="hf_token_secret",
    )
