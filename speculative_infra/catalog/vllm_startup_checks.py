"""Schema of the vLLM start-up checks in catalog/data/vllm.yaml: what each release's config objects refuse
when the engine starts (scheduler limits, draft slots, speculative.max_model_len, multimodal drafts) and the
default batch `vllm serve` picks. The comparisons are the rules' (rules/scheduler_limits.py and others)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from speculative_infra.catalog.fact_base import Fact, Sourced, version_tuple


class SchedulerCheck(Fact):
    """One start-up check of vLLM's SchedulerConfig (the comparison itself: rules/scheduler_limits.py)."""

    id: str
    since: str
    until: str | None = None  # inclusive; None: still in the newest release read
    message: str  # vLLM's text, with {field} placeholders

    def applies_to(self, release: str) -> bool:
        v = version_tuple(release)
        return version_tuple(self.since) <= v and (self.until is None or v <= version_tuple(self.until))


class SchedulerChecks(Sourced):
    chunked_prefill_forced_on_until: str
    auto_long_prefill_threshold_until: str
    checks: list[SchedulerCheck]


class MultimodalDraftRefusal(Fact):
    applies_to: Literal["draft_model", "parallel_drafting"]
    since: str
    until: str  # inclusive

    def applies_to_release(self, release: str) -> bool:
        return version_tuple(self.since) <= version_tuple(release) <= version_tuple(self.until)


class MultimodalDraftRefusals(Sourced):
    refusals: list[MultimodalDraftRefusal]


class BatchedTokensTier(Fact):
    since: str
    until: str | None = None  # inclusive; None: still in the newest release read
    min_memory_gib: float
    not_in_gpu_name: str | None = None
    not_compute_capability: str | None = None  # vLLM 0.33.0 keeps GB10 (12.1) off the large-GPU tier
    value: int = Field(ge=1)

    def matches(self, release: str, gpu_name: str, gpu_memory_mib: float, compute_capability: str) -> bool:
        v = version_tuple(release)
        return (
            version_tuple(self.since) <= v
            and (self.until is None or v <= version_tuple(self.until))
            and gpu_memory_mib / 1024 >= self.min_memory_gib
            and (self.not_in_gpu_name is None or self.not_in_gpu_name not in gpu_name.lower())
            and compute_capability != self.not_compute_capability
        )


class BatchedTokensDefault(Sourced):
    """What `vllm serve` sets an unset max_num_batched_tokens to: the first tier the GPU matches (else
    `otherwise`), doubled under performance_mode throughput, then at least max_model_len without chunked
    prefill and at most max_num_seqs x max_model_len."""

    otherwise: int = Field(ge=1)
    tiers: list[BatchedTokensTier]
    model_len_bounds_since: str  # the max_model_len floor and the max_num_seqs x max_model_len cap
    throughput_doubles_since: str  # the first release with performance_mode (its throughput doubles)

    def value(
        self,
        release: str,
        *,
        gpu_name: str,
        gpu_memory_mib: float,
        compute_capability: str,
        chunked: bool,
        max_model_len: int,
        max_num_seqs: int,
        performance_mode: str | None = None,
    ) -> int:
        tier = next(
            (t for t in self.tiers if t.matches(release, gpu_name, gpu_memory_mib, compute_capability)), None
        )
        tokens = self.otherwise if tier is None else tier.value
        v = version_tuple(release)
        if performance_mode == "throughput" and v >= version_tuple(self.throughput_doubles_since):
            tokens *= 2
        if v < version_tuple(self.model_len_bounds_since):
            return tokens
        if not chunked:
            tokens = max(max_model_len, tokens)
        return min(max_num_seqs * max_model_len, tokens)


class DraftingSlotChecks(Sourced):
    checks: list[SchedulerCheck]
    # VllmConfig.num_lookahead_tokens, from the release that has it: num_speculative_tokens plus the method's
    # extra query rows for the methods listed, 0 for any other method.
    lookahead_since: str
    lookahead_extra_tokens: dict[str, int]

    def lookahead(self, release: str, method: str | None, num_speculative_tokens: int) -> int | None:
        """num_lookahead_tokens of a release and method; None before the release that has it."""
        if version_tuple(release) < version_tuple(self.lookahead_since):
            return None
        extra = self.lookahead_extra_tokens.get(method or "")
        return 0 if extra is None else num_speculative_tokens + extra


class SpeculativeMaxModelLenChecks(Sourced):
    """speculative.max_model_len may not exceed the draft's or the target's max_model_len."""

    since: str
    methods_without_draft: frozenset[str]  # methods whose SpeculativeConfig skips the check
    draft_message: str  # vLLM's text, with {value} and {draft}
    target_message: str  # vLLM's text, with {value} and {target}
    # From this release the draft's ModelConfig is given speculative.max_model_len and verifies it against
    # the draft's own config (max_model_len_derivation's refusal); before, the draft derives its default
    # max_model_len and draft_message compares speculative.max_model_len with that.
    draft_given_max_model_len_since: str
    draft_is_target_since: dict[str, str]  # method -> first release whose draft is the target's checkpoint
    draft_source: str  # where the draft's ModelConfig and its arguments were read

    def draft_is_target(self, method: str | None, release: str) -> bool:
        """Whether this method's draft (none named) is the target's own checkpoint in this release."""
        name = "mtp" if isinstance(method, str) and method.endswith("_mtp") else method
        since = self.draft_is_target_since.get(name or "")
        return since is not None and version_tuple(release) >= version_tuple(since)

    def draft_verifies_given_length(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.draft_given_max_model_len_since)


