"""Schema of the catalog data files.

Every fact carries where it comes from (`source`) and how sure we are of it (`confidence`). The models
are frozen and forbid unknown keys, so a typo in a data file fails loudly when the catalog loads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

# The base classes live apart so the vLLM start-up check models can use them; re-exported here.
from speculative_infra.catalog.fact_base import Confidence as Confidence
from speculative_infra.catalog.fact_base import Fact as Fact
from speculative_infra.catalog.fact_base import Sourced as Sourced
from speculative_infra.catalog.fact_base import version_tuple as version_tuple
from speculative_infra.catalog.vllm_startup_checks import (
    BatchedTokensDefault,
    DraftingSlotChecks,
    DraftRopeCache,
    MaxModelLenDerivation,
    MaxModelLenLoweredToDraft,
    MultimodalDraftRefusals,
    ParallelWorldChecks,
    SchedulerChecks,
    SparseCheckpointChecks,
    SpeculativeMaxModelLenChecks,
)
from speculative_infra.quantization_methods import (
    CheckpointSparsity,
    CompressedTensorsScheme,
    QuantizationMethod,
)

# --- GPUs and instances -------------------------------------------------------------------------


class DriverFloor(Sourced):
    """The NVIDIA driver branches whose kernel module can drive a GPU (R570 -> 570)."""

    branch: int = Field(ge=1)  # the oldest
    last_branch: int | None = Field(default=None, ge=1)  # the newest, once NVIDIA drops the architecture
    # The first build of `branch` that drives the GPU, where support came within the branch (L40S: 535.104.05).
    build: str | None = Field(default=None, pattern=r"^\d+\.\d+(\.\d+)?$")


class DenseThroughput(Sourced):
    """Tensor-core TFLOPS without 2:4 sparsity; fp8 None where the GPU has no fp8 tensor cores."""

    bf16: float = Field(gt=0)
    fp8: float | None = Field(default=None, gt=0)


class TensorParallelLink(Sourced):
    """What carries tensor-parallel all-reduce between an instance's GPUs, per GPU per direction."""

    kind: Literal["pcie", "nvlink"]
    gbps_per_direction: float = Field(gt=0)


class Gpu(Sourced):
    architecture: str
    compute_capability: str
    memory_gb: float
    usable_memory_mib: int | None = None
    usable_memory_source: Sourced | None = None  # where the nvidia-smi figure comes from
    bf16: bool
    memory_bandwidth_gbps: float
    dense_tflops: DenseThroughput | None = None
    cuda_forward_compatible: bool
    driver_floor: DriverFloor

    @property
    def memory_mib(self) -> int:
        """Memory vLLM can budget: the observed total where known, else the nominal figure."""
        if self.usable_memory_mib is not None:
            return self.usable_memory_mib
        return int(self.memory_gb * 1e9 / 2**20)


class HostDriver(Sourced):
    driver: int
    cuda: str


class InstanceSize(Fact):
    gpus: int = Field(ge=1)
    vcpus: int | None = None
    memory_gib: float | None = None


class InstanceStorage(Sourced):
    kind: Literal["nvme", "ebs"]


class InstanceFamily(Sourced):
    gpu: str
    tensor_parallel_link: TensorParallelLink | None = None
    sizes: dict[str, InstanceSize]
    storage: InstanceStorage
    default_host: HostDriver | None = None


class InstanceType(Fact):
    """One size of a family, joined with its GPU: what the rules work with."""

    name: str
    family: str
    size: str
    gpu_name: str
    gpu: Gpu
    gpu_count: int
    vcpus: int | None
    memory_gib: float | None
    default_host: HostDriver | None
    storage: InstanceStorage
    tensor_parallel_link: TensorParallelLink | None = None
    source: str
    confidence: Confidence


class PriceList(Sourced):
    region: str
    as_of: str
    usd_per_hour: dict[str, float]


class Price(Fact):
    instance_type: str
    usd_per_hour: float
    region: str
    as_of: str
    source: str
    confidence: Confidence


# --- host images, CUDA ---------------------------------------------------------------------------


class HostImageRefusals(Sourced):
    instance_types: list[str]  # seen refused by SageMaker when the endpoint was created


