"""speculative.max_model_len against the target's and, where the draft's config is known, the draft's own
max_model_len: what SpeculativeConfig refuses when the engine starts (catalog: vllm.yaml
`speculative_max_model_len_checks`). `speculative_max_len_refusal` is held to each release's own function
run on probes (tests/golden/vllm_speculative_max_len.json), `draft_config_refusal` to each release's draft
ModelConfig and that function run in turn (tests/golden/vllm_draft_max_model_len.json)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ConfigLengths, version_tuple
from speculative_infra.catalog.vllm_startup_checks import SpeculativeMaxModelLenChecks
from speculative_infra.context_limit import ContextLimit, config_lengths_of, draft_context_limit
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


def speculative_max_len_refusal(
    release: str, value: int, *, target: int, draft: int | None = None
) -> tuple[str, str] | None:
    """("draft" or "target", vLLM's message) where this release refuses speculative.max_model_len `value`;
    None where it starts. `draft`: the draft's max_model_len, None where not known (then only the target's
    is compared)."""
    facts = load_catalog().vllm.speculative_max_model_len_checks
    if version_tuple(release) < version_tuple(facts.since):
        return None
    if draft is not None and value > draft:
        return "draft", facts.draft_message.format(value=value, draft=draft)
    if value > target:
        return "target", facts.target_message.format(value=value, target=target)
    return None


def draft_config_refusal(
    release: str, value: int, draft: ContextLimit, *, allow_long: bool = False
) -> str | None:
    """vLLM's words where this release refuses speculative.max_model_len `value` against the draft's own
    config (`draft`: what the release derives from it), None where the draft takes it. `allow_long`:
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is set, which the draft's ModelConfig (0.21.0 on) obeys and
    SpeculativeConfig's own comparison (before) does not."""
    facts = load_catalog().vllm.speculative_max_model_len_checks
    if version_tuple(release) < version_tuple(facts.since):
        return None
    if not facts.draft_verifies_given_length(release):
        # The draft runs with its default; _maybe_override_draft_max_model_len compares with that.
        return facts.draft_message.format(value=value, draft=draft.default) if value > draft.default else None
    if not draft.refuses(value) or allow_long:
        return None
    return load_catalog().vllm.max_model_len_derivation.refusal.format(
        value=value, key=draft.key, limit=draft.limit, model_max_length=draft.config_model_max_length
    )


def _draft_allows(release: str, draft: ContextLimit) -> int:
    """The longest speculative.max_model_len the draft's config lets this release start with."""
    if not load_catalog().vllm.speculative_max_model_len_checks.draft_verifies_given_length(release):
        return draft.default
    return int(draft.limit)  # a draft's limit is at least its config's model_max_length (no tokenizer cap)


def _checks() -> SpeculativeMaxModelLenChecks:
    return load_catalog().vllm.speculative_max_model_len_checks


class DraftConfig(NamedTuple):
    """A draft's own config as a release reads it: what it derives (`limit`), where that config is, and its
    lengths and RoPE parameters."""

    limit: ContextLimit
    source: str
    lengths: ConfigLengths


def draft_config_of(d: ResolvedDeployment, target: int, release: str) -> DraftConfig | None:
    """What this release derives from the draft's own config, and where that config is; None where its
    lengths are not known (a catalogued draft without them, a head `facts fetch` has not read)."""
    assert d.speculative is not None
    lengths = d.draft.config_lengths if d.draft is not None else None
    source = f"the config.json of the draft {d.speculative.get('model')}"
    method = d.speculative.get("method")
    if (
        lengths is None
        and d.model is not None
        and not d.speculative.get("model")
        and _checks().draft_is_target(method if isinstance(method, str) else None, release)
    ):
        lengths = config_lengths_of(d.model)
        source = f"{d.model_id}'s own config.json, which the {method} draft reads without engine.hf_overrides"
    if lengths is None:
        return None
    draft = draft_context_limit(lengths, target, release)
    return DraftConfig(draft, source, lengths) if draft is not None else None


def positive_int(value: Any) -> int | None:
    """The value as vLLM's pydantic field reads it (an integer, or a string of digits), None where it refuses."""
    if isinstance(value, str) and value.strip().isdigit() and value.isascii():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


