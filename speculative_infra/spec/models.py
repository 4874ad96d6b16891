"""Pydantic models of a deployment spec.

`engine` and `speculative` use vLLM's own snake_case names. The commonly used keys are typed here;
any other key is accepted and checked against the chosen vLLM release's flags by the rules (so a
typo gets a finding with a suggestion rather than a bare schema error). Everything else forbids
unknown keys.
"""

from __future__ import annotations

import math
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from speculative_infra.human_int import parse_human_int
from speculative_infra.model_consistency import model_facts_problems
from speculative_infra.quantization_methods import (
    CheckpointSparsity,
    CompressedTensorsScheme,
    QuantizationMethod,
)
from speculative_infra.spec.instance_type import instance_type_problem
from speculative_infra.spec.repo_id import repo_id_problem

REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d+$"

# The largest count an AWS API takes: its "Integer" is a 32-bit signed integer (Smithy's `integer`,
# https://smithy.io/2.0/spec/simple-types.html). CloudFormation refuses a larger InitialInstanceCount,
# MinCapacity or cooldown; vLLM keeps its token and sequence counts in int32 tensors.
API_INT_MAX = 2**31 - 1
# Application Auto Scaling takes a target between -2^360 and 2^360 (TargetTrackingScalingPolicyConfiguration,
# https://docs.aws.amazon.com/autoscaling/application/APIReference/API_TargetTrackingScalingPolicyConfiguration.html).
AAS_TARGET_MAX = 2.0**360
# Free-form keys (engine extras, speculative extras) may hold numbers of any flag; vLLM reads them as
# Python ints and floats, and the container gets them as text. Longer integers are not settings.
_MAX_FREE_INT = 2**63 - 1
_MODEL_CONFIG = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
_OPEN_MODEL_CONFIG = ConfigDict(frozen=True, extra="allow", allow_inf_nan=False)


def _free_value_problem(value: Any, depth: int = 0) -> str | None:
    """Why a value under a free-form key cannot be a setting: NaN, infinity, a 64-bit overflow, deep nesting."""
    if depth > 16:
        return "nested more than 16 levels deep"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_FREE_INT:
        return f"an integer of {len(str(abs(value)))} digits; allowed: within a 64-bit integer"
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else ()
    )
    for child in children:
        problem = _free_value_problem(child, depth + 1)
        if problem is not None:
            return problem
    return None


def _check_free_keys(model: BaseModel) -> None:
    for key, value in (model.model_extra or {}).items():
        problem = _free_value_problem(value)
        if problem is not None:
            raise PydanticCustomError("free_value", "{key}: {problem}", {"key": key, "problem": problem})


@cache
def _time_zones() -> frozenset[str]:
    # The tzdata package's own list of the IANA database's zones: zoneinfo.available_timezones() also
    # lists whatever sits in the machine's zoneinfo folder (Debian's "localtime", a link to /etc/localtime).
    zones = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return frozenset(zone for zone in zones if zone != "Factory")


# inference_ami_version values that are not host image names. One default for every entry point
# (spec, CLI, construct props, from_spec): AUTO_HOST.
AUTO_HOST = "auto"
DEFAULT_HOST = "default"


def _as_version_string(value: Any) -> Any:
    # YAML reads `version: 20` as an int; a version is a string everywhere else.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


class ContainerSpec(BaseModel):
    model_config = _MODEL_CONFIG

    framework: Literal["vllm", "lmi"] = Field(
        description="vllm: the SageMaker vLLM DLC; lmi: DJL LMI (vLLM async)."
    )
    version: str | None = Field(
        default=None,
        description="vLLM version for the DLC ('0.15.1'), LMI major version for LMI ('20'). "
        "Default: the newest release in the catalog.",
    )

    _coerce_version = field_validator("version", mode="before")(_as_version_string)


