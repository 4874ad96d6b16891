"""EagleOptimizationJob: train an EAGLE draft head with a SageMaker optimization job, as a custom resource."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import Aws, CustomResource, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import custom_resources as cr
from constructs import Construct, IConstruct

from speculative_infra.catalog import load_catalog
from speculative_infra.constructs.custom_resource import handler_function, provider
from speculative_infra.constructs.execution_role import (
    acknowledge_execution_permissions,
    add_execution_permissions,
)
from speculative_infra.constructs.image import image_uri, newest_lmi_container, repository_arn
from speculative_infra.constructs.nag import acknowledge
from speculative_infra.constructs.policies import (
    read_prefix_statements,
    sagemaker_log_group_arn,
    write_logs_statement,
)
from speculative_infra.constructs.prop_checks import (
    BUCKET,
    KEY,
    ROLE,
    construct_path,
    require_bool,
    require_choice,
    require_duration,
    require_jsii,
    require_str,
    require_tags,
)
from speculative_infra.errors import CompatibilityError
from speculative_infra.rules.optimization import check_optimization_job
from speculative_infra.s3_uri import S3Location, parse_s3_uri
from speculative_infra.spec import SpeculativeConfig

# CloudFormation waits at most one hour for a custom resource; keep the provider's total below it.
MAX_WAIT = Duration.minutes(55)
POLL_INTERVAL = Duration.minutes(1)
DEFAULT_MAX_RUNTIME = Duration.hours(8)  # wait=False; a waited job must end within MAX_WAIT
DRAFT_MOUNT_PATH = "/opt/ml/model"
# SageMaker API reference, StoppingCondition: MaxRuntimeInSeconds 1 or more, and a job runs at most 28 days
# (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_StoppingCondition.html).
MAX_RUNTIME_S = 28 * 24 * 3600


def mounted_draft_config(
    method: str, num_speculative_tokens: int, extra: dict[str, Any]
) -> SpeculativeConfig:
    """The speculative config of a draft the endpoint mounts at DRAFT_MOUNT_PATH."""
    return SpeculativeConfig.model_validate(
        {
            "method": method,
            "model": DRAFT_MOUNT_PATH,
            "num_speculative_tokens": num_speculative_tokens,
            **extra,
        }
    )


@dataclass(frozen=True)
class TrainedDraft:
    """A draft head trained by an EagleOptimizationJob, ready to mount on an endpoint.

    Pass it as ``speculative=`` to SpeculativeVllmEndpoint: the endpoint mounts ``bucket/key_prefix``
    at /opt/ml/model through ModelDataSource (CloudFormation has no AdditionalModelDataSources) and
    points the speculative config's ``model`` at that path; the target still loads from its HF id.
    """

    config: SpeculativeConfig
    bucket: s3.IBucket
    key_prefix: str
    job: IConstruct  # what must exist before the endpoint's model (the job; or the served-head parameter)
    waits_for_completion: bool
    # Where the endpoint mounts the draft from, when not bucket/key_prefix: a served head's CloudFormation
    # dynamic reference to its SSM parameter (EagleRetrainingLoop); key_prefix is then what the role reads.
    location: str | None = None

    @property
    def s3_uri(self) -> str:
        return self.location or f"s3://{self.bucket.bucket_name}/{self.key_prefix}"


class EagleOptimizationJob(Construct):
    """Runs CreateOptimizationJob (technique EAGLE) during deployment and exposes the trained draft."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deployment_instance_type: str,
        model_id: str,
        model_s3_uri: str | None = None,
        sagemaker_model_name: str | None = None,
        model_architecture: str | None = None,
        accept_eula: bool = False,
        training_data: str | None = None,
        training_data_type: str = "S3Prefix",
        output_bucket: s3.IBucket | None = None,
        output_prefix: str = "eagle-optimization/",
        access_logs_bucket: s3.IBucket | None = None,
        max_runtime: Duration | None = None,
        wait: bool = True,
        kms_key: kms.IKey | None = None,
        role: iam.IRole | None = None,
        tags: Mapping[str, str] | None = None,
        base_draft: str | TrainedDraft | None = None,
    ) -> None:
        """
        :param deployment_instance_type: the instance type the draft is trained for (an endpoint's).
        :param model_id: Hugging Face id of the target model: names its catalog facts; with neither
            ``model_s3_uri`` nor ``sagemaker_model_name``, a SageMaker model with HF_MODEL_ID is created
            as the job's source.
        :param model_s3_uri: S3 prefix of the target's weights (the documented source). Default: none.
        :param sagemaker_model_name: an existing SageMaker model as the source. Default: none.
        :param model_architecture: HF architecture for a model the catalog does not know.
        :param accept_eula: ModelAccessConfig.AcceptEula for gated weights in S3. Default: false.
        :param training_data: S3 URI (prefix or manifest) of ShareGPT / OpenAI-format data.
            Default: SageMaker's curated datasets.
        :param training_data_type: S3Prefix or ManifestFile. Default: S3Prefix.
        :param output_bucket: Default: a bucket is created (encrypted, versioned, TLS only, retained
            on stack deletion).
        :param output_prefix: Default: "eagle-optimization/"; each job writes under <prefix><job name>/.
        :param access_logs_bucket: server access logs for the created output bucket. Default: none.
        :param max_runtime: StoppingCondition.MaxRuntimeInSeconds. Default: 8 hours with wait=False,
            55 minutes with wait=True (a waited job must end within CloudFormation's hour).
        :param wait: wait for the job inside the deployment (at most 55 minutes: CloudFormation's
            custom-resource limit is one hour), or start it and return. Default: true. Use false for
            long jobs: the draft location is known in advance; deploy the endpoint in a later update.
        :param kms_key: encrypts the job output and the created bucket. Default: S3 managed keys.
        :param role: the job's execution role. Default: created with access to exactly its inputs.
        :param tags: tags on the job. Default: none.
        :param base_draft: start from an existing EAGLE head instead of a new one: an S3 prefix of its
            weights, or the TrainedDraft of an earlier EagleOptimizationJob. The handler registers a
            SageMaker model with the target (``model_s3_uri``, required) and the head as the
            ``eagle_model`` additional model data source, as AWS's example of further training does, and
            optimizes that model. Default: none (train a head from scratch).
        """
        where = construct_path(scope, construct_id)
        require_str(
            deployment_instance_type, "deployment_instance_type", where, optional=False, non_empty=True
        )
        require_str(model_id, "model_id", where, optional=False, non_empty=True)
        for name, value in (
            ("model_s3_uri", model_s3_uri),
            ("sagemaker_model_name", sagemaker_model_name),
            ("model_architecture", model_architecture),
            ("training_data", training_data),
        ):
            require_str(value, name, where)
        require_bool(accept_eula, "accept_eula", where)
        require_choice(training_data_type, ("S3Prefix", "ManifestFile"), "training_data_type", where)
        require_jsii(output_bucket, BUCKET, "output_bucket", where)
        require_str(output_prefix, "output_prefix", where, optional=False)
        require_jsii(access_logs_bucket, BUCKET, "access_logs_bucket", where)
        require_duration(max_runtime, "max_runtime", where, low_seconds=1, high_seconds=MAX_RUNTIME_S)
        require_bool(wait, "wait", where)
        require_jsii(kms_key, KEY, "kms_key", where)
        require_jsii(role, ROLE, "role", where)
        require_tags(tags, "tags", where)
        if base_draft is not None and not isinstance(base_draft, TrainedDraft):
            require_str(base_draft, "base_draft", where)
        ignored = [
            (
                access_logs_bucket is not None and output_bucket is not None,
                "access_logs_bucket",
                "output_bucket",
                "logs the bucket the construct creates; a given output_bucket keeps its own logging",
            ),
            (
                accept_eula and model_s3_uri is None,
                "accept_eula",
                "model_s3_uri",
                "is ModelAccessConfig of weights in S3 (model_s3_uri)",
            ),
            (
                training_data_type != "S3Prefix" and training_data is None,
                "training_data_type",
                "training_data",
                "says what training_data is",
            ),
        ]
        for problem, prop, other, why in ignored:
            if problem:
                raise ValueError(f"{where}: {prop} {why}; without {other} it would be ignored")
        super().__init__(scope, construct_id)
        self.wait = wait
        cat = load_catalog()
        facts = cat.model(model_id)
        architecture = model_architecture or (facts.architecture if facts else None)
        self.technique = cat.optimization.eagle_architectures.technique(architecture or "")
        sources = [s for s in (model_s3_uri, sagemaker_model_name) if s is not None]
        if len(sources) > 1:
            raise ValueError(f"{self.node.path}: give at most one of model_s3_uri and sagemaker_model_name")
        base_draft_uri = base_draft.s3_uri if isinstance(base_draft, TrainedDraft) else base_draft
        if base_draft_uri is not None and model_s3_uri is None:
            raise ValueError(
                f"{self.node.path}: base_draft needs model_s3_uri: the job's source model carries the target's "
                "weights from S3 next to the head (SageMaker's EAGLE optimization takes no Hub id there)"
            )
        if training_data_type not in ("S3Prefix", "ManifestFile"):
            raise ValueError(
                f"{self.node.path}: training_data_type is {training_data_type!r}; allowed: S3Prefix, ManifestFile"
            )
        uri_problems: list[tuple[str, str]] = []
        locations: dict[str, S3Location] = {}
        for field, uri in (
            ("model_s3_uri", model_s3_uri),
            ("training_data", training_data),
            ("base_draft", base_draft_uri),
        ):
            if uri is not None and not Token.is_unresolved(uri):
                try:
                    locations[field] = parse_s3_uri(uri, field)
                except ValueError as err:
                    uri_problems.append((field, str(err)))
        findings = check_optimization_job(
            deployment_instance_type=deployment_instance_type,
            architecture=architecture,
            model_id=model_id,
            uri_problems=uri_problems,
        )
        if findings:
            raise CompatibilityError(findings, where=self.node.path)
        default_runtime = MAX_WAIT if wait else DEFAULT_MAX_RUNTIME
        max_seconds = int((max_runtime or default_runtime).to_seconds())
        if max_seconds < 1:
            raise ValueError(f"{self.node.path}: max_runtime must be positive")
        if wait and max_seconds > MAX_WAIT.to_seconds():
            raise ValueError(
                f"{self.node.path}: max_runtime is {max_seconds} s but a waited job must finish within "
                f"{int(MAX_WAIT.to_seconds())} s (CloudFormation waits at most one hour for a custom resource); "
                "use wait=False for longer jobs"
            )

        self.output_bucket = output_bucket or s3.Bucket(
            self,
            "OutputBucket",
            encryption=s3.BucketEncryption.KMS if kms_key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=kms_key,
            versioned=True,
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            removal_policy=RemovalPolicy.RETAIN,
            server_access_logs_bucket=access_logs_bucket,
            server_access_logs_prefix=f"{construct_id}/" if access_logs_bucket is not None else None,
        )
        if output_bucket is None and access_logs_bucket is None:
            acknowledge(
                self.output_bucket,
                "S1",
                "Holds only this job's artifacts, written by SageMaker with the job role; pass access_logs_bucket "
                "to log object access (a logs bucket of its own would need the same exception).",
            )
        self.role = role or iam.Role(
            self,
            "JobRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="SageMaker optimization job role created by speculative-infra",
        )
        inputs = {
            "model_id": model_id,
            "model_s3_uri": model_s3_uri,
            "sagemaker_model_name": sagemaker_model_name,
            "instance": deployment_instance_type,
            "training_data": training_data,
            "training_data_type": training_data_type,
            "max_runtime": max_seconds,
            "accept_eula": accept_eula,
            "output_bucket": self.output_bucket.bucket_name,
            "output_prefix": output_prefix,
            "kms_key": kms_key.key_arn if kms_key is not None else None,
            "role": self.role.role_arn,
            **({"base_draft": base_draft_uri} if base_draft_uri is not None else {}),
        }
        # A deterministic name: a retried Create finds its job, and changed inputs start a new one.
        # Tokens are hashed in their resolved CloudFormation form, which is stable across synths.
        self.job_name_prefix = _name_stem(construct_id)
        self.job_name = _job_name(self.job_name_prefix, Stack.of(self).resolve(inputs))
        prefix = output_prefix if output_prefix.endswith("/") else output_prefix + "/"
        self.output_prefix = f"{prefix.lstrip('/')}{self.job_name}/"
        self.output_root = prefix.lstrip("/")  # every job of this construct writes under it
        draft_layout = cat.optimization.output_layout.draft_prefix
        self.draft_key_prefix = f"{self.output_prefix}{draft_layout}"
        output_uri = f"s3://{self.output_bucket.bucket_name}/{self.output_prefix}"
        self.draft_s3_uri = f"s3://{self.output_bucket.bucket_name}/{self.draft_key_prefix}"

        if isinstance(base_draft, TrainedDraft):
            # The earlier job's bucket: read its draft prefix (locations only holds literal URIs).
            locations["base_draft"] = S3Location(
                bucket=base_draft.bucket.bucket_name, key=base_draft.key_prefix
            )
        self._grant_job_inputs(locations, kms_key)
        model_name = sagemaker_model_name or (None if model_s3_uri else self._source_model(model_id))
        self.base_draft_s3_uri = base_draft_uri

        properties: dict[str, Any] = {
            "JobName": self.job_name,
            "RoleArn": self.role.role_arn,
            "DeploymentInstanceType": deployment_instance_type,
            "OutputS3Uri": output_uri,
            "MaxRuntimeInSeconds": str(max_seconds),
            "Wait": "true" if wait else "false",
        }
        if model_s3_uri is not None:
            properties["ModelS3Uri"] = model_s3_uri
            properties["ModelAccessAcceptEula"] = "true" if accept_eula else "false"
        else:
            properties["SageMakerModelName"] = model_name
        if training_data is not None:
            properties["TrainingDataS3Uri"] = training_data
            properties["TrainingDataType"] = training_data_type
        if kms_key is not None:
            properties["KmsKeyId"] = kms_key.key_arn
        if tags:
            properties["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
        if base_draft_uri is not None:
            properties["BaseDraftS3Uri"] = base_draft_uri
            properties["SourceModelImage"] = self._source_model_image()

        self.provider = self._provider(wait)
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.provider.service_token,
            resource_type="Custom::EagleOptimizationJob",
            properties=properties,
        )
        self.resource.node.add_dependency(self.role)
        if isinstance(base_draft, TrainedDraft):
            self.resource.node.add_dependency(base_draft.job)  # the earlier head must exist first
        self.job_arn: str = self.resource.get_att_string("JobArn")
        self.recommended_image: str = self.resource.get_att_string("RecommendedInferenceImage")

    # --- public ---------------------------------------------------------------------------------

    def as_speculative_config(self, *, num_speculative_tokens: int, **extra: Any) -> TrainedDraft:
        """A speculative config for SpeculativeVllmEndpoint that serves this job's draft."""
        method = "eagle3" if self.technique == "eagle3" else "eagle"
        return TrainedDraft(
            config=mounted_draft_config(method, num_speculative_tokens, extra),
            bucket=self.output_bucket,
            key_prefix=self.draft_key_prefix,
            job=self.resource,
            waits_for_completion=self.wait,
        )

    # --- construction ---------------------------------------------------------------------------

    def _grant_job_inputs(self, locations: dict[str, S3Location], kms_key: kms.IKey | None) -> None:
        statements = [st for location in locations.values() for st in read_prefix_statements(location)]
        statements.append(write_logs_statement([sagemaker_log_group_arn("*")]))
        for statement in statements:
            self.role.add_to_principal_policy(statement)
        # Read and write only this job's own output prefix (grant_read_write would add Delete*/Abort*).
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject", "s3:PutObject"],
                resources=[self.output_bucket.arn_for_objects(f"{self.output_prefix}*")],
            )
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[self.output_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [f"{self.output_prefix}*"]}},
            )
        )
        for key in {k for k in (kms_key, self.output_bucket.encryption_key) if k is not None}:
            key.grant(self.role, "kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey")
        prefix_reason = "Objects under one S3 prefix: {} (the prefix is as narrow as the data)."
        acknowledge(
            self.role,
            "IAM5",
            prefix_reason.format("the job's own output"),
            resource=self.output_bucket.arn_for_objects(f"{self.output_prefix}*"),
        )
        for field, location in locations.items():
            acknowledge(
                self.role,
                "IAM5",
                prefix_reason.format(field),
                resource=location.object_arn_pattern(Aws.PARTITION),
            )
        acknowledge(
            self.role,
            "IAM5",
            "SageMaker names the job's log streams at run time under /aws/sagemaker/.",
            resource=sagemaker_log_group_arn("*"),
        )

    def _source_model_image(self) -> str:
        """The image of a source model (the job role may pull it): the one the handler registers for a
        base draft, or the one of `_source_model`."""
        container = newest_lmi_container()
        add_execution_permissions(self.role, image_repository_arns=[repository_arn(self, container)])
        acknowledge_execution_permissions(self.role)
        return image_uri(self, container)

    def _source_model(self, model_id: str) -> str:
        """A SageMaker model naming the HF id, for jobs that start from model_id alone."""
        model = sagemaker.CfnModel(
            self,
            "SourceModel",
            execution_role_arn=self.role.role_arn,
            primary_container=sagemaker.CfnModel.ContainerDefinitionProperty(
                image=self._source_model_image(), environment={"HF_MODEL_ID": model_id}
            ),
        )
        self.source_model = model
        return model.attr_model_name

    def _provider(self, wait: bool) -> cr.Provider:
        # Every job this construct names: on an input change CloudFormation deletes (stops) the old
        # job while the new policy is in place.
        jobs_arn = Stack.of(self).format_arn(
            service="sagemaker", resource="optimization-job", resource_name=f"{self.job_name_prefix}-*"
        )
        functions = {}
        for name, construct_id in (("on_event", "OnEvent"), ("is_complete", "IsComplete")):
            fn = handler_function(
                self,
                construct_id,
                handler=f"optimization_job.handler.{name}",
                description=f"EagleOptimizationJob {name}",
            )
            fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=[
                        "sagemaker:CreateOptimizationJob",
                        "sagemaker:DescribeOptimizationJob",
                        "sagemaker:StopOptimizationJob",
                        "sagemaker:AddTags",
                    ],
                    resources=[jobs_arn],
                )
            )
            if self.base_draft_s3_uri is not None:
                # The source model the handler registers for a base draft is named as its job.
                models_arn = Stack.of(self).format_arn(
                    service="sagemaker", resource="model", resource_name=f"{self.job_name_prefix}-*"
                )
                fn.add_to_role_policy(
                    iam.PolicyStatement(
                        actions=["sagemaker:CreateModel", "sagemaker:DeleteModel"], resources=[models_arn]
                    )
                )
                assert fn.role is not None
                acknowledge(
                    fn.role,
                    "IAM5",
                    "The source model is named as its job (a hash of the inputs): the handler may create and "
                    "delete the models this construct names.",
                    resource=models_arn,
                )
            fn.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["iam:PassRole"],
                    resources=[self.role.role_arn],
                    conditions={"StringEquals": {"iam:PassedToService": "sagemaker.amazonaws.com"}},
                )
            )
            assert fn.role is not None
            acknowledge(
                fn.role,
                "IAM5",
                "Job names carry a hash of the job's inputs; the handler may act on every job this construct "
                "names (the prefix), so it can stop the previous job when inputs change.",
                resource=jobs_arn,
            )
            functions[name] = fn
        return provider(
            self,
            "Provider",
            on_event=functions["on_event"],
            is_complete=functions["is_complete"],
            query_interval=POLL_INTERVAL,
            total_timeout=MAX_WAIT if wait else Duration.minutes(5),
        )


def _name_stem(construct_id: str) -> str:
    # Lower case: SageMaker shows job names in lower case in ARNs, which IAM matches literally.
    return re.sub(r"[^a-z0-9]+", "-", construct_id.lower()).strip("-")[:40] or "eagle"


def _job_name(stem: str, inputs: Any) -> str:
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]
    return f"{stem}-{digest}"