@rule(
    code="SI416",
    name="speculative-max-model-len",
    severity=Severity.ERROR,
    title="speculative.max_model_len is a positive integer no larger than the draft's or the target's max_model_len",
    rationale="SpeculativeConfig (a positive integer field) refuses a max_model_len larger than the draft's "
    "or the target's when the engine starts, in every release read; n-gram, suffix and the other methods "
    "without a draft model skip the check. The draft's own limit comes from its config.json (up to vLLM "
    "0.20.2 its default max_model_len, from 0.21.0 the longest its config admits) and is judged where its "
    "lengths are known (`facts fetch` reads them).",
)
def speculative_max_model_len(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.vllm_release is None or d.speculative.get("max_model_len") is None:
        return
    given = d.speculative["max_model_len"]
    value = positive_int(given)
    if value is None:
        shown = repr(given) if len(repr(given)) <= 40 else repr(given)[:40] + "..."
        yield Violation(
            message=f"speculative.max_model_len is {shown}; vLLM's SpeculativeConfig takes a positive integer",
            fix="set speculative.max_model_len to a whole number of tokens of 1 or more, or leave it out "
            "(the draft then runs to the target's max_model_len)",
            field="speculative.max_model_len",
        )
        return
    target = positive_int(d.engine.get("max_model_len"))
    if d.speculative.get("method") in _checks().methods_without_draft or target is None:
        return
    release = d.vllm_release.vllm_version
    found = draft_config_of(d, target, release)
    draft, source = (found.limit, found.source) if found is not None else (None, "")
    allow_long = load_catalog().vllm.max_model_len_derivation.allows_long(d.spec.environment)
    words = draft_config_refusal(release, value, draft, allow_long=allow_long) if draft is not None else None
    if draft is not None and words is not None:
        step = (
            "the draft's ModelConfig"
            if load_catalog().vllm.speculative_max_model_len_checks.draft_verifies_given_length(release)
            else "SpeculativeConfig"
        )
        yield Violation(
            message=f"vLLM {release} refuses to start: {step} says '{words}' (from {source})",
            fix=f"lower speculative.max_model_len to at most {min(_draft_allows(release, draft), target)}, "
            "or leave it out",
            field="speculative.max_model_len",
        )
        return
    refused = speculative_max_len_refusal(release, value, target=target)
    if refused is None:
        return
    yield Violation(
        message=f"vLLM {release} refuses to start: {refused[1]} (engine.max_model_len)",
        fix=f"lower speculative.max_model_len to at most {target}, or leave it out",
        field="speculative.max_model_len",
    )


@rule(
    code="SI417",
    name="speculative-max-model-len-beyond-draft-context-allowed",
    severity=Severity.WARNING,
    title="speculative.max_model_len beyond the draft's context runs only on VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    rationale="From vLLM 0.21.0 the draft's ModelConfig verifies speculative.max_model_len against the "
    "draft's own config.json, and obeys VLLM_ALLOW_LONG_MAX_MODEL_LEN: with it set to 1 or true, the draft "
    "starts with a length past the context it derives, and vLLM only warns. Before 0.21.0 SpeculativeConfig's "
    "own comparison refuses it whatever the environment (SI416).",
)
def speculative_max_model_len_beyond_draft_allowed(d: ResolvedDeployment) -> Iterator[Violation]:
    derivation = load_catalog().vllm.max_model_len_derivation
    if not d.speculative or d.vllm_release is None or not derivation.allows_long(d.spec.environment):
        return
    value = positive_int(d.speculative.get("max_model_len"))
    target = positive_int(d.engine.get("max_model_len"))
    release = d.vllm_release.vllm_version
    if (
        value is None
        or target is None
        or value > target
        or d.speculative.get("method") in _checks().methods_without_draft
    ):
        return  # SI416 judges these
    if not _checks().draft_verifies_given_length(release):
        return  # before 0.21.0 SpeculativeConfig refuses it whatever the environment (SI416)
    found = draft_config_of(d, target, release)
    if found is None or found.limit.failure is not None or not found.limit.refuses(value):
        return
    draft, source = found.limit, found.source
    yield Violation(
        message=f"speculative.max_model_len {value} is longer than the {int(draft.limit)} tokens vLLM {release} "
        f"derives from {source}; {derivation.allow_long_env} in the environment lets the draft start anyway, "
        f"and vLLM warns: '{derivation.allow_long_warning}'",
        fix=f"lower speculative.max_model_len to at most {int(draft.limit)}, or leave it out (the draft then "
        "runs to its own context or the target's max_model_len, whichever is shorter)",
        field="speculative.max_model_len",
    )
