"""Start-up checks between engine settings: what vLLM's SchedulerConfig refuses when the engine starts.

The checks, their releases and vLLM's messages are catalog facts (vllm.yaml `scheduler_checks`); the
comparisons are here. `scheduler_refusal` is held to each release's own code run on boundary probes
(tests/golden/vllm_startup_checks.json).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import version_tuple
from speculative_infra.catalog.vllm_startup_checks import SchedulerCheck
from speculative_infra.human_int import parse_human_int
from speculative_infra.resolve import ResolvedDeployment, chunked_prefill_on, vllm_serve_batched_tokens
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.engine_args import reads_tera_suffixes
from speculative_infra.rules.finding import Severity, Violation

# SchedulerConfig's field defaults for the settings below (unset = the default).
FIELD_DEFAULTS: dict[str, Any] = {
    "max_num_batched_tokens": None,
    "max_num_partial_prefills": 1,
    "max_long_partial_prefills": 1,
    "long_prefill_token_threshold": 0,
    "max_num_active_seqs": None,
}
SETTINGS = (
    "max_model_len",
    "max_num_seqs",
    "enable_chunked_prefill",
    *FIELD_DEFAULTS,
)

Settings = Mapping[str, Any]
_FAILS: dict[str, Callable[[Settings], bool]] = {
    # None: unset and not known (an LMI engine's own default): the batch-size checks do not apply.
    "batched_tokens_below_model_len": lambda s: (
        s["max_num_batched_tokens"] is not None
        and not s["enable_chunked_prefill"]
        and s["max_num_batched_tokens"] < s["max_model_len"]
    ),
    "batched_tokens_below_max_num_seqs": lambda s: (
        s["max_num_batched_tokens"] is not None and s["max_num_batched_tokens"] < s["max_num_seqs"]
    ),
    "active_seqs_above_max_num_seqs": lambda s: (
        s["max_num_active_seqs"] is not None and s["max_num_active_seqs"] > s["max_num_seqs"]
    ),
    "partial_prefills_below_one": lambda s: s["max_num_partial_prefills"] < 1,
    "partial_prefills_need_chunked_prefill": lambda s: (
        s["max_num_partial_prefills"] > 1 and not s["enable_chunked_prefill"]
    ),
    "long_prefill_threshold_above_model_len_with_partial_prefills": lambda s: (
        s["max_num_partial_prefills"] > 1 and s["long_prefill_token_threshold"] > s["max_model_len"]
    ),
    "long_prefill_threshold_above_model_len": lambda s: (
        s["long_prefill_token_threshold"] > s["max_model_len"]
    ),
    "long_partial_prefills_outside_range": lambda s: (
        not 1 <= s["max_long_partial_prefills"] <= s["max_num_partial_prefills"]
    ),
    "long_partial_prefills_above_partial_prefills": lambda s: (
        s["max_long_partial_prefills"] > s["max_num_partial_prefills"]
    ),
}


def scheduler_refusal(release: str, settings: Settings) -> tuple[SchedulerCheck, str] | None:
    """The first check this release's SchedulerConfig fails on these settings, with vLLM's message; None: it
    starts. `settings` needs max_model_len, max_num_seqs and enable_chunked_prefill; the others default as
    in SchedulerConfig (max_num_batched_tokens: not judged when unset)."""
    facts = load_catalog().vllm.scheduler_checks
    values = {**FIELD_DEFAULTS, **{k: v for k, v in settings.items() if v is not None}}
    if (
        version_tuple(release) <= version_tuple(facts.auto_long_prefill_threshold_until)
        and values["max_num_partial_prefills"] > 1
        and values["long_prefill_token_threshold"] == 0
    ):
        values["long_prefill_token_threshold"] = int(values["max_model_len"] * 0.04)
    for check in facts.checks:
        if check.applies_to(release) and _FAILS[check.id](values):
            return check, check.message.format(**values)
    return None


def _engine_int(d: ResolvedDeployment, key: str, release: str) -> int | None:
    value = d.engine.get(key)
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return parse_human_int(value, tera=reads_tera_suffixes(release))
    return None  # SI502 names a value of the wrong type


def drafting_slots(speculative: Mapping[str, Any]) -> int:
    """SpeculativeConfig.max_num_new_slots_for_drafting: the batch slots a request's drafting adds."""
    k = speculative.get("num_speculative_tokens") or 0
    slots = k - 1 if speculative.get("parallel_drafting") else 0
    return slots + (1 if speculative.get("method") == "draft_model" else 0)