class HostImageDoubts(Sourced):
    families: list[str]  # said to be unsupported, with no refusal on record
    against: str  # public reports that contradict the statement


class Ami(Sourced):
    driver: int
    driver_build: str | None = Field(default=None, pattern=r"^\d+\.\d+(\.\d+)?$")  # where AWS documents it
    cuda: str
    cuda_compat_mounting: bool
    refused_on: HostImageRefusals | None = None
    doubted_on: HostImageDoubts | None = None

    def offered_on(self, instance_type: str) -> bool:
        """False only where SageMaker was seen to refuse this image on the instance type."""
        return self.refused_on is None or instance_type not in self.refused_on.instance_types

    def doubted_for(self, family: str) -> bool:
        return self.doubted_on is not None and family in self.doubted_on.families


class RecommendedAmis(Sourced):
    amis: dict[str, str]


class CudaFacts(Sourced):
    min_cuda_by_compute_capability: dict[str, str]
    max_cuda_by_compute_capability: dict[str, str]
    min_driver_by_cuda: dict[str, int]
    minor_version_compat_min_driver: dict[str, int]
    forward_compat_min_driver_by_cuda: dict[str, int]
    flashinfer_min_cuda_by_major_compute_capability: dict[str, str]

    def minor_compat_driver(self, cuda: str) -> int | None:
        """Oldest driver on which a CUDA runtime of this major version runs (minor-version compat)."""
        return self.minor_version_compat_min_driver.get(cuda.split(".")[0])

    def forward_compat_driver(self, cuda: str) -> int | None:
        """Oldest driver branch NVIDIA's forward-compatibility package for this CUDA supports (None: unknown)."""
        return self.forward_compat_min_driver_by_cuda.get(cuda)

    def min_driver(self, cuda: str) -> int | None:
        """Driver floor for a CUDA version: the entry for the highest listed version <= cuda."""
        best: tuple[tuple[int, ...], int] | None = None
        for listed, driver in self.min_driver_by_cuda.items():
            if version_tuple(listed) <= version_tuple(cuda) and (
                best is None or version_tuple(listed) > best[0]
            ):
                best = (version_tuple(listed), driver)
        return None if best is None else best[1]


# --- containers ----------------------------------------------------------------------------------


class ForwardCompat(Sourced):
    """Whether the image runs its CUDA through its own forward-compatibility libraries on an older driver."""

    enabled: bool


class VllmDlcRelease(Fact):
    version: str
    cuda: str
    os: str = "ubuntu22.04"  # the tag's operating system (ubuntu24.04 from 0.28.0)
    boolean_env: Literal["empty", "true_false"]
    forward_compat: ForwardCompat


class VllmDlcRepository(Sourced):
    repository: str
    tag_pattern: str
    releases: list[VllmDlcRelease]


class LmiRelease(Fact):
    lmi_version: str
    vllm_version: str
    cuda: str
    forward_compat: ForwardCompat


class LmiRepository(Sourced):
    repository: str
    tag_pattern: str
    releases: list[LmiRelease]


class Observation(Sourced):
    framework: Literal["vllm", "lmi"]
    version: str
    family: str
    outcome: Literal["works", "fails"]


class ContainerImage(Fact):
    """A concrete image the rules and constructs use (either framework)."""

    framework: Literal["vllm", "lmi"]
    version: str  # the container's own version: vLLM version for the DLC, LMI major for LMI
    vllm_version: str
    cuda: str
    repository: str
    tag: str
    forward_compat: ForwardCompat
    boolean_env: Literal["empty", "true_false"] | None = None
    source: str
    confidence: Confidence

    @property
    def label(self) -> str:
        if self.framework == "vllm":
            return f"vLLM DLC {self.version} (CUDA {self.cuda})"
        return f"DJL LMI v{self.version} (vLLM {self.vllm_version}, CUDA {self.cuda})"


# --- regions -------------------------------------------------------------------------------------


class DlcAccounts(Sourced):
    accounts: dict[str, str]


class HostingRegionEvidence(Sourced):
    """Regions one public source names as offering an instance family for SageMaker hosting."""

    regions: list[str]