class DraftRopeCache(Sourced):
    """A draft that shares the target's positions (EAGLE, and DFlash / DSpark) has a rotary cache of as many
    positions as its own config's max_position_embeddings (for the RoPE types listed; linear and dynamic
    scaling multiply it), while the proposer feeds it the target's positions, up to the target's
    max_model_len. Before the method's release in `raised_since` a draft config shorter than that reads
    past the cache once a sequence gets there; from it SpeculativeConfig raises the draft's
    max_position_embeddings to the target's max_model_len."""

    raised_since: dict[str, str]  # method -> first release whose SpeculativeConfig raises it
    rope_types_sized_by_max_position: frozenset[str]
    failure: str  # what happens past the cache, as the issue records it
    failure_source: str

    def reads_past_cache(
        self, release: str, method: str | None, draft_positions: int, rope_types: set[str], target_len: int
    ) -> bool:
        """Whether this release's draft gathers past its rotary cache for a target of `target_len` tokens."""
        since = self.raised_since.get(method or "")
        if since is None or version_tuple(release) >= version_tuple(since):
            return False
        return rope_types <= self.rope_types_sized_by_max_position and draft_positions < target_len


class MaxModelLenLoweredToDraft(Sourced):
    """From `since`, VllmConfig lowers the engine's max_model_len to the draft's where the draft's is shorter,
    the V2 model runner serves it (it cannot skip speculation for longer sequences, as V1 does) and the
    draft does not share the target's positions (those drafts have their rotary cache raised instead:
    DraftRopeCache)."""

    since: str
    independent_method: str  # its draft never shares the target's positions
    rope_types_sharing_positions: frozenset[str]  # a draft whose every RoPE type is one of these shares them
    runner_env: str  # chooses the runner where set: 0 -> V1, any other integer -> V2
    # Without runner_env, V1 serves these: parallel drafting with a method not listed, a heterogeneous
    # vocabulary, and micro-batching (engine.enable_dbo, or engine.ubatch_size above 1).
    parallel_drafting_v2_methods: frozenset[str]
    warning: str  # vLLM's text, with {draft} and {target}

    def applies_to(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.since)

    def shares_target_positions(self, method: str | None, rope_types: set[str]) -> bool:
        """SpeculativeConfig.draft_shares_target_positions (a draft without RoPE parameters reads as default)."""
        return method != self.independent_method and rope_types <= self.rope_types_sharing_positions

    def v2_runner(
        self,
        runner_env: str | None,
        method: str | None,
        *,
        parallel_drafting: bool,
        heterogeneous_vocab: bool,
        ubatching: bool,
    ) -> bool | None:
        """Whether VllmConfig.use_v2_model_runner picks V2; None where runner_env is not an integer (vLLM's
        int() raises when the engine starts)."""
        if runner_env is not None:
            try:
                return bool(int(runner_env))
            except ValueError:
                return None
        if parallel_drafting and method not in self.parallel_drafting_v2_methods:
            return False
        return not (heterogeneous_vocab or ubatching)

    def lowered_to(
        self,
        release: str,
        method: str | None,
        rope_types: set[str],
        draft_len: int,
        target_len: int,
        v2: bool,
    ) -> int | None:
        """The max_model_len VllmConfig leaves where it lowers the target's; None where it keeps it."""
        if not self.applies_to(release) or not v2 or self.shares_target_positions(method, rope_types):
            return None
        return draft_len if draft_len < target_len else None


class ParallelWorldChecks(Sourced):
    """What ParallelConfig refuses when the engine's parallel world outgrows the node's GPUs. The world is
    pipeline x tensor parallel ranks, times prefill-context parallel ranks from `prefill_context_since`;
    data-parallel rank r takes the GPUs r x world to (r + 1) x world - 1, so dp x world GPUs in all."""

    prefill_context_since: str
    refusals: list[SchedulerCheck]  # {world} and {gpus} in the message
    # Up to this release a world larger than the GPUs goes to Ray, whose placement group waits
    # ray_placement_wait_s for GPUs the node does not have and then fails (or vLLM stops: no Ray).
    ray_fallback_until: str
    ray_placement_wait_s: int = Field(ge=1)
    data_parallel_devices: str  # vLLM's function that hands a data-parallel rank its GPUs

    def counts_prefill_context(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.prefill_context_since)

    def refusal(self, release: str) -> SchedulerCheck | None:
        return next((r for r in self.refusals if r.applies_to(release)), None)