class ModelSpec(BaseModel):
    """A Hugging Face model id; catalog models need nothing else, other models describe themselves."""

    model_config = _MODEL_CONFIG

    id: str = Field(min_length=1, description="Hugging Face model id, e.g. Qwen/Qwen3-32B.")
    weights: Literal["hub", "s3"] = Field(
        default="hub",
        description="Where the container gets the weights: hub (downloads `id` from Hugging Face, the "
        "default) or s3 (the constructs' model_data).",
    )
    architecture: str | None = None
    model_type: str | None = None
    parameters_billion: float | None = Field(default=None, gt=0)
    num_hidden_layers: int | None = Field(default=None, ge=1)
    num_attention_heads: int | None = Field(default=None, ge=1)
    num_key_value_heads: int | None = Field(default=None, ge=1)
    head_dim: int | None = Field(default=None, ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    max_position_embeddings: int | None = Field(default=None, ge=1)
    dtype: Literal["bfloat16", "float16", "float32"] | None = None
    weights_gb: float | None = Field(default=None, gt=0)
    quantization: QuantizationMethod | None = None
    quantization_scheme: CompressedTensorsScheme | None = None  # compressed-tensors only
    sparsity: CheckpointSparsity | None = Field(
        default=None,
        description="compressed-tensors only: 2:4 where quantization_config.sparsity_config puts layers on "
        "vLLM's 2:4 sparse kernel, other for a sparsity_config with targets read densely (facts fetch "
        "fills it).",
    )
    quantized_parameters_billion: float | None = Field(default=None, gt=0)
    vocab_size: int | None = Field(default=None, ge=1)
    tie_word_embeddings: bool | None = None
    sliding_window: int | None = Field(default=None, ge=1)
    sliding_window_layers: int | None = Field(default=None, ge=0)
    mtp_layers: int | None = Field(default=None, ge=0)
    gated: bool | None = None

    @field_validator("id")
    @classmethod
    def _repository_id(cls, value: str) -> str:
        problem = repo_id_problem(value)
        if problem is not None:
            raise PydanticCustomError("repo_id", problem)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        # Ranges and relations shared with the catalog and fetched facts (model_consistency.py).
        problems = model_facts_problems(self.model_dump(exclude_none=True))
        if problems:
            field, reason = problems[0]
            raise PydanticCustomError("model_facts", "{field} {reason}", {"field": field, "reason": reason})
        return self

    def described_fields(self) -> dict[str, Any]:
        return self.model_dump(exclude={"id", "weights"}, exclude_none=True)


class EngineArgs(BaseModel):
    """vLLM engine arguments (snake_case, as `vllm serve --flag-name`)."""

    model_config = _OPEN_MODEL_CONFIG

    tensor_parallel_size: int | None = Field(
        default=None, ge=1, le=API_INT_MAX, description="Default: the GPU count."
    )
    max_model_len: int | None = Field(
        default=None,
        ge=1,
        le=API_INT_MAX,
        description="Default: the model's context, capped to what fits in memory. Also as vLLM writes "
        "sizes: 32k (32,000) or 32K (32,768).",
    )
    dtype: Literal["auto", "bfloat16", "float16", "half", "float32", "float"] | None = Field(
        default=None, description="Default: the model's dtype (float16 on GPUs without bf16)."
    )
    enable_prefix_caching: bool | None = Field(default=None, description="Default: true.")
    enable_chunked_prefill: bool | None = Field(default=None, description="Default: true.")
    max_num_seqs: int | None = Field(
        default=None, ge=1, le=API_INT_MAX, description="Default: 256 (vLLM's default)."
    )
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1, description="Default: 0.9.")
    kv_cache_dtype: str | None = None
    enable_lora: bool | None = None

    @field_validator("max_model_len", mode="before")
    @classmethod
    def _human_readable(cls, value: Any) -> Any:
        # vLLM reads "32k" / "32K" for this flag (human_readable_int); keep the spec's integer.
        if isinstance(value, str):
            parsed = parse_human_int(value)
            return value if parsed is None else parsed
        return value

    @model_validator(mode="after")
    def _finite_extras(self) -> EngineArgs:
        _check_free_keys(self)
        return self

    def given(self) -> dict[str, Any]:
        """Every key the user set, typed or not, in the order given."""
        typed = self.model_dump(exclude_none=True, exclude=set(self.model_extra or {}))
        return {**typed, **(self.model_extra or {})}


class SpeculativeConfig(BaseModel):
    """vLLM's speculative config (`--speculative-config`), keys as vLLM names them."""

    model_config = _OPEN_MODEL_CONFIG

    method: str | None = Field(
        default=None,
        description="eagle3, eagle, ngram, mtp, ... Default: the draft's method from the catalog.",
    )
    model: str | None = Field(default=None, description="Draft model id or path.")
    num_speculative_tokens: int | None = Field(
        default=None, le=API_INT_MAX, description="Tokens drafted per step (>= 1)."
    )
    draft_tensor_parallel_size: int | None = None
    parallel_drafting: bool | None = Field(default=None, description="P-EAGLE (vLLM >= 0.16.0).")

    @model_validator(mode="after")
    def _finite_extras(self) -> SpeculativeConfig:
        _check_free_keys(self)
        return self

    def given(self) -> dict[str, Any]:
        typed = self.model_dump(exclude_none=True, exclude=set(self.model_extra or {}))
        return {**typed, **(self.model_extra or {})}


