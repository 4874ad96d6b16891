"""Does the speculative config fit the target? Draft shape, MTP layers, a draft where one is needed.

Judged from facts (the draft's config and its declared target, the model's config), not from names:
a head built for another hidden size or vocabulary cannot even load, and vLLM refuses to start.
"""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def needs_draft_checkpoint(method: object) -> bool:
    """Does vLLM load a separate draft checkpoint (speculative.model) for this method?"""
    return method in load_catalog().vllm.speculative.draft_checkpoint_methods


_FETCH = "speculative-infra facts fetch"


def _draft_name(d: ResolvedDeployment) -> str | None:
    model = d.speculative.get("model") if d.speculative else None
    return str(model) if model else None


# A name this close to a catalog draft (in edits) is taken for a typo of it: a wrong name costs a failed
# deployment, a right one a `facts fetch`. Only drafts built for the deployment's own model count: real
# heads for sibling models differ by as little as a size (AngelSlim/Qwen3-8B_eagle3 and -14B_eagle3 are
# two edits apart), and suggesting a head for another model would fail SI407.
TYPO_DISTANCE = 2


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def near_catalog_draft(name: str, model_id: str | None = None) -> str | None:
    """The catalog draft this name is a likely typo of, if any: among the drafts built for `model_id`
    (drafts whose target is unknown count too; every draft when no model is given)."""
    drafts = load_catalog().drafts
    candidates = [
        known
        for known, draft in drafts.items()
        if model_id is None or draft.target is None or draft.target.lower() == model_id.lower()
    ]
    if not candidates:
        return None
    best = min(candidates, key=lambda known: edit_distance(name, known))
    return best if 0 < edit_distance(name, best) <= TYPO_DISTANCE else None


def _unknown_draft(d: ResolvedDeployment) -> str | None:
    """The draft's Hub id when neither the catalog nor fetched facts know it (paths are mounted drafts)."""
    name = _draft_name(d)
    if name is None or d.draft is not None or is_local_path(name):
        return None
    return name


def is_local_path(name: str) -> bool:
    """A path inside the container (a draft mounted from S3, e.g. EagleOptimizationJob's), not a Hub id."""
    return name.startswith(("/", "./", "../")) or "://" in name


@rule(
    code="SI407",
    name="draft-shape-matches-target",
    severity=Severity.ERROR,
    title="The draft was built for the target's hidden size and vocabulary",
    rationale="An EAGLE head reads the target's hidden states and scores its vocabulary: built for another "
    "hidden size or vocabulary, its weights do not load and vLLM fails at start-up.",
)
def draft_shape_matches_target(d: ResolvedDeployment) -> Iterator[Violation]:
    for what, expected, actual in shape_mismatches(d):
        built_for = f"built for {d.draft.target}, " if d.draft is not None and d.draft.target else ""
        yield Violation(
            message=f"draft {_draft_name(d)!r} ({built_for}{what} {expected}) cannot load against "
            f"{d.model_id} ({what} {actual})",
            fix=_draft_fix(d),
            field="speculative.model",
        )


def shape_mismatches(d: ResolvedDeployment) -> list[tuple[str, int, int]]:
    """(what, the draft expects, the target has) for each known fact that differs."""
    if d.draft is None or d.model is None:
        return []
    declared = d.draft_target
    pairs = (
        (
            "hidden size",
            d.draft.target_hidden_size,
            declared.hidden_size if declared else None,
            d.model.hidden_size,
        ),
        (
            "vocabulary size",
            d.draft.target_vocab_size,
            declared.vocab_size if declared else None,
            d.model.vocab_size,
        ),
    )
    found: list[tuple[str, int, int]] = []
    for what, own, via_target, actual in pairs:
        expected = own or via_target  # the draft's own config first, else the target it names
        if expected is not None and actual is not None and expected != actual:
            found.append((what, expected, actual))
    return found


def _draft_fix(d: ResolvedDeployment) -> str:
    cat = load_catalog()
    drafts = sorted(name for name, draft in cat.drafts.items() if draft.target == d.model_id)
    if drafts:
        return (
            f"use a draft trained for {d.model_id}: {', '.join(drafts)}; or train one (EagleOptimizationJob)"
        )
    return f"train a draft for {d.model_id} (EagleOptimizationJob), or use method ngram or suffix"


