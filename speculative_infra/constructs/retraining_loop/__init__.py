"""EagleRetrainingLoop: captured traffic -> a retrained EAGLE head -> promoted only if it measures faster.

AWS Step Functions runs each cycle (docs/decisions/0005-eagle-retraining-loop.md); every AWS call is a
Step Functions AWS SDK integration, every wait a Wait state in a bounded loop. Two Lambda functions do
work, never wait: the dataset step (lambda/retraining_dataset) and the measurement
(lambda/retraining_evaluate, the benchmark engine).

The endpoint serves the head named by an SSM parameter (`ServedEagleHead`), through a CloudFormation
dynamic reference, so a later `cdk deploy` keeps what the loop promoted.

Modules: `construct` (the public construct), `served_head` (the SSM parameter), `roles` and `functions`
(IAM, the Lambda functions), `state_machine` (the definition, wired from the `*_steps` modules, one per
phase of a cycle), `context` and `arns` (what those share).
"""

from speculative_infra.constructs.retraining_loop.construct import EPOCH, EagleRetrainingLoop
from speculative_infra.constructs.retraining_loop.outcome_steps import METRIC_NAMESPACE
from speculative_infra.constructs.retraining_loop.served_head import ServedEagleHead
from speculative_infra.constructs.retraining_loop.training_steps import EAGLE_CHANNEL

__all__ = ["EAGLE_CHANNEL", "EPOCH", "METRIC_NAMESPACE", "EagleRetrainingLoop", "ServedEagleHead"]