class InferenceComponentRegions(Sourced):
    unavailable_regions: list[str]


# --- models and drafts ---------------------------------------------------------------------------


class RopeParameters(Fact):
    """One set of a config.json's RoPE parameters as vLLM reads them (rope_scaling, or rope_parameters; one
    per layer type where the config nests them): the type (the legacy `type` key renamed, as vLLM's
    patch_rope_parameters does), the scaling factor and YaRN's original context."""

    rope_type: str = Field(min_length=1, max_length=64)
    factor: int | float | None = Field(default=None, gt=0)  # None: not set, or set to null (factor_is_null)
    factor_is_null: bool = False  # the config says "factor": null (vLLM 0.18.0 on reads it as 1.0)
    original_max_position_embeddings: int | None = Field(default=None, ge=1)


class ConfigLengths(Fact):
    """The keys of a config.json that vLLM derives a context from (context_limit.py), for a checkpoint whose
    other facts are not those of a target model (a draft): its length keys, RoPE parameters and the
    top-level original context a longrope config carries. A config without a length key has none here."""

    model_type: str = ""
    max_position_embeddings: int | None = Field(default=None, ge=1)
    other_length_keys: dict[str, int] = Field(default_factory=dict)
    rope: tuple[RopeParameters, ...] = ()
    original_max_position_embeddings: int | None = Field(default=None, ge=1)


class ModelFacts(Fact):
    """A target model's architecture facts. Catalog entries carry a source; user-described ones say so."""

    architecture: str
    model_type: str
    parameters_billion: float = Field(gt=0)
    num_hidden_layers: int = Field(ge=1)
    num_attention_heads: int = Field(ge=1)
    num_key_value_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    hidden_size: int | None = Field(default=None, ge=1)
    max_position_embeddings: int = Field(ge=1)
    # What else in config.json bounds the context vLLM derives (context_limit.py): its other length keys
    # (seq_length, model_max_length, ...), its RoPE parameters, the top-level original context a longrope
    # model defaults to. (tokenizer_config.json's model_max_length bounds only pooling models, which
    # endpoints here do not serve.)
    other_length_keys: dict[str, int] = Field(default_factory=dict)
    rope: tuple[RopeParameters, ...] = ()
    original_max_position_embeddings: int | None = Field(default=None, ge=1)
    dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    weights_gb: float | None = Field(default=None, gt=0)  # the checkpoint, where not parameters x dtype
    quantization: QuantizationMethod | None = None  # of the checkpoint's weights
    quantization_scheme: CompressedTensorsScheme | None = None  # compressed-tensors only
    # compressed-tensors only: what quantization_config.sparsity_config asks of vLLM (quantization_methods)
    sparsity: CheckpointSparsity | None = None
    quantized_parameters_billion: float | None = Field(default=None, gt=0)  # e.g. the MoE experts in MXFP4
    sliding_window: int | None = Field(default=None, ge=1)  # tokens a sliding-window layer attends to
    sliding_window_layers: int = Field(default=0, ge=0)
    vocab_size: int | None = Field(default=None, ge=1)
    # config.json's tie_word_embeddings: the LM head reuses the input embedding's table (so a step reads
    # the table in full); False for every catalogued model, whose config.json says so.
    tie_word_embeddings: bool = False
    mtp_layers: int | None = Field(default=None, ge=0)  # multi-token-prediction layers; None: not known
    # Mixture of experts: parameters one token runs through, experts per MoE layer and how many a token
    # takes (config.json's num_experts / num_local_experts and num_experts_per_tok / experts_per_token).
    active_parameters_billion: float | None = Field(default=None, gt=0)
    num_experts: int | None = Field(default=None, ge=1)
    experts_per_token: int | None = Field(default=None, ge=1)
    gated: bool | None = None  # the Hub asks for a licence and a token before download; None: not known
    source: str = "described in the deployment spec"
    confidence: Confidence = "unverified"


