"""Security checks for SageMaker hosting that cdk-nag's AwsSolutions pack does not cover."""

from speculative_infra.security.template_checks import CHECKS, check_template

__all__ = ["CHECKS", "check_template"]