@rule(
    code="SI408",
    name="mtp-needs-mtp-layers",
    severity=Severity.ERROR,
    title="Method mtp needs a model with multi-token-prediction layers",
    rationale="MTP drafts with the target's own MTP layers; a model without them has nothing to draft with.",
)
def mtp_needs_mtp_layers(d: ResolvedDeployment) -> Iterator[Violation]:
    method = str(d.speculative.get("method")) if d.speculative else ""
    if not (method == "mtp" or method.endswith("_mtp")) or d.model is None:
        return
    if d.model.mtp_layers == 0:
        yield Violation(
            message=f"speculative.method is {method!r} but {d.model_id} has no multi-token-prediction layers "
            "(its config.json sets no num_nextn_predict_layers)",
            fix=f"drop method mtp: {_draft_fix(d)}; or use method ngram",
            field="speculative.method",
        )


@rule(
    code="SI409",
    name="draft-checkpoint-given",
    severity=Severity.ERROR,
    title="Methods that draft with a checkpoint name it",
    rationale="EAGLE, EAGLE3, draft-model and the other checkpoint methods load speculative.model; without it "
    "vLLM refuses to start.",
)
def draft_checkpoint_given(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative:
        return
    method = d.speculative.get("method")
    if needs_draft_checkpoint(method) and not d.speculative.get("model"):
        yield Violation(
            message=f"speculative.method {method!r} needs a draft checkpoint and speculative.model is not set",
            fix=f"set speculative.model to the draft's Hugging Face id or path ({_draft_fix(d)})",
            field="speculative.model",
        )


@rule(
    code="SI410",
    name="draft-known",
    severity=Severity.ERROR,
    title="The draft's name is not a near miss of a catalog draft for the same model",
    rationale="A misspelt draft id fails minutes into the deployment, when the container cannot download "
    "it; an unknown draft cannot be checked against its target.",
)
def draft_known(d: ResolvedDeployment) -> Iterator[Violation]:
    name = _unknown_draft(d)
    if name is None:
        return
    close = near_catalog_draft(name, d.model_id)
    if close is not None:
        yield Violation(
            message=f"draft {name!r} is not in the catalog and no facts were fetched for it; did you mean "
            f"{close!r}?",
            fix=f"correct the name, or if it is right run `{_FETCH} {name}` in the app's folder",
            field="speculative.model",
        )


@rule(
    code="SI411",
    name="draft-facts-fetched",
    severity=Severity.WARNING,
    title="Facts of a draft outside the catalog are fetched",
    rationale="Without the draft's config the checks cannot tell whether it fits the target or how much "
    "memory it takes.",
)
def draft_facts_fetched(d: ResolvedDeployment) -> Iterator[Violation]:
    name = _unknown_draft(d)
    if name is None:
        return
    if near_catalog_draft(name, d.model_id) is not None:
        return  # SI410 says it
    yield Violation(
        message=f"draft {name!r} is not in the catalog and no facts were fetched for it: its shape and "
        "size are not checked",
        fix=f"run `{_FETCH} {name}` in the app's folder (writes cdk.context.json)",
        field="speculative.model",
    )


@rule(
    code="SI412",
    name="speculative-keys-fit-method",
    severity=Severity.WARNING,
    title="Speculative keys belong to the chosen method",
    rationale="ngram and ngram_gpu read prompt_lookup_*, suffix reads suffix_decoding_*; under another method "
    "vLLM ignores them, and these methods ignore a draft model.",
)
def speculative_keys_fit_method(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative:
        return
    method = d.speculative.get("method")
    groups = load_catalog().vllm.speculative.method_keys
    for group in groups:
        if method in group.methods:
            continue
        owners = " or ".join(repr(m) for m in group.methods)
        for key in group.keys:
            if key in d.speculative:
                yield Violation(
                    message=f"speculative.{key} only applies to method {owners}; with {method!r} it is ignored",
                    fix=f"remove speculative.{key}, or use method {group.methods[0]!r}",
                    field=f"speculative.{key}",
                )
    if any(method in group.methods for group in groups) and d.speculative.get("model"):
        yield Violation(
            message=f"speculative.model is ignored by method {method!r}, which drafts without a checkpoint",
            fix="remove speculative.model, or use eagle3 with this draft",
            field="speculative.model",
        )
