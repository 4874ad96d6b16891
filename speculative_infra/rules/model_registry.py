"""Is the target's architecture one the release's model registry resolves itself? One that is not loads
through vLLM's Transformers backend, which works only where transformers has a compatible class."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_model_interfaces import ReleaseModelInterfaces, load_vllm_model_interfaces
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def loaded_class(d: ResolvedDeployment, release: str) -> tuple[str, bool]:
    """The registry class vLLM loads the target as (ModelRegistry.resolve_model_cls), and whether that is the
    Transformers backend standing in for an architecture the release does not register (model_impl auto).
    Named for a text model: a multimodal config picks the backend's MultiModal classes, which implement the
    same interfaces as these in every release read."""
    assert d.model is not None
    interfaces = load_vllm_model_interfaces().releases[release]
    classes = load_catalog().vllm.transformers_backend
    least = 1 if version_tuple(release) >= version_tuple(classes.moe_any_expert_since) else 2
    experts = d.model.num_experts or 0
    moe = experts >= least and classes.moe_causal_lm in interfaces.registered_architectures
    backend = classes.moe_causal_lm if moe else classes.causal_lm
    impl = d.engine.get("model_impl", "auto")
    if impl == "transformers":
        return backend, False
    if impl == "auto" and d.model.architecture not in interfaces.registered_architectures:
        return backend, True
    return d.model.architecture, False


def later_releases_allowing(
    d: ResolvedDeployment, release: str, allows: Callable[[ReleaseModelInterfaces, str], bool]
) -> list[str]:
    """Catalog container releases after `release` whose interfaces allow the class the target loads as there."""
    known = load_vllm_model_interfaces().releases
    framework = d.container.framework if d.container is not None else "vllm"
    return [
        v
        for v in load_catalog().container_vllm_versions(framework)
        if version_tuple(v) > version_tuple(release)
        and v in known
        and allows(known[v], loaded_class(d, v)[0])
    ]


def _unregistered(d: ResolvedDeployment) -> tuple[str, str] | None:
    """(release, wheel) where the target's architecture is not in the release's registry."""
    if d.vllm_release is None or d.model is None or not d.model.architecture:
        return None
    release = d.vllm_release.vllm_version
    interfaces = load_vllm_model_interfaces().releases.get(release)
    if interfaces is None or d.model.architecture in interfaces.registered_architectures:
        return None
    return release, interfaces.wheel


def _registering_releases(d: ResolvedDeployment, release: str) -> str | None:
    """The catalog container releases after `release` whose registry has the architecture, as runs ("vLLM
    0.14.0 to 0.24.0", "vLLM 0.27.1 or newer"): registries also drop architectures."""
    framework = d.container.framework if d.container is not None else "vllm"
    known = load_vllm_model_interfaces().releases
    assert d.model is not None
    later = [
        v
        for v in load_catalog().container_vllm_versions(framework)
        if version_tuple(v) > version_tuple(release) and v in known
    ]
    runs: list[list[str]] = []
    for i, v in enumerate(later):
        if d.model.architecture not in known[v].registered_architectures:
            continue
        if runs and later.index(runs[-1][-1]) == i - 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    if not runs:
        return None
    named = [
        f"{run[0]} or newer"
        if run[-1] == later[-1]
        else run[0]
        if len(run) == 1
        else f"{run[0]} to {run[-1]}"
        for run in runs
    ]
    return "vLLM " + ", ".join(named)


def _registering_fix(d: ResolvedDeployment, release: str) -> str:
    releases = _registering_releases(d, release)
    return f"use a container with {releases}, which registers it, or " if releases else ""


UNSUPPORTED = (
    "vLLM stops when it loads the model ('Model architectures [...] are not supported for now', or that "
    "the architecture was supported until an older release)"
)


def _unknown_impl(d: ResolvedDeployment, release: str) -> bool:
    """A model_impl string this release takes without checking and knows no branch for."""
    facts = load_catalog().vllm.model_impl
    impl = d.engine.get("model_impl")
    return isinstance(impl, str) and impl not in facts.values and facts.unchecked(release)


@rule(
    code="SI342",
    name="model-impl-known",
    severity=Severity.WARNING,
    title="engine.model_impl is one of the values vLLM knows",
    rationale="From vLLM 0.11.0 ModelConfig takes any string as model_impl (no choices on the command line) "
    "and its registry compares it only with auto, transformers and terratorch: a misspelt value starts, "
    "loading as with model_impl vllm, without the Transformers backend it may have asked for.",
)
def model_impl_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.vllm_release is None or not _unknown_impl(d, d.vllm_release.vllm_version):
        return
    facts = load_catalog().vllm.model_impl
    impl = str(d.engine["model_impl"])
    shown = repr(impl) if len(impl) <= 40 else repr(impl[:40]) + "..."
    yield Violation(
        message=f"engine.model_impl is {shown}, not one of {', '.join(facts.values)}; vLLM "
        f"{d.vllm_release.vllm_version} takes it without checking and loads the model as with model_impl vllm "
        "(its own implementation, no Transformers backend)",
        fix=f"set engine.model_impl to one of {', '.join(facts.values)} (lower case), or leave it out (auto)",
        field="engine.model_impl",
    )


@rule(
    code="SI340",
    name="architecture-in-registry",
    severity=Severity.WARNING,
    title="vLLM's registry has the target's architecture (else the Transformers backend stands in)",
    rationale="ModelRegistry.resolve_model_cls looks config.json's architecture up in the release's "
    "registry (read from each wheel); with model_impl auto an architecture not there loads through the "
    "Transformers backend, which needs the container's transformers library to have the class and that class "
    "to be backend-compatible, or vLLM stops when it loads the model.",
)
def architecture_in_registry(d: ResolvedDeployment) -> Iterator[Violation]:
    found = _unregistered(d)
    if found is None or d.engine.get("model_impl", "auto") != "auto":
        return
    release, wheel = found
    assert d.model is not None
    backend, _ = loaded_class(d, release)
    yield Violation(
        message=f"vLLM {release} does not register {d.model.architecture} ({d.model_id}'s architecture; read "
        f"from {wheel}): it loads the model through its Transformers backend ({backend} for a text model) "
        "only if the container's transformers library has that class and it is backend-compatible; "
        f"otherwise {UNSUPPORTED}",
        fix=_registering_fix(d, release)
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
    impl = d.engine.get("model_impl")
    if found is None or not (impl == "vllm" or _unknown_impl(d, found[0])):
        return
    release, wheel = found
    assert d.model is not None
    shown = "vllm" if impl == "vllm" else f"{impl!r} (which loads as vllm does)"
    yield Violation(
        message=f"vLLM {release} does not register {d.model.architecture} ({d.model_id}'s architecture; read "
        f"from {wheel}), and engine.model_impl: {shown} keeps it from the Transformers backend: {UNSUPPORTED}",
        fix=_registering_fix(d, release)
        + "set engine.model_impl to auto (the Transformers backend stands in where transformers has the class)",
        field="engine.model_impl",
    )