def drafting_lookahead(release: str, speculative: Mapping[str, Any]) -> int | None:
    """VllmConfig.num_lookahead_tokens in the releases that have it (None before): the KV slots a request's
    drafting reserves past its scheduled tokens."""
    method = speculative.get("method")
    if isinstance(method, str) and method.endswith("_mtp"):
        method = "mtp"  # SpeculativeConfig.__post_init__ replaces every MTPModelTypes name with "mtp"
    k = speculative.get("num_speculative_tokens") or 0
    return load_catalog().vllm.drafting_slot_checks.lookahead(release, method, k)


def drafting_refusal(
    release: str, *, max_num_batched_tokens: int, max_num_seqs: int, slots: int, lookahead: int | None
) -> tuple[SchedulerCheck, str] | None:
    """vLLM's message where the draft slots (or, from 0.33.0, the lookahead tokens) leave the batch no room
    (VllmConfig._set_max_num_scheduled_tokens)."""
    scheduled = max_num_batched_tokens - slots * max_num_seqs
    values: dict[str, int | None] = {
        "max_num_batched_tokens": max_num_batched_tokens,
        "slots": slots,
        "lookahead": lookahead,
        "max_num_scheduled_tokens": scheduled,
    }
    for check in load_catalog().vllm.drafting_slot_checks.checks:
        if not check.applies_to(release):
            continue
        if check.id == "drafting_slots_leave_no_tokens" and scheduled <= 0:
            return check, check.message.format(**values)
        if check.id == "batched_tokens_within_drafting_slots" and max_num_batched_tokens <= slots:
            return check, check.message.format(**values)
        if (
            check.id == "batched_tokens_within_lookahead"
            and lookahead is not None
            and max_num_batched_tokens <= lookahead
        ):
            return check, check.message.format(**values)
    return None


def _engine_settings(d: ResolvedDeployment, release: str) -> tuple[dict[str, Any], bool] | None:
    """The settings vLLM's checks see, and whether max_num_batched_tokens is vLLM's default; None where a value
    does not parse (SI502 names it) or is missing."""
    keys = [key for key in SETTINGS if key != "enable_chunked_prefill"]
    values: dict[str, Any] = {key: _engine_int(d, key, release) for key in keys}
    if any(d.engine.get(k) is not None and values[k] is None for k in keys):
        return None
    if values["max_model_len"] is None or values["max_num_seqs"] is None:
        return None
    values["enable_chunked_prefill"] = chunked_prefill_on(release, d.engine)
    # vllm serve sizes an unset value itself; an LMI container's engine is not vllm serve: left unjudged.
    tokens = None
    if values["max_num_batched_tokens"] is None:
        tokens = vllm_serve_batched_tokens(
            d.instance,
            d.container,
            d.engine,
            max_model_len=values["max_model_len"],
            max_num_seqs=values["max_num_seqs"],
        )
        values["max_num_batched_tokens"] = tokens
    defaulted = tokens is not None
    return values, defaulted


def _batched_tokens_note(d: ResolvedDeployment, values: Mapping[str, Any], defaulted: bool) -> str:
    if not defaulted:
        return ""
    doubled = (
        d.engine.get("performance_mode") == "throughput"
        and d.container is not None
        and d.container.vllm_version is not None
        and version_tuple(d.container.vllm_version)
        >= version_tuple(load_catalog().vllm.api_server_batched_tokens_default.throughput_doubles_since)
    )
    return (
        f" (max_num_batched_tokens is unset: vllm serve uses {values['max_num_batched_tokens']} on the "
        f"{d.instance.gpu_name if d.instance else 'GPU'}"
        + (", doubled by performance_mode throughput" if doubled else "")
        + ")"
    )


