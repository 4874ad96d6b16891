"""Spec + catalog -> a resolved deployment: every fact the rules need, defaults filled and explained.

Resolution never fails on incompatible input: an unknown instance type or container just leaves the
corresponding field empty, and the rules report it. That way every problem is found in one pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from speculative_infra.catalog import Catalog, load_catalog
from speculative_infra.catalog.models import ContainerImage, Draft, InstanceType, ModelFacts, version_tuple
from speculative_infra.catalog.vllm_release import VllmRelease, available_vllm_versions, load_vllm_release
from speculative_infra.context_limit import deployment_context_limit
from speculative_infra.cost import CostEstimate, estimate_cost
from speculative_infra.host_fit import choose_batch_host, choose_host
from speculative_infra.parallel_sizes import (
    default_tensor_parallel,
    engine_parallel_size,
    local_data_parallel_size,
    memory_stages,
    other_parallel_sizes,
)
from speculative_infra.sizing import MemoryPlan, memory_plan, serve_defaults
from speculative_infra.spec import DeploymentSpec, EngineArgs
from speculative_infra.spec.models import AUTO_HOST, DEFAULT_HOST

# Concurrent sequences per engine when the spec does not say: vLLM's default on GPUs under 70 GiB, kept on
# larger ones so the default memory plan and scaling target stay modest (the summary says so).
LIBRARY_MAX_NUM_SEQS = 256


class HostImage(BaseModel):
    """The host image the endpoint runs on and the NVIDIA driver it brings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inference_ami_version: str | None  # None: SageMaker's default host image for the family
    driver: int | None  # None: not documented
    driver_build: str | None = None  # e.g. 535.54.03, where AWS documents the build
    cuda: str | None
    source: str
    reason: str  # why this host: what `check` says it assumed