class Draft(Sourced):
    """A speculative-decoding draft checkpoint, its target, and the shape it expects of the target."""

    method: str
    target: str | None = None  # the model it was trained for, where known
    # What vLLM keeps on the GPU with one pipeline stage (the memory model counts this, plus one embedding
    # table with more stages). An EAGLE head whose input embedding equals the target's uses the target's
    # there, so it keeps less than it downloads.
    size_gb: float | None = None
    download_gb: float | None = None  # the checkpoint's files, as fetched from the Hub
    parallel_drafting: bool = False
    # The target's hidden size and vocabulary the head was built for (EAGLE heads read the target's
    # hidden states and score its vocabulary); None where not known.
    target_hidden_size: int | None = Field(default=None, ge=1)
    target_vocab_size: int | None = Field(default=None, ge=1)
    # What the draft's own config.json gives vLLM to derive the draft's max_model_len from (SI416); None
    # where it was not read.
    config_lengths: ConfigLengths | None = None


TextKind = Literal[
    "chat", "code", "math", "tool_calling", "long_context", "document_correction", "summarization"
]


class AcceptanceFigure(Sourced):
    """A published mean acceptance length (bonus token included) for one kind of text and k."""

    text_kind: TextKind
    k: int = Field(ge=1)
    acceptance_length: float = Field(ge=1)


class AcceptanceFacts(Fact):
    drafts: dict[str, list[AcceptanceFigure]]
    method_defaults: dict[str, AcceptanceFigure]


class ValueFact(Sourced):
    value: str


class SupportFact(Sourced):
    supported: bool


class EnvironmentLimits(Sourced):
    """CreateModel's limits on a container's environment."""

    max_entries: int = Field(ge=1)
    max_item_bytes: int = Field(ge=1)
    max_total_bytes: int = Field(ge=1)
    key_pattern: str


class TransformInstanceTypes(Sourced):
    types: list[str]


class TransformLimits(Sourced):
    max_payload_mb: int
    max_invocation_timeout_seconds: int
    max_invocation_retries: int


class SageMakerFacts(Fact):
    environment_limits: EnvironmentLimits
    transform_instance_types: TransformInstanceTypes
    transform_limits: TransformLimits


class MemoryOverheads(Sourced):
    """vLLM's GPU memory outside weights and KV cache, per GPU, as its start-up profile run measures it.

    activation = fixed + per_token_hidden x batched tokens x hidden size + per_row_vocab x rows x vocabulary
    (the profile run is one forward pass of max_num_batched_tokens tokens, then the sampler over
    min(max_num_seqs, tokens) rows of logits).
    """

    activation_fixed_gib: float = Field(ge=0)
    activation_bytes_per_token_hidden: float = Field(ge=0)
    sampler_bytes_per_row_vocab: float = Field(ge=0)
    non_torch_gib: float = Field(ge=0)  # CUDA context growth, cuBLAS workspaces (NCCL is outside from 0.11)
    cuda_graph_gib: float = Field(ge=0)  # captured CUDA graphs, once vLLM counts them
    cuda_graph_counted_from: str  # the first vLLM release that subtracts them before sizing the KV cache
    default_gpu_memory_utilization: float = Field(gt=0, le=1)
    # `vllm serve` defaults: (max_num_batched_tokens, max_num_seqs) on large GPUs (memory >= the threshold,
    # A100 excepted) and on the others.
    large_gpu_min_gib: float = Field(gt=0)
    large_gpu_exceptions: list[str]
    large_gpu_defaults: tuple[int, int]
    small_gpu_defaults: tuple[int, int]


class MethodKeys(Fact):
    """Speculative keys only these methods read."""

    methods: tuple[str, ...]
    keys: tuple[str, ...]


class SpeculativeFacts(Sourced):
    """How vLLM's SpeculativeConfig treats a draft, in every catalog release."""

    draft_checkpoint_methods: frozenset[str]  # methods that need speculative.model
    method_keys: tuple[MethodKeys, ...]
    draft_tensor_parallel_sizes: tuple[int | Literal["target"], ...]  # "target": the target's TP

    def allowed_draft_tensor_parallel(self, target_tensor_parallel: int) -> list[int]:
        return sorted(
            {target_tensor_parallel if s == "target" else s for s in self.draft_tensor_parallel_sizes}
        )


class QuantizationSupport(Sourced):
    """What vLLM asks of the GPU for a checkpoint quantized this way."""

    min_compute_capability: str
    activation_dtypes: list[str]