class SparseCheckpointChecks(Sourced):
    """What vLLM makes of a compressed-tensors checkpoint's sparsity_config (the comparisons:
    rules/sparsity.py): the GPU floor of its 2:4 sparse kernel's scheme, the release whose scheme refuses
    instead, and the release from which CompressedTensorsConfig.from_config refuses any sparsity_config that
    names target layers."""

    sparse_24_min_capability: str
    # The one compute capability the 2:4 kernel is compiled for (sm_90a): vLLM sends 9.0 and up to it, and
    # arch-specific code runs on that architecture alone.
    sparse_24_kernel_compute_capability: str
    sparse_24_refused_since: str
    sparse_24_refusal: str  # vLLM's text
    sparsity_config_refused_since: str
    sparsity_config_refusal: str  # vLLM's text
    # int4 weights in the marlin-24 layout (scheme w4a16_sparse24): vLLM's W4A16Sparse24 and its floor, until
    # the release whose _get_scheme_from_parts no longer builds them.
    marlin_24_min_capability: str
    marlin_24_refused_since: str
    marlin_24_refusal: str  # the start of vLLM's text (later releases append the layer's arguments)

    def marlin_24_refusal_in(self, release: str) -> str | None:
        if version_tuple(release) >= version_tuple(self.marlin_24_refused_since):
            return self.marlin_24_refusal
        return None

    def runs_sparse_24_scheme(self, release: str, sparsity: str | None) -> bool:
        """Whether the layers run CompressedTensors24 (instead of the config group's own scheme)."""
        return sparsity == "2:4" and version_tuple(release) < version_tuple(self.sparse_24_refused_since)

    def refused_when(self, release: str, sparsity: str) -> Literal["config", "layers"] | None:
        """When this release refuses the checkpoint on any GPU: while it reads the checkpoint's config
        (CompressedTensorsConfig.from_config), or while it builds the layers (the 2:4 scheme raises)."""
        v = version_tuple(release)
        if v >= version_tuple(self.sparsity_config_refused_since):
            return "config"
        if sparsity == "2:4" and v >= version_tuple(self.sparse_24_refused_since):
            return "layers"
        return None

    def refusal(self, release: str, sparsity: str) -> str | None:
        """vLLM's words refusing this checkpoint in this release, or None where it loads."""
        when = self.refused_when(release, sparsity)
        if when is None:
            return None
        return self.sparsity_config_refusal if when == "config" else self.sparse_24_refusal


class RopeTypesWithoutFactor(Fact):
    """The RoPE types whose `factor` a range of releases does not multiply the derived length by."""

    since: str
    until: str | None = None  # inclusive; None: still in the newest release read
    rope_types: frozenset[str]


class MaxModelLenDerivation(Sourced):
    """How ModelConfig derives the longest max_model_len it accepts from the model's config
    (`_get_and_verify_max_len`; the arithmetic: context_limit.py): the smallest of the config's length keys
    (its model_max_length, where set, instead), capped by the tokenizer's model_max_length, times the RoPE
    scaling factor except for the types and model types listed."""

    length_keys: tuple[str, ...]
    length_without_keys: int = Field(ge=1)  # vLLM assumes this many tokens when no key is in the config
    factor_skipped_for_model_types_containing: str  # Gemma 3's length is already scaled
    rope_types_without_factor: list[RopeTypesWithoutFactor]
    # Up to this release a YaRN config's length is its original_max_position_embeddings x factor.
    yarn_from_original_until: str
    # From this release an unset max_model_len on a longrope model is its original_max_position_embeddings.
    longrope_default_original_since: str
    # From this release a null factor counts as 1.0; before, the multiplication raises TypeError.
    null_factor_as_one_since: str
    # From this release RoPE parameters may be nested per layer type; before, one flat rope_scaling dict.
    nested_rope_since: str
    refusal: str  # vLLM's text, with {value}, {key}, {limit} and {model_max_length}
    # The environment variable that turns the refusal into a warning, the values it is read as true for
    # (after strip().lower()), the warning vLLM logs, and where that was read.
    allow_long_env: str
    allow_long_true_values: frozenset[str]
    allow_long_warning: str
    allow_long_source: str

    def allows_long(self, environment: Mapping[str, str]) -> bool:
        value = environment.get(self.allow_long_env)
        return isinstance(value, str) and value.strip().lower() in self.allow_long_true_values

    def rope_types_unscaled(self, release: str) -> frozenset[str]:
        v = version_tuple(release)
        for entry in self.rope_types_without_factor:
            if version_tuple(entry.since) <= v and (entry.until is None or v <= version_tuple(entry.until)):
                return entry.rope_types
        raise LookupError(f"no RoPE type list for vLLM {release}")

    def yarn_from_original(self, release: str) -> bool:
        return version_tuple(release) <= version_tuple(self.yarn_from_original_until)

    def longrope_defaults_to_original(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.longrope_default_original_since)

    def null_factor_as_one(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.null_factor_as_one_since)

    def reads_nested_rope(self, release: str) -> bool:
        return version_tuple(release) >= version_tuple(self.nested_rope_since)
