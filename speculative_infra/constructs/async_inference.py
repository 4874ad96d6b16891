"""Asynchronous serving for SpeculativeVllmEndpoint: the endpoint config's AsyncInferenceConfig, the
execution role's rights on the outputs, and scaling on the backlog down to zero instances.

Scaling follows SageMaker's guide ("Autoscale an asynchronous endpoint"): target tracking on
ApproximateBacklogSizePerInstance, and a step policy on HasBacklogWithoutCapacity, because at zero
instances target tracking has no per-instance backlog to act on.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, Duration
from aws_cdk import aws_applicationautoscaling as appscaling
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sns as sns
from constructs import Construct

from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import read_prefix_statements
from speculative_infra.constructs.prop_checks import (
    KEY,
    TOPIC,
    finite_number,
    require_int,
    require_jsii,
    require_str,
)
from speculative_infra.s3_uri import S3Location, parse_s3_uri
from speculative_infra.spec import ScalingOptions

# SageMaker API reference, AsyncInferenceClientConfig: MaxConcurrentInvocationsPerInstance, 1-1000
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AsyncInferenceClientConfig.html).
MAX_CONCURRENT_INVOCATIONS = 1000


@dataclass(frozen=True)
class AsyncInferenceOptions:
    """Serve with InvokeEndpointAsync: requests queue, answers land in S3.

    :param output_s3_uri: where answers are written (``s3://bucket/prefix/``).
    :param input_s3_uri: where callers put the request payloads they name in InvokeEndpointAsync's
        InputLocation; SageMaker reads them with the endpoint's role, which may read only there.
    :param failure_s3_uri: where failed requests' errors are written. Default: none (errors go to the
        output location's ``.out`` files' siblings as SageMaker decides; give one to keep them apart).
    :param success_topic: SNS topic told of each answer. Default: none.
    :param error_topic: SNS topic told of each failure. Default: none.
    :param max_concurrent_invocations_per_instance: requests SageMaker sends one instance at once (1-1000).
        Default: the engine's max_num_seqs, so vLLM batches every request it is sent and the rest wait in
        SageMaker's queue, where the backlog metric (and scaling) can see them.
    :param kms_key: key SageMaker encrypts the answers with. Default: the bucket's own encryption.
    """

    output_s3_uri: str
    input_s3_uri: str
    failure_s3_uri: str | None = None
    success_topic: sns.ITopic | None = None
    error_topic: sns.ITopic | None = None
    max_concurrent_invocations_per_instance: int | None = None
    kms_key: kms.IKey | None = None

    def __post_init__(self) -> None:
        where = "AsyncInferenceOptions"
        require_str(self.output_s3_uri, "output_s3_uri", where, optional=False)
        require_str(self.input_s3_uri, "input_s3_uri", where, optional=False)
        require_str(self.failure_s3_uri, "failure_s3_uri", where)
        require_jsii(self.success_topic, TOPIC, "success_topic", where)
        require_jsii(self.error_topic, TOPIC, "error_topic", where)
        require_jsii(self.kms_key, KEY, "kms_key", where)
        require_int(
            self.max_concurrent_invocations_per_instance,
            "max_concurrent_invocations_per_instance",
            where,
            low=1,
            high=MAX_CONCURRENT_INVOCATIONS,
            optional=True,
        )
        parse_s3_uri(self.output_s3_uri, "async_inference.output_s3_uri")
        parse_s3_uri(self.input_s3_uri, "async_inference.input_s3_uri")
        if self.failure_s3_uri is not None:
            parse_s3_uri(self.failure_s3_uri, "async_inference.failure_s3_uri")
        value = self.max_concurrent_invocations_per_instance
        if value is not None and not 1 <= value <= MAX_CONCURRENT_INVOCATIONS:
            raise ValueError(
                f"async_inference.max_concurrent_invocations_per_instance is {value}; allowed: 1 to "
                f"{MAX_CONCURRENT_INVOCATIONS}"
            )

    def locations(self) -> list[S3Location]:
        uris = [self.output_s3_uri, *([self.failure_s3_uri] if self.failure_s3_uri else [])]
        return [parse_s3_uri(uri, "async_inference") for uri in uris]

    def concurrency(self, max_num_seqs: int) -> int:
        return self.max_concurrent_invocations_per_instance or min(max_num_seqs, MAX_CONCURRENT_INVOCATIONS)


def async_inference_config(
    options: AsyncInferenceOptions, max_num_seqs: int
) -> sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty:
    notify = options.success_topic is not None or options.error_topic is not None
    return sagemaker.CfnEndpointConfig.AsyncInferenceConfigProperty(
        client_config=sagemaker.CfnEndpointConfig.AsyncInferenceClientConfigProperty(
            max_concurrent_invocations_per_instance=options.concurrency(max_num_seqs)
        ),
        output_config=sagemaker.CfnEndpointConfig.AsyncInferenceOutputConfigProperty(
            s3_output_path=options.output_s3_uri,
            s3_failure_path=options.failure_s3_uri,
            kms_key_id=options.kms_key.key_arn if options.kms_key is not None else None,
            notification_config=sagemaker.CfnEndpointConfig.AsyncInferenceNotificationConfigProperty(
                success_topic=options.success_topic.topic_arn if options.success_topic else None,
                error_topic=options.error_topic.topic_arn if options.error_topic else None,
            )
            if notify
            else None,
        ),
    )


def grant_async_outputs(role: iam.IRole, options: AsyncInferenceOptions) -> None:
    """What SageMaker does with the endpoint's role for async: write answers and failures under their
    prefixes, publish to the topics, encrypt with the key."""
    objects = [loc.object_arn_pattern(Aws.PARTITION) for loc in options.locations()]
    role.add_to_principal_policy(iam.PolicyStatement(actions=["s3:PutObject"], resources=objects))
    for obj in objects:
        acknowledge(
            role,
            "IAM5",
            "Answers of the asynchronous endpoint, under its output prefixes only.",
            resource=obj,
        )
    requests = parse_s3_uri(options.input_s3_uri, "async_inference.input_s3_uri")
    for statement in read_prefix_statements(requests):
        role.add_to_principal_policy(statement)
    acknowledge(
        role,
        "IAM5",
        "Request payloads of the asynchronous endpoint, under its input prefix only.",
        resource=requests.object_arn_pattern(Aws.PARTITION),
    )
    topics = {id(t): t for t in (options.success_topic, options.error_topic) if t is not None}.values()
    if topics:
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["sns:Publish"], resources=[t.topic_arn for t in topics])
        )
    for topic in topics:
        key = getattr(topic, "master_key", None)
        if key is not None:  # publishing to an encrypted topic uses its key (named actions, no wildcard)
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["kms:GenerateDataKey", "kms:Decrypt"], resources=[key.key_arn])
            )
    if options.kms_key is not None:
        # S3 server-side encryption of the answers with this key: data keys to encrypt, decrypt for
        # multipart uploads. Named actions (no kms:GenerateDataKey* wildcard).
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["kms:GenerateDataKey", "kms:Encrypt", "kms:Decrypt"],
                resources=[options.kms_key.key_arn],
            )
        )


def add_async_scaling(
    scope: Construct,
    *,
    endpoint_name: str,
    variant_name: str,
    options: ScalingOptions,
    backlog_per_instance: float,
) -> appscaling.ScalableTarget:
    """Scale an asynchronous endpoint's instances on its backlog, from and to zero."""
    finite_number(backlog_per_instance, "scaling.target_value", scope.node.path, low=0, low_open=True)
    target = appscaling.ScalableTarget(
        scope,
        "ScalableTarget",
        service_namespace=appscaling.ServiceNamespace.SAGEMAKER,
        resource_id=f"endpoint/{endpoint_name}/variant/{variant_name}",
        scalable_dimension="sagemaker:variant:DesiredInstanceCount",
        min_capacity=options.min_capacity,
        max_capacity=options.max_capacity,
    )
    target.scale_to_track_metric(
        "BacklogTracking",
        target_value=backlog_per_instance,
        custom_metric=backlog_metric(endpoint_name, "ApproximateBacklogSizePerInstance"),
        scale_in_cooldown=Duration.seconds(options.scale_in_cooldown_seconds),
        scale_out_cooldown=Duration.seconds(options.scale_out_cooldown_seconds),
    )
    if options.min_capacity == 0:
        step = appscaling.StepScalingAction(
            scope,
            "ScaleOutFromZero",
            scaling_target=target,
            adjustment_type=appscaling.AdjustmentType.CHANGE_IN_CAPACITY,
            cooldown=Duration.seconds(options.scale_out_cooldown_seconds),
        )
        step.add_adjustment(adjustment=1, lower_bound=0)
        alarm = cloudwatch.Alarm(
            scope,
            "HasBacklogWithoutCapacity",
            metric=backlog_metric(endpoint_name, "HasBacklogWithoutCapacity"),
            threshold=1,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description="Requests wait and no instance serves them: add one (scale from zero).",
        )
        alarm.add_alarm_action(cw_actions.ApplicationScalingAction(step))
    return target


def backlog_metric(endpoint_name: str, metric_name: str) -> cloudwatch.Metric:
    """An async endpoint's queue metrics: AWS/SageMaker, dimension EndpointName only, Average."""
    return cloudwatch.Metric(
        namespace="AWS/SageMaker",
        metric_name=metric_name,
        dimensions_map={"EndpointName": endpoint_name},
        statistic="Average",
        period=Duration.minutes(1),
    )
