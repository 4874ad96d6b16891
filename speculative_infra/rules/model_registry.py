"""Is the target's architecture one the release's model registry resolves itself? One that is not loads
through vLLM's Transformers backend, which works only where transformers has a compatible class."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation

TRANSFORMERS_BACKEND = "TransformersForCausalLM"
TRANSFORMERS_MOE_BACKEND = "TransformersMoEForCausalLM"  # registered from 0.11.1


def loaded_class(d: ResolvedDeployment, release: str) -> tuple[str, bool]:
    """The registry class vLLM loads the target as (ModelRegistry.resolve_model_cls), and whether that is the
    Transformers backend standing in for an architecture the release does not register (model_impl auto).
    Text models only: a multimodal config picks the backend's MultiModal classes."""
    assert d.model is not None
    interfaces = load_vllm_model_interfaces().releases[release]
    # ModelConfig._get_transformers_backend_cls: the MoE class where the model has more than one expert.
    moe = (d.model.num_experts or 0) > 1 and TRANSFORMERS_MOE_BACKEND in interfaces.registered_architectures
    backend = TRANSFORMERS_MOE_BACKEND if moe else TRANSFORMERS_BACKEND
    impl = d.engine.get("model_impl", "auto")
    if impl == "transformers":
        return backend, False
    if impl == "auto" and d.model.architecture not in interfaces.registered_architectures:
        return backend, True
    return d.model.architecture, False


def _unregistered(d: ResolvedDeployment) -> tuple[str, str] | None:
    """(release, wheel) where the target's architecture is not in the release's registry."""
    if d.vllm_release is None or d.model is None or not d.model.architecture:
        return None
    release = d.vllm_release.vllm_version
    interfaces = load_vllm_model_interfaces().releases.get(release)
    if interfaces is None or d.model.architecture in interfaces.registered_architectures:
        return None
    return release, interfaces.wheel


def _registering_release(d: ResolvedDeployment, release: str) -> str | None:
    """The first catalog container release after `release` whose registry has the architecture."""
    framework = d.container.framework if d.container is not None else "vllm"
    known = load_vllm_model_interfaces().releases
    assert d.model is not None
    return next(
        (
            v
            for v in load_catalog().container_vllm_versions(framework)
            if version_tuple(v) > version_tuple(release)
            and v in known
            and d.model.architecture in known[v].registered_architectures
        ),
        None,
    )


@rule(
    code="SI340",
    name="architecture-in-registry",
    severity=Severity.WARNING,
    title="vLLM's registry has the target's architecture (else the Transformers backend stands in)",
    rationale="ModelRegistry.resolve_model_cls looks config.json's architecture up in the release's "
    "registry (read from each wheel); with model_impl auto an architecture not there loads through the "
    "Transformers backend, which needs the container's transformers library to have the class and that class "
    "to be backend-compatible, or vLLM stops with 'Model architectures [...] are not supported for now'.",
)
def architecture_in_registry(d: ResolvedDeployment) -> Iterator[Violation]:
    found = _unregistered(d)
    if found is None or d.engine.get("model_impl", "auto") != "auto":
        return
    release, wheel = found
    assert d.model is not None
    backend, _ = loaded_class(d, release)
    later = _registering_release(d, release)
    yield Violation(
        message=f"vLLM {release} does not register {d.model.architecture} ({d.model_id}'s architecture; read "
        f"from {wheel}): it loads the model through its Transformers backend ({backend}) only if the "
        "container's transformers library has that class and it is backend-compatible; otherwise vLLM stops "
        f"with 'Model architectures ['{d.model.architecture}'] are not supported for now'",
        fix=(f"use a container with vLLM {later} or newer, which registers it, or " if later else "")
        + "check that the model runs with vLLM's Transformers backend (engine.model_impl: transformers) "
        "before deploying",
        field="model.id",
    )


@rule(
    code="SI341",
    name="architecture-registered-for-vllm-impl",
    severity=Severity.ERROR,
    title="engine.model_impl: vllm needs an architecture vLLM's registry has",
    rationale="With model_impl vllm, ModelRegistry.resolve_model_cls does not fall back to the Transformers "
    "backend: an architecture the release's registry (read from each wheel) lacks stops vLLM with 'Model "
    "architectures [...] are not supported for now'.",
)
def architecture_registered_for_vllm_impl(d: ResolvedDeployment) -> Iterator[Violation]:
    found = _unregistered(d)
    if found is None or d.engine.get("model_impl") != "vllm":
        return
    release, wheel = found
    assert d.model is not None
    later = _registering_release(d, release)
    yield Violation(
        message=f"vLLM {release} does not register {d.model.architecture} ({d.model_id}'s architecture; read "
        f"from {wheel}), and engine.model_impl: vllm keeps it from the Transformers backend: vLLM stops with "
        f"'Model architectures ['{d.model.architecture}'] are not supported for now'",
        fix=(f"use a container with vLLM {later} or newer, which registers it, or " if later else "")
        + "set engine.model_impl to auto (the Transformers backend stands in where transformers has the class)",
        field="engine.model_impl",
    )
