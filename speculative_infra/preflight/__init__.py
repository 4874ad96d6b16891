"""`speculative-infra preflight`: read-only checks against the user's AWS account before `cdk deploy`.

What synthesis cannot know: the account's instance quotas, whether the instance type is offered for
hosting in the region, whether a given role and S3 objects exist, whether a gated model is reachable.
"""

from speculative_infra.preflight.checks import AwsClients, PreflightInputs, run_preflight

__all__ = ["AwsClients", "PreflightInputs", "run_preflight"]