class ScheduledCapacity(BaseModel):
    """A scheduled change of the scaling bounds (e.g. scale down at night)."""

    model_config = _MODEL_CONFIG

    name: str = Field(min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_-]+$")
    schedule: str = Field(
        description="cron(...), rate(...) or at(...) expression of Application Auto Scaling."
    )
    min_capacity: int | None = Field(default=None, ge=0, le=API_INT_MAX)
    max_capacity: int | None = Field(default=None, ge=0, le=API_INT_MAX)
    time_zone: str | None = Field(default=None, description="IANA time zone. Default: UTC.")

    @field_validator("time_zone")
    @classmethod
    def _iana_time_zone(cls, value: str | None) -> str | None:
        # Application Auto Scaling takes the IANA database's names (PutScheduledAction, Timezone).
        if value is not None and value not in _time_zones():
            raise PydanticCustomError(
                "time_zone",
                "{value} is not a time zone of the IANA database; allowed: a name such as UTC, "
                "Europe/Paris or America/New_York",
                {"value": repr(value)},
            )
        return value

    @model_validator(mode="after")
    def _changes_something(self) -> ScheduledCapacity:
        if self.min_capacity is None and self.max_capacity is None:
            raise PydanticCustomError(
                "schedule_capacity",
                "schedule {name} sets neither min_capacity nor max_capacity; allowed: at least one of them",
                {"name": repr(self.name)},
            )
        return self


class ScalingOptions(BaseModel):
    """Traffic-aware auto-scaling of the instances (vLLM endpoint) or copies (inference component)."""

    model_config = _MODEL_CONFIG

    min_capacity: int = Field(
        default=1, le=API_INT_MAX, description="Fewest instances (or copies). Default: 1."
    )
    max_capacity: int = Field(le=API_INT_MAX, description="Most instances (or copies).")
    metric: Literal["concurrent_requests", "invocations"] = Field(
        default="concurrent_requests",
        description="concurrent_requests: the high-resolution in-flight request count (10 s, counts streams "
        "until their last token); invocations: invocations per instance (or copy) per minute.",
    )
    target_value: float | None = Field(
        default=None,
        lt=AAS_TARGET_MAX,
        description="Target per instance (or copy). Default for concurrent_requests: 75% of max_num_seqs; "
        "required for invocations.",
    )
    scale_in_cooldown_seconds: int = Field(default=300, le=API_INT_MAX, description="Default: 300.")
    scale_out_cooldown_seconds: int = Field(default=60, le=API_INT_MAX, description="Default: 60.")
    schedules: list[ScheduledCapacity] = Field(default_factory=list)


class DeploymentSpec(BaseModel):
    """One deployment: instance, container, model, engine and speculative settings."""

    model_config = _MODEL_CONFIG

    region: str | None = Field(
        default=None,
        pattern=REGION_PATTERN,
        description="AWS region. Default: unknown at synth time (environment-agnostic stack).",
    )
    instance_type: str = Field(description="SageMaker instance type, e.g. ml.g7e.2xlarge.")
    instance_count: int = Field(default=1, ge=1, le=API_INT_MAX, description="Initial instance count.")
    volume_size_in_gb: int | None = Field(
        default=None,
        ge=1,
        le=512,  # ProductionVariant VolumeSizeInGB: 1 to 512 (SageMaker API reference)
        description="ML storage volume. Default: SageMaker's (none on NVMe instances).",
    )
    container: ContainerSpec
    model: ModelSpec
    engine: EngineArgs = Field(default_factory=EngineArgs)
    speculative: SpeculativeConfig | None = None
    inference_ami_version: str = Field(
        default=AUTO_HOST,
        min_length=1,
        description="The host image (ProductionVariant InferenceAmiVersion). 'auto' (the default): SageMaker's "
        "default host where it is documented or observed to run this container on this GPU, else the host "
        "image whose driver can drive the GPU and run the container's CUDA; 'default': SageMaker's default "
        "host image, whatever it is; or a host image name such as al2-ami-sagemaker-inference-gpu-3-1.",
    )
    environment: dict[str, str] = Field(
        default_factory=dict, description="Extra container environment, checked against the limits."
    )
    hf_token_secret: str | None = Field(
        default=None,
        min_length=1,
        description="Secrets Manager secret (name or ARN) whose value is a Hugging Face token, for gated "
        "models. Rendered as HF_TOKEN with a CloudFormation dynamic reference, never as the token itself. "
        "Default: none.",
    )

    @field_validator("instance_type")
    @classmethod
    def _instance_type_name(cls, value: str) -> str:
        # Not a bare pattern: the message names the value and the name it was probably meant to be.
        problem = instance_type_problem(value)
        if problem is not None:
            raise PydanticCustomError("instance_type_name", problem)
        return value

    @field_validator("inference_ami_version", mode="before")
    @classmethod
    def _none_means_auto(cls, value: Any) -> Any:
        # Construct props use None for "not given"; it means the same as leaving the spec field out.
        return AUTO_HOST if value is None else value

    scaling: ScalingOptions | None = Field(default=None, description="Default: no auto-scaling.")
    serving: Literal["real_time", "async", "batch"] = Field(
        default="real_time",
        description="real_time: InvokeEndpoint(WithResponseStream) answers at once; async: "
        "InvokeEndpointAsync queues requests and writes answers to S3, and the endpoint may scale to zero "
        "on its backlog; batch: a batch transform job over a file of requests (no endpoint; its host image "
        "is a batch one). async and batch: vLLM only. Default: real_time.",
    )