class SpeculativeTokensDefault(Sourced):
    """num_speculative_tokens for one method (P-EAGLE: eagle3, parallel_drafting) where a spec has none."""

    method: str
    parallel_drafting: bool = False
    value: int = Field(ge=1)


class ModelImplValues(Sourced):
    """engine.model_impl: the values vLLM knows, and the first release whose ModelConfig takes any string
    (before, the command line's choices refuse others); there an unknown value loads as "vllm" does."""

    values: tuple[str, ...]
    unchecked_since: str

    def unchecked(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.unchecked_since)


class TransformersBackend(Sourced):
    """The Transformers backend classes a text model loads as: the MoE one from `moe_any_expert_since` for
    any expert, before it for more than one."""

    causal_lm: str
    moe_causal_lm: str
    moe_any_expert_since: str


class SchemeFallback(Fact):
    """The scheme vLLM runs instead of a checkpoint's own (rules/gpu_support.py compares)."""

    runs_as: str
    # The compute capability below which vLLM swaps; None: below the scheme's own get_min_capability().
    below: str | None = None
    always: bool = False  # on every GPU (the scheme's layers are built by the other class)
    since: str | None = None  # the first release that swaps; None: the oldest read
    until: str | None = None  # the last release that swaps (inclusive); None: still in the newest read

    def swaps(self, release: str, compute_capability: str, own_floor: str | None) -> bool:
        if self.since is not None and version_tuple(release) < version_tuple(self.since):
            return False
        if self.until is not None and version_tuple(release) > version_tuple(self.until):
            return False
        if self.always:
            return True
        threshold = self.below if self.below is not None else own_floor
        return threshold is not None and version_tuple(compute_capability) < version_tuple(threshold)


class SchemeFallbacks(Sourced):
    fallbacks: dict[str, SchemeFallback]  # the checkpoint's scheme -> what vLLM runs instead, and when


class VllmFacts(Fact):
    min_compute_capability: ValueFact
    fp8_min_compute_capability: ValueFact
    quantization: dict[str, QuantizationSupport]
    lora_with_speculative: SupportFact
    speculative: SpeculativeFacts
    speculative_token_defaults: list[SpeculativeTokensDefault]
    memory_overheads: MemoryOverheads
    human_int_tera_suffixes_since: ValueFact  # first release whose human_readable_int reads t / T
    scheduler_checks: SchedulerChecks
    multimodal_draft_refusals: MultimodalDraftRefusals
    api_server_batched_tokens_default: BatchedTokensDefault
    speculative_max_model_len_checks: SpeculativeMaxModelLenChecks
    draft_rope_cache: DraftRopeCache
    max_model_len_lowered_to_draft: MaxModelLenLoweredToDraft
    transformers_backend: TransformersBackend
    model_impl: ModelImplValues
    drafting_slot_checks: DraftingSlotChecks
    parallel_world_checks: ParallelWorldChecks
    compressed_tensors_fallbacks: SchemeFallbacks
    sparse_checkpoint_checks: SparseCheckpointChecks
    max_model_len_derivation: MaxModelLenDerivation

    def speculative_tokens_default(
        self, method: str, parallel_drafting: bool
    ) -> SpeculativeTokensDefault | None:
        return next(
            (
                d
                for d in self.speculative_token_defaults
                if d.method == method and d.parallel_drafting == parallel_drafting
            ),
            None,
        )


class OptimizationInstanceTypes(Sourced):
    values: list[str]


class EagleArchitectures(Sourced):
    eagle3: list[str]
    eagle2: list[str]

    def technique(self, architecture: str) -> str | None:
        """'eagle3' or 'eagle2' (vLLM's method names: eagle3, eagle) for an HF architecture, else None."""
        if architecture in self.eagle3:
            return "eagle3"
        if architecture in self.eagle2:
            return "eagle2"
        return None


class OptimizationOutputLayout(Sourced):
    draft_prefix: str
    results_prefix: str


class OptimizationFacts(Fact):
    deployment_instance_types: OptimizationInstanceTypes
    eagle_architectures: EagleArchitectures
    output_layout: OptimizationOutputLayout