class ResolvedDeployment(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    spec: DeploymentSpec
    region: str | None
    instance: InstanceType | None
    container: ContainerImage | None
    vllm_release: VllmRelease | None
    model_id: str
    model: ModelFacts | None
    model_origin: Literal["catalog", "spec"] | None
    draft: Draft | None
    draft_target: ModelFacts | None = None  # the model the draft was built for, where known
    engine: dict[str, Any]
    speculative: dict[str, Any] | None
    host: HostImage | None
    defaults: list[str]

    @property
    def endpoint_kind(self) -> Literal["real_time", "async", "batch", "inference_component"]:
        """How SageMaker hosts it: the vLLM DLC as a single-model real-time endpoint (or an asynchronous
        one, scalable to zero on its backlog, or a batch transform job), LMI as inference components
        (copies placed on the endpoint's instances, scalable to zero)."""
        framework = self.container.framework if self.container is not None else self.spec.container.framework
        if framework == "lmi":
            return "inference_component"
        return "real_time" if self.spec.serving == "real_time" else self.spec.serving

    @property
    def tensor_parallel_size(self) -> int:
        return int(self.engine.get("tensor_parallel_size", 1))

    @property
    def pipeline_parallel_size(self) -> int:
        return engine_parallel_size(self.engine, "pipeline_parallel_size")

    @property
    def data_parallel_size(self) -> int:
        return engine_parallel_size(self.engine, "data_parallel_size")

    @property
    def world_size(self) -> int:
        """GPUs one engine spans: tensor x pipeline x prefill-context parallel ranks, as vLLM's ParallelConfig
        counts its world (the prefill-context factor exists from the release that has the flag)."""
        return (
            self.tensor_parallel_size
            * self.pipeline_parallel_size
            * engine_parallel_size(self.engine, "prefill_context_parallel_size")
        )

    @property
    def local_data_parallel_size(self) -> int:
        """Data-parallel ranks on this node: data_parallel_size_local where set, else data_parallel_size
        (vLLM's default for one node)."""
        return local_data_parallel_size(self.engine)

    @property
    def gpus_used(self) -> int:
        """GPUs the deployment occupies: each data-parallel rank runs its own engine on world_size GPUs."""
        return self.world_size * self.local_data_parallel_size

    def engine_as_run(self, max_model_len: int | None = None) -> dict[str, Any]:
        """The engine settings (max_model_len replaced where given) with max_num_batched_tokens as vllm serve
        sizes it where the spec leaves it unset: what vLLM's profile run and scheduler use."""
        engine = self.engine if max_model_len is None else {**self.engine, "max_model_len": max_model_len}
        tokens = vllm_serve_batched_tokens(self.instance, self.container, engine)
        return engine if tokens is None else {**engine, "max_num_batched_tokens": tokens}

    def memory_plan(self, max_model_len: int | None = None) -> MemoryPlan | None:
        """One GPU's memory under vLLM (sizing.memory_plan), at the engine's max_model_len or the one given;
        None while the instance or model is unknown."""
        if self.instance is None or self.model is None:
            return None
        return memory_plan(
            model=self.model,
            draft=self.draft,
            speculative=self.speculative,
            engine=self.engine_as_run(max_model_len),
            gpu_name=self.instance.gpu_name,
            gpu_memory_mib=self.instance.gpu.memory_mib,
            tensor_parallel_size=min(self.tensor_parallel_size, self.instance.gpu_count),
            pipeline_parallel_size=memory_stages(self.engine, self.model, self.container),
            draft_shares_target_embedding=self.pipeline_parallel_size == 1,
            vllm_version=self.container.vllm_version if self.container is not None else None,
            overheads=load_catalog().vllm.memory_overheads,
        )

    def longest_fitting_max_model_len(self, limit: int) -> int:
        """The largest max_model_len up to `limit` whose KV cache holds one sequence of it (SI300's test); 0
        where not even one token fits or the instance or model is unknown."""
        plan = self.memory_plan()
        if plan is None:
            return 0
        if vllm_serve_batched_tokens(self.instance, self.container, self.engine) is None:
            # A set batch (or not vllm serve): the plan does not move with the length.
            return max(0, min(limit, plan.max_tokens()))

        def fits(length: int) -> int:
            at = self.memory_plan(length)
            return 0 if at is None else at.max_tokens()

        return longest_fitting_length(fits, limit)

    def cost(self) -> CostEstimate:
        """On-demand cost at the scaling bounds (instances; an LMI spec's instance count)."""
        spec = self.spec
        low = high = spec.instance_count
        if spec.scaling is not None and spec.container.framework == "vllm":
            low, high = spec.scaling.min_capacity, spec.scaling.max_capacity
        return estimate_cost(spec.instance_type, self.region, low, high)

    def _memory_summary(self) -> dict[str, Any] | None:
        plan = self.memory_plan()
        if plan is None or self.model is None:
            return None
        context = model_context_tokens(self.model, self.engine, self.container)
        full = self.memory_plan(context) or plan
        return {
            "per_gpu_budget_gib": round(plan.budget_mib / 1024, 2),
            "weights_gib": round(plan.weights_mib / 1024, 2),
            "draft_gib": round(plan.draft_mib / 1024, 2),
            "draft_estimated": plan.draft_estimated,
            "vllm_overheads_gib": round(plan.overhead_mib / 1024, 2),
            "kv_cache_gib": round(plan.kv_available_mib / 1024, 2),
            # What the KV cache could hold, which may exceed the model's context: not a usable length.
            "longest_sequence_that_fits": plan.max_tokens(),
            "model_context_tokens": context,
            # At max_model_len = the context: vllm serve's default batch (the profile run) can grow with it.
            "full_context_fits": full.fits(context),
            "full_context_sequences_at_once": full.sequences_at_once(context),
        }

    def summary(self) -> dict[str, Any]:
        """What `check` prints as the resolved deployment (JSON-safe)."""
        inst = self.instance
        return {
            "region": self.region,
            "instance_type": self.spec.instance_type,
            "instance_count": self.spec.instance_count,
            "gpu": None
            if inst is None
            else {
                "model": inst.gpu_name,
                "count": inst.gpu_count,
                "compute_capability": inst.gpu.compute_capability,
                "memory_mib_per_gpu": inst.gpu.memory_mib,
            },
            "container": None
            if self.container is None
            else {
                "framework": self.container.framework,
                "version": self.container.version,
                "image": f"{self.container.repository}:{self.container.tag}",
                "vllm_version": self.container.vllm_version,
                "cuda": self.container.cuda,
            },
            "host": None if self.host is None else self.host.model_dump(),
            "model": {
                "id": self.model_id,
                "origin": self.model_origin,
                **({} if self.model is None else self.model.model_dump(exclude={"source", "confidence"})),
            },
            "engine": self.engine,
            "speculative": self.speculative,
            "memory": self._memory_summary(),
            "cost": self.cost().as_dict(),
            "defaults": self.defaults,
        }


def resolve(spec: DeploymentSpec, catalog: Catalog | None = None) -> ResolvedDeployment:
    cat = catalog or load_catalog()
    defaults: list[str] = []
    instance = cat.instance_type(spec.instance_type)
    container = _resolve_container(spec, cat, defaults)
    vllm_release = _resolve_vllm_release(container, defaults)
    model, origin = _resolve_model(spec, cat)
    speculative = _resolve_speculative(spec, cat, defaults)
    draft = cat.draft(str(speculative["model"])) if speculative and speculative.get("model") else None
    engine = _resolve_engine(
        spec,
        instance,
        model,
        draft,
        speculative,
        container,
        cat,
        defaults,
    )
    host = _resolve_host(spec, cat, instance, container, defaults)
    return ResolvedDeployment(
        spec=spec,
        region=spec.region,
        instance=instance,
        container=container,
        vllm_release=vllm_release,
        model_id=spec.model.id,
        model=model,
        model_origin=origin,
        draft=draft,
        draft_target=cat.model(draft.target) if draft is not None and draft.target else None,
        engine=engine,
        speculative=speculative,
        host=host,
        defaults=defaults,
    )


def resolve_alternative(
    d: ResolvedDeployment, instance_type: str, tensor_parallel_size: int
) -> ResolvedDeployment:
    """`d` on another instance type and tensor-parallel size: its spec with those two changed, resolved
    against the model and draft facts `d` was resolved with (which may come from `facts fetch`)."""
    cat = load_catalog()
    models, drafts = dict(cat.models), dict(cat.drafts)
    if d.model is not None:
        models[d.model_id] = d.model
    if d.draft is not None and d.speculative and d.speculative.get("model"):
        drafts[str(d.speculative["model"])] = d.draft
    engine = EngineArgs.model_validate(
        {**d.spec.engine.given(), "tensor_parallel_size": tensor_parallel_size}
    )
    spec = d.spec.model_copy(update={"instance_type": instance_type, "engine": engine})
    return resolve(spec, cat.model_copy(update={"models": models, "drafts": drafts}))


def _resolve_container(spec: DeploymentSpec, cat: Catalog, defaults: list[str]) -> ContainerImage | None:
    version = spec.container.version
    if version is None:
        versions = cat.vllm_dlc_versions() if spec.container.framework == "vllm" else cat.lmi_versions()
        version = versions[-1]
        defaults.append(
            f"container.version={version} (the newest {spec.container.framework} release in the catalog)"
        )
    return cat.container(spec.container.framework, version)


def _resolve_vllm_release(container: ContainerImage | None, defaults: list[str]) -> VllmRelease | None:
    """The flag data of the container's vLLM; a same-minor earlier release when that build is not on PyPI."""
    if container is None:
        return None
    wanted = container.vllm_version
    available = available_vllm_versions()
    if wanted in available:
        return load_vllm_release(wanted)
    same_minor = [
        v
        for v in available
        if version_tuple(v)[:2] == version_tuple(wanted)[:2] and version_tuple(v) < version_tuple(wanted)
    ]
    if not same_minor:
        return None
    defaults.append(
        f"vLLM flag data of {same_minor[-1]} used for {wanted} (no {wanted} release was published)"
    )
    return load_vllm_release(same_minor[-1])


def _resolve_model(
    spec: DeploymentSpec, cat: Catalog
) -> tuple[ModelFacts | None, Literal["catalog", "spec"] | None]:
    known = cat.model(spec.model.id)
    described = spec.model.described_fields()
    if known is not None:
        if not described:
            return known, "catalog"
        # The user may correct or extend a catalog entry (e.g. a fine-tune with the same shape).
        merged = {**known.model_dump(), **described, "source": f"{known.source}, overridden in the spec"}
        return ModelFacts.model_validate(merged), "spec"
    try:
        return ModelFacts.model_validate(described), "spec"
    except ValueError:
        return None, None  # the model rule says which facts are missing


def _resolve_speculative(spec: DeploymentSpec, cat: Catalog, defaults: list[str]) -> dict[str, Any] | None:
    if spec.speculative is None:
        return None
    config = spec.speculative.given()
    draft = cat.draft(str(config["model"])) if config.get("model") else None
    if "method" not in config and draft is not None:
        defaults.append(
            f"speculative.method={draft.method} (the catalog's method for {draft.target}'s draft)"
        )
        config = {"method": draft.method, **config}
    if draft is not None and draft.parallel_drafting and "parallel_drafting" not in config:
        defaults.append("speculative.parallel_drafting=true (the draft is a P-EAGLE checkpoint)")
        config["parallel_drafting"] = True
    _default_speculative_tokens(config, cat, defaults)
    # vLLM's auto-detection from the draft's name is unreliable: method always goes first and explicit.
    if "method" in config:
        config = {"method": config["method"], **{k: v for k, v in config.items() if k != "method"}}
    return config


def _default_speculative_tokens(config: dict[str, Any], cat: Catalog, defaults: list[str]) -> None:
    """The catalog's num_speculative_tokens for the method, where the spec leaves it out (vllm.yaml
    speculative_token_defaults). A draft method without its draft gets none: SI409 reports the draft."""
    method = config.get("method")
    if "num_speculative_tokens" in config or not isinstance(method, str):
        return
    if method in cat.vllm.speculative.draft_checkpoint_methods and not config.get("model"):
        return
    parallel = config.get("parallel_drafting") is True
    default = cat.vllm.speculative_tokens_default(method, parallel)
    if default is None:
        return
    config["num_speculative_tokens"] = default.value
    name = "P-EAGLE (eagle3 with parallel_drafting)" if parallel and method == "eagle3" else method
    defaults.append(
        f"speculative.num_speculative_tokens={default.value} (the catalog's default for {name}; "
        f"source: {default.source.split(' (')[0]})"
    )


def _resolve_engine(
    spec: DeploymentSpec,
    instance: InstanceType | None,
    model: ModelFacts | None,
    draft: Draft | None,
    speculative: dict[str, Any] | None,
    container: ContainerImage | None,
    cat: Catalog,
    defaults: list[str],
) -> dict[str, Any]:
    engine = spec.engine.given()
    if "tensor_parallel_size" not in engine and instance is not None:
        tp = default_tensor_parallel(instance, model, engine)
        engine["tensor_parallel_size"] = tp
        shared = "" if other_parallel_sizes(engine) == 1 else ", shared with the other parallel sizes set"
        defaults.append(
            f"engine.tensor_parallel_size={tp} (the instance's {instance.gpu_count} GPU(s){shared})"
        )
    if engine.get("dtype") in (None, "auto") and model is not None:
        dtype = model.dtype
        if dtype == "bfloat16" and instance is not None and not instance.gpu.bf16:
            dtype = "float16"
            defaults.append(f"engine.dtype=float16 ({instance.gpu_name} has no bfloat16)")
        else:
            defaults.append(f"engine.dtype={dtype} (the model's dtype)")
        engine["dtype"] = dtype
    if "gpu_memory_utilization" not in engine:
        util = cat.vllm.memory_overheads.default_gpu_memory_utilization
        engine["gpu_memory_utilization"] = util
        defaults.append(f"engine.gpu_memory_utilization={util} (vLLM's default)")
    for flag in ("enable_prefix_caching", "enable_chunked_prefill"):
        if flag not in engine:
            engine[flag] = True
            defaults.append(f"engine.{flag}=true")
    if "max_num_seqs" not in engine:
        engine["max_num_seqs"] = LIBRARY_MAX_NUM_SEQS
        defaults.append(f"engine.max_num_seqs={LIBRARY_MAX_NUM_SEQS} ({_max_num_seqs_reason(instance, cat)})")
    if "max_model_len" not in engine and model is not None:
        engine["max_model_len"] = _default_max_model_len(
            engine, instance, model, draft, speculative, container, cat, defaults
        )
    return engine


def model_context_tokens(model: ModelFacts, engine: dict[str, Any], container: ContainerImage | None) -> int:
    """The max_model_len the container's vLLM runs the model with when none is set (context_limit.py:
    derived from the config's length keys, tokenizer and RoPE); max_position_embeddings where the release
    is unknown or its arithmetic fails."""
    derived = deployment_context_limit(
        model, engine, container.vllm_version if container is not None else None
    )
    if derived is None or derived.failure is not None:
        return model.max_position_embeddings
    return derived.default


def longest_fitting_length(fits: Callable[[int], int], limit: int) -> int:
    """The largest length L up to `limit` with fits(L) >= L, 0 where there is none. fits(L): the tokens one
    sequence's KV cache may hold at max_model_len L; it only shrinks as L grows, since vllm serve's default
    batch (the size of the start-up profile run) can grow with max_model_len."""
    if fits(limit) >= limit:
        return limit
    if fits(1) < 1:
        return 0
    low, high = 1, limit  # fits(low) >= low; fits(high) < high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) >= middle else (low, middle)
    return low


def chunked_prefill_on(release: str, engine: dict[str, Any]) -> bool:
    """Whether the release runs chunked prefill: on unless the spec turns it off, and always up to the
    release that forces it on (catalog: scheduler_checks.chunked_prefill_forced_on_until)."""
    forced_until = load_catalog().vllm.scheduler_checks.chunked_prefill_forced_on_until
    forced = version_tuple(release) <= version_tuple(forced_until)
    return forced or engine.get("enable_chunked_prefill", True) is not False


def vllm_serve_batched_tokens(
    instance: InstanceType | None,
    container: ContainerImage | None,
    engine: dict[str, Any],
    *,
    max_model_len: int | None = None,
    max_num_seqs: int | None = None,
) -> int | None:
    """What `vllm serve` sets an unset max_num_batched_tokens to for these settings (max_model_len and
    max_num_seqs: the engine's where not given); None where it is set, or the engine is not vllm serve (an
    LMI container), or the instance, release or settings are unknown."""
    if engine.get("max_num_batched_tokens") is not None or instance is None or container is None:
        return None
    release = container.vllm_version
    max_model_len = max_model_len or engine.get("max_model_len")
    max_num_seqs = max_num_seqs or engine.get("max_num_seqs")
    if container.framework != "vllm" or release is None:
        return None
    if not isinstance(max_model_len, int) or not isinstance(max_num_seqs, int):
        return None
    mode = engine.get("performance_mode")
    return load_catalog().vllm.api_server_batched_tokens_default.value(
        release,
        gpu_name=instance.gpu_name,
        gpu_memory_mib=instance.gpu.memory_mib,
        compute_capability=instance.gpu.compute_capability,
        chunked=chunked_prefill_on(release, engine),
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        performance_mode=mode if isinstance(mode, str) else None,
    )


def _max_num_seqs_reason(instance: InstanceType | None, cat: Catalog) -> str:
    if instance is None:
        return "the library's default"
    _, vllm_default = serve_defaults(cat.vllm.memory_overheads, instance.gpu_name, instance.gpu.memory_mib)
    if vllm_default == LIBRARY_MAX_NUM_SEQS:
        return f"vLLM's default on {instance.gpu_name}"
    # Written out either way, so the memory plan, the scaling target and the container agree on it.
    return (
        f"the library's default; vLLM's own on {instance.gpu_name} is {vllm_default}: "
        "set engine.max_num_seqs for more concurrent sequences per GPU"
    )


def _default_max_model_len(
    engine: dict[str, Any],
    instance: InstanceType | None,
    model: ModelFacts,
    draft: Draft | None,
    speculative: dict[str, Any] | None,
    container: ContainerImage | None,
    cat: Catalog,
    defaults: list[str],
) -> int:
    """The model's context, capped to what the memory model says fits (the same plan rule SI300 checks)."""
    limit = model_context_tokens(model, engine, container)
    if instance is None:
        defaults.append(f"engine.max_model_len={limit} (the model's context)")
        return limit

    def fits(length: int) -> int:
        """Tokens one sequence's KV cache may hold when max_model_len is `length`: vllm serve's default
        batch (the profile run's size) can grow with it."""
        tokens = vllm_serve_batched_tokens(instance, container, engine, max_model_len=length)
        plan = memory_plan(
            model=model,
            draft=draft,
            speculative=speculative,
            engine=engine if tokens is None else {**engine, "max_num_batched_tokens": tokens},
            gpu_name=instance.gpu_name,
            gpu_memory_mib=instance.gpu.memory_mib,
            tensor_parallel_size=min(int(engine.get("tensor_parallel_size", 1)), instance.gpu_count),
            pipeline_parallel_size=memory_stages(engine, model, container),
            draft_shares_target_embedding=engine_parallel_size(engine, "pipeline_parallel_size") == 1,
            vllm_version=container.vllm_version if container is not None else None,
            overheads=cat.vllm.memory_overheads,
        )
        return plan.max_tokens()

    if vllm_serve_batched_tokens(instance, container, engine, max_model_len=limit) is None:
        held = fits(limit)  # a set batch (or not vllm serve): the plan does not move with the length
        longest = limit if held >= limit else max(0, held)
    else:
        longest = longest_fitting_length(fits, limit)
    if longest in (0, limit):  # nothing fits (SI300 says so) or the whole context does
        defaults.append(f"engine.max_model_len={limit} (the model's context)")
        return limit
    capped = longest // 256 * 256 if longest >= 256 else longest
    defaults.append(
        f"engine.max_model_len={capped} (the model's context {limit} capped to what fits in memory)"
    )
    return capped


def _resolve_host(
    spec: DeploymentSpec,
    cat: Catalog,
    instance: InstanceType | None,
    container: ContainerImage | None,
    defaults: list[str],
) -> HostImage | None:
    requested = spec.inference_ami_version
    batch = spec.serving == "batch"
    if requested == AUTO_HOST:
        choice = (choose_batch_host if batch else choose_host)(cat, instance, container)
        ami, reason = choice.inference_ami_version, choice.reason
        defaults.append(f"inference_ami_version={ami or DEFAULT_HOST} ({reason})")
    elif requested == DEFAULT_HOST:
        ami, reason = None, "SageMaker's default host, as the spec asks (inference_ami_version: default)"
    else:
        ami, reason = requested, "the host image the spec names"
    if ami is not None:
        facts = (cat.batch_amis if batch else cat.amis).get(ami)
        if facts is None:
            return HostImage(
                inference_ami_version=ami, driver=None, cuda=None, source="unknown host image", reason=reason
            )
        return HostImage(
            inference_ami_version=ami,
            driver=facts.driver,
            driver_build=facts.driver_build,
            cuda=facts.cuda,
            source=facts.source,
            reason=reason,
        )
    if instance is None:
        return None
    host = instance.default_host
    if host is None:
        return HostImage(
            inference_ami_version=None,
            driver=None,
            cuda=None,
            source=f"default host of {instance.family}: not documented",
            reason=reason,
        )
    return HostImage(
        inference_ami_version=None,
        driver=host.driver,
        cuda=host.cuda,
        source=f"default host of {instance.family}: {host.source}",
        reason=reason,
    )
