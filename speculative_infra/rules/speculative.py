"""Speculative decoding rules, checked against the chosen vLLM release's own SpeculativeConfig."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_model_interfaces import load_vllm_model_interfaces
from speculative_infra.catalog.vllm_release import available_vllm_versions, load_vllm_release
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.draft_structure import needs_draft_checkpoint, shape_mismatches
from speculative_infra.rules.finding import Severity, Violation
from speculative_infra.rules.model_registry import later_releases_allowing, loaded_class


def _first_release_with_field(field: str) -> str | None:
    for version in available_vllm_versions():
        if field in load_vllm_release(version).speculative.fields:
            return version
    return None


@rule(
    code="SI400",
    name="speculative-method-known",
    severity=Severity.ERROR,
    title="Speculative method is explicit, known to the vLLM release, and run by it",
    rationale="vLLM guesses the method from the draft's name when it is missing, and guesses wrong "
    "(a name containing 'eagle-' is taken as EAGLE-1). Some releases name a method they refuse at start-up: "
    "0.10.0 to 0.14.1 list draft_model but raise NotImplementedError for a plain draft model (each "
    "release's refusals are in its generated data).",
)
def speculative_method_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None:
        return
    methods = d.vllm_release.speculative.methods
    method = d.speculative.get("method")
    if method is None:
        yield Violation(
            message=f"speculative.method is missing and the draft {d.speculative.get('model')!r} is not in the "
            f"catalog; allowed: {', '.join(methods)}",
            fix="set speculative.method explicitly (e.g. eagle3)",
            field="speculative.method",
        )
    elif method not in methods:
        yield Violation(
            message=f"speculative.method {method!r} is not known to vLLM {d.vllm_release.vllm_version}; "
            f"allowed: {', '.join(methods)}",
            fix="use one of the allowed methods, or a vLLM release that has this one",
            field="speculative.method",
        )
    elif method in d.vllm_release.speculative.refused_methods:
        containers = load_catalog().first_releases_running(lambda version: _runs_method(version, method))
        yield Violation(
            message=f"speculative.method {method!r} is named by vLLM {d.vllm_release.vllm_version} but refused at "
            "start-up (its SpeculativeConfig raises NotImplementedError for it); containers that run it: "
            f"{containers}",
            fix=f"use {containers}, or a method this release runs (eagle3 with a trained head, or ngram "
            "without a draft)",
            field="speculative.method",
        )


def _runs_method(version: str, method: str) -> bool | None:
    """Whether vLLM `version` runs `method`; None without release data (LMI v27 bundles vLLM 0.23.1, not on PyPI)."""
    if version not in available_vllm_versions():
        return None
    facts = load_vllm_release(version).speculative
    return method in facts.methods and method not in facts.refused_methods


@rule(
    code="SI401",
    name="eagle3-target-allowed",
    severity=Severity.ERROR,
    title="EAGLE3 target model type is allowed by the vLLM release",
    rationale="Up to 0.21.0 vLLM only accepts EAGLE3 for targets whose model_type matches its allow-list (each "
    "release's list is in its generated data).",
)
def eagle3_target_allowed(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None or d.model is None:
        return
    allow = d.vllm_release.speculative.eagle3_target_allowlist
    if d.speculative.get("method") != "eagle3" or allow is None:
        return
    if not any(entry in d.model.model_type for entry in allow):
        later = [v for v in available_vllm_versions() if _eagle3_allows(v, d.model.model_type)]
        yield Violation(
            message=f"EAGLE3 on vLLM {d.vllm_release.vllm_version} supports targets whose model_type contains one "
            f"of: {', '.join(allow)}; {d.model_id} has model_type {d.model.model_type!r}",
            fix=f"use vLLM {later[0]} or newer, which allows this target"
            if later
            else "use another speculative method (no vLLM release in the catalog allows this target)",
            field="speculative.method",
        )


@rule(
    code="SI414",
    name="eagle3-target-interface",
    severity=Severity.ERROR,
    title="The target's model class implements vLLM's EAGLE3 interface",
    rationale="EAGLE3 reads hidden states from inside the target, which only model classes implementing "
    "SupportsEagle3 expose; vLLM stops when the model loads ('Model does not support EAGLE3 interface'). "
    "Which architectures implement it is read from each release's wheel.",
)
def eagle3_target_interface(d: ResolvedDeployment) -> Iterator[Violation]:
    if (
        not d.speculative
        or d.speculative.get("method") != "eagle3"
        or d.vllm_release is None
        or d.model is None
    ):
        return
    release = d.vllm_release.vllm_version
    if not _eagle3_allows(release, d.model.model_type):
        return  # SI401 refuses it first, at configuration
    known = load_vllm_model_interfaces().releases
    interfaces = known.get(release)
    if interfaces is None or interfaces.eagle3_architectures is None:
        return
    arch, fallback = loaded_class(d, release)
    if arch in interfaces.eagle3_architectures:
        return
    later = later_releases_allowing(
        d,
        release,
        lambda i, cls: cls in (i.eagle3_architectures or {cls}),  # None: no check there
    )
    loads_as = (
        f"{d.model.architecture} is not registered there, so {d.model_id} loads through vLLM's Transformers "
        f"backend, {arch}, which"
        if fallback
        else f"{arch} (the class {d.model_id} loads as)"
    )
    yield Violation(
        message=f"in vLLM {release}, {loads_as} is not among the registered "
        "architectures that implement the EAGLE3 interface: vLLM stops when the model loads with 'Model does "
        f"not support EAGLE3 interface' (read from {interfaces.wheel})",
        fix=f"use a container with vLLM {later[0]} or newer, where the class it loads as implements it"
        if later
        else "use another speculative method (no container release in the catalog implements EAGLE3 for this "
        "class)",
        field="speculative.method",
    )


@rule(
    code="SI415",
    name="draft-multimodal-target",
    severity=Severity.ERROR,
    title="Draft models and parallel drafting on a multimodal target",
    rationale="vLLM 0.15.0 to 0.20.2 refuse a separate draft model, and 0.16.0 to 0.20.2 parallel drafting "
    "(P-EAGLE), when the target is a multimodal architecture; from 0.21.0 they only warn.",
)
def draft_multimodal_target(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None or d.model is None:
        return
    release = d.vllm_release.vllm_version
    interfaces = load_vllm_model_interfaces().releases.get(release)
    if interfaces is None or d.model.architecture not in interfaces.multimodal_architectures:
        return
    asked = {"draft_model"} if d.speculative.get("method") == "draft_model" else set()
    if d.speculative.get("parallel_drafting"):
        asked.add("parallel_drafting")
    refusals = load_catalog().vllm.multimodal_draft_refusals.refusals
    refused = sorted(
        {r.applies_to for r in refusals if r.applies_to in asked and r.applies_to_release(release)}
    )
    if not refused:
        return
    what = " and ".join("a draft model" if r == "draft_model" else "parallel drafting" for r in refused)
    last = max((r.until for r in refusals if r.applies_to in refused), key=version_tuple)
    yield Violation(
        message=f"vLLM {release} refuses {what} for a multimodal target: {d.model_id} is {d.model.architecture}, "
        "which vLLM registers as multimodal ('Speculative Decoding with draft models ... does not support "
        "multimodal models yet')",
        fix=f"use a container with vLLM newer than {last}, or EAGLE3 without parallel_drafting",
        field="speculative.parallel_drafting" if "parallel_drafting" in refused else "speculative.method",
    )


def _eagle3_allows(version: str, model_type: str) -> bool:
    allow = load_vllm_release(version).speculative.eagle3_target_allowlist
    return allow is None or any(entry in model_type for entry in allow)


@rule(
    code="SI402",
    name="parallel-drafting-supported",
    severity=Severity.ERROR,
    title="P-EAGLE (parallel_drafting) needs a vLLM release that has it",
    rationale="Releases without the field drop or reject it; P-EAGLE checkpoints then run as plain EAGLE3.",
)
def parallel_drafting_supported(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None or not d.speculative.get("parallel_drafting"):
        return
    if "parallel_drafting" in d.vllm_release.speculative.fields:
        return
    first = _first_release_with_field("parallel_drafting")
    yield Violation(
        message=f"parallel_drafting (P-EAGLE) needs vLLM >= {first}; the container has vLLM "
        f"{d.vllm_release.vllm_version}",
        fix=f"use a container with vLLM >= {first}",
        field="speculative.parallel_drafting",
    )


@rule(
    code="SI403",
    name="speculative-keys-known",
    severity=Severity.ERROR,
    title="Every speculative config key is a field of the release's SpeculativeConfig",
    rationale="Up to 0.15.1 vLLM silently drops unknown keys (the setting is lost); from 0.16.0 it refuses to start.",
)
def speculative_keys_known(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None:
        return
    facts = d.vllm_release.speculative
    version = d.vllm_release.vllm_version
    for key in d.speculative:
        if key in facts.fields or key == "parallel_drafting":  # parallel_drafting has its own rule
            continue
        effect = "silently drops it" if facts.unknown_keys == "dropped" else "refuses to start"
        known_in = [v for v in available_vllm_versions() if key in load_vllm_release(v).speculative.fields]
        where = f"; it exists in vLLM {known_in[0]} to {known_in[-1]}" if known_in else ""
        close = difflib.get_close_matches(key, facts.fields, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        yield Violation(
            message=f"speculative.{key} is not a SpeculativeConfig field of vLLM {version}, which {effect}"
            f"{where}{hint}",
            fix=f"rename it to {close[0]}"
            if close
            else "remove or rename the key (fields: " + ", ".join(sorted(facts.fields)) + ")",
            field=f"speculative.{key}",
        )


@rule(
    code="SI404",
    name="num-speculative-tokens",
    severity=Severity.ERROR,
    title="num_speculative_tokens is set, >= 1 and below max_model_len",
    rationale="vLLM needs a positive number of tokens to draft for draft-model methods.",
)
def num_speculative_tokens(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative:
        return
    n = d.speculative.get("num_speculative_tokens")
    if n is None:
        if needs_draft_checkpoint(d.speculative.get("method")):
            yield Violation(
                message=f"speculative.num_speculative_tokens is required for method {d.speculative.get('method')!r}",
                fix="set speculative.num_speculative_tokens (3 to 5 is typical for EAGLE3)",
                field="speculative.num_speculative_tokens",
            )
    elif not isinstance(n, int) or isinstance(n, bool) or n < 1:
        yield Violation(
            message=f"speculative.num_speculative_tokens is {n!r}; allowed: an integer >= 1",
            fix="set speculative.num_speculative_tokens to 1 or more (3 to 5 is typical for EAGLE3)",
            field="speculative.num_speculative_tokens",
        )
    elif isinstance(d.engine.get("max_model_len"), int) and n >= d.engine["max_model_len"]:
        # Each step verifies n + 1 tokens of one sequence, which holds at most max_model_len.
        yield Violation(
            message=f"speculative.num_speculative_tokens is {n}; allowed: fewer than max_model_len "
            f"({d.engine['max_model_len']}), as each step verifies that many tokens plus one of a sequence",
            fix="set speculative.num_speculative_tokens to a few tokens (3 to 5 is typical for EAGLE3)",
            field="speculative.num_speculative_tokens",
        )


@rule(
    code="SI405",
    name="draft-tensor-parallel",
    severity=Severity.ERROR,
    title="Draft tensor parallel size is 1 or the target's",
    rationale="vLLM only runs a draft unsharded or sharded exactly like the target.",
)
def draft_tensor_parallel(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or "draft_tensor_parallel_size" not in d.speculative:
        return
    value = d.speculative["draft_tensor_parallel_size"]
    allowed = load_catalog().vllm.speculative.allowed_draft_tensor_parallel(d.tensor_parallel_size)
    if value not in allowed:
        yield Violation(
            message=f"speculative.draft_tensor_parallel_size is {value!r}; allowed: "
            f"{' or '.join(map(str, allowed))} (1 or the target's tensor_parallel_size)",
            fix="set it to 1 or leave it out",
            field="speculative.draft_tensor_parallel_size",
        )


@rule(
    code="SI406",
    name="draft-matches-target",
    severity=Severity.WARNING,
    title="The draft was trained for this target model",
    rationale="A draft trained on another model (even a LoRA fine-tune of the same base) accepts fewer tokens.",
)
def draft_matches_target(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.draft is None or d.draft.target is None or d.draft.target == d.model_id or shape_mismatches(d):
        return  # SI407 reports a draft that cannot even load
    yield Violation(
        message=f"draft {d.speculative.get('model') if d.speculative else ''!r} was trained for {d.draft.target}, "
        f"not {d.model_id}: expect a low acceptance rate",
        fix="use a draft trained for this model, or train one (EagleOptimizationJob)",
        field="speculative.model",
    )


@rule(
    code="SI413",
    name="ngram-window",
    severity=Severity.ERROR,
    title="ngram's prompt_lookup_min and prompt_lookup_max are >= 1 and min <= max",
    rationale="vLLM refuses to start when the n-gram window is empty or inverted.",
)
def ngram_window(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.speculative.get("method") != "ngram":
        return
    low, high = d.speculative.get("prompt_lookup_min"), d.speculative.get("prompt_lookup_max")
    for key, value in (("prompt_lookup_min", low), ("prompt_lookup_max", high)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            yield Violation(
                message=f"speculative.{key} is {value!r}; allowed: an integer >= 1",
                fix=f"set speculative.{key} to 1 or more (vLLM's default is 5)",
                field=f"speculative.{key}",
            )
    if isinstance(low, int) and isinstance(high, int) and 1 <= high < low:
        yield Violation(
            message=f"speculative.prompt_lookup_min is {low} but prompt_lookup_max is {high}; allowed: min <= max",
            fix=f"set prompt_lookup_min to at most {high}, or prompt_lookup_max to at least {low}",
            field="speculative.prompt_lookup_min",
        )