@rule(
    code="SI503",
    name="scheduler-limits",
    severity=Severity.ERROR,
    title="Engine settings pass vLLM's start-up scheduler checks",
    rationale="vLLM's SchedulerConfig compares max_num_batched_tokens (vllm serve's default where unset), "
    "max_model_len, max_num_seqs, chunked prefill and the partial-prefill settings when the engine starts and "
    "stops it with a ValueError; the checks differ by release.",
)
def scheduler_limits(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.container.vllm_version is None:
        return
    release = d.container.vllm_version
    settings = _engine_settings(d, release)
    if settings is None:
        return
    values, defaulted = settings
    found = scheduler_refusal(release, values)
    if found is None:
        return
    check, message = found
    yield Violation(
        message=f"vLLM {release} refuses these engine settings at start-up: {message}"
        + _batched_tokens_note(d, values, defaulted and check.id.startswith("batched_tokens")),
        fix=_fix(check.id, values),
        field=f"engine.{_field(check.id)}",
    )


@rule(
    code="SI504",
    name="drafting-slots-fit-batch",
    severity=Severity.ERROR,
    title="The batch leaves room for the draft slots speculative decoding adds",
    rationale="A separate draft model adds one slot per request to each batch and parallel drafting (P-EAGLE) "
    "k - 1; vLLM 0.20.0 to 0.27.1 refuse to start when max_num_seqs requests' slots fill "
    "max_num_batched_tokens, and 0.28.0 to 0.32.0 when one request's do. From 0.33.0 vLLM compares with "
    "num_lookahead_tokens instead: k for EAGLE, EAGLE3, MTP and draft models, k + 1 for DFlash.",
)
def drafting_slots_fit_batch(d: ResolvedDeployment) -> Iterator[Violation]:
    if not d.speculative or d.container is None or d.container.vllm_version is None:
        return
    release = d.container.vllm_version
    slots = drafting_slots(d.speculative)
    lookahead = drafting_lookahead(release, d.speculative)
    settings = _engine_settings(d, release) if slots > 0 or (lookahead or 0) > 0 else None
    if settings is None or settings[0]["max_num_batched_tokens"] is None:
        return
    values, defaulted = settings
    found = drafting_refusal(
        release,
        max_num_batched_tokens=values["max_num_batched_tokens"],
        max_num_seqs=values["max_num_seqs"],
        slots=slots,
        lookahead=lookahead,
    )
    if found is None:
        return
    check, message = found
    seqs = values["max_num_seqs"]
    if check.id == "batched_tokens_within_lookahead":
        needed = (lookahead or 0) + 1
        counted = f"a request drafts {lookahead} token(s) ahead"
        lower = "speculative.num_speculative_tokens"
    else:
        per_batch = check.id == "drafting_slots_leave_no_tokens"
        needed = slots * seqs + 1 if per_batch else slots + 1
        counted = f"{slots} draft slot(s) per request" + (f" x max_num_seqs {seqs}" if per_batch else "")
        fewer = " or speculative.num_speculative_tokens" if d.speculative.get("parallel_drafting") else ""
        lower = f"engine.max_num_seqs{fewer}"
    # The value suggested must also pass SI503: at least max_num_seqs, and max_model_len without chunked prefill.
    needed = max(needed, seqs, 0 if values["enable_chunked_prefill"] else values["max_model_len"])
    yield Violation(
        message=f"vLLM {release} refuses to start: {message} ({counted})"
        + _batched_tokens_note(d, values, defaulted),
        fix=f"set engine.max_num_batched_tokens to at least {needed}, or lower {lower}",
        field="engine.max_num_batched_tokens",
    )


def _field(check_id: str) -> str:
    if check_id.startswith("batched_tokens"):
        return "max_num_batched_tokens"
    if check_id.startswith("active_seqs"):
        return "max_num_active_seqs"
    if check_id.startswith("long_prefill"):
        return "long_prefill_token_threshold"
    if check_id.startswith("long_partial"):
        return "max_long_partial_prefills"
    return "max_num_partial_prefills"


def _fix(check_id: str, s: Settings) -> str:
    if check_id == "batched_tokens_below_model_len":
        return (
            f"set engine.max_num_batched_tokens to at least {s['max_model_len']} (max_model_len), or turn "
            "chunked prefill back on (engine.enable_chunked_prefill: true)"
        )
    if check_id == "batched_tokens_below_max_num_seqs":
        return (
            f"set engine.max_num_batched_tokens to at least {s['max_num_seqs']}, or lower engine.max_num_seqs"
        )
    if check_id == "active_seqs_above_max_num_seqs":
        return f"set engine.max_num_active_seqs to at most {s['max_num_seqs']} (max_num_seqs)"
    if check_id.startswith("long_prefill"):
        return f"set engine.long_prefill_token_threshold to at most {s['max_model_len']} (max_model_len)"
    if check_id.startswith("long_partial"):
        return (
            "set engine.max_long_partial_prefills between 1 and engine.max_num_partial_prefills "
            f"({s['max_num_partial_prefills']})"
        )
    if check_id == "partial_prefills_need_chunked_prefill":
        return "turn chunked prefill on (engine.enable_chunked_prefill: true), or set max_num_partial_prefills to 1"
    return "set engine.max_num_partial_prefills to 1 or more"
