"""Start-up checks between engine settings: what vLLM's SchedulerConfig refuses when the engine starts.

The checks, their releases and vLLM's messages are catalog facts (vllm.yaml `scheduler_checks`); the
comparisons are here. `scheduler_refusal` is held to each release's own code run on boundary probes
(tests/golden/vllm_startup_checks.json).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import SchedulerCheck, version_tuple
from speculative_infra.human_int import parse_human_int
from speculative_infra.resolve import ResolvedDeployment
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
    # An unset max_num_batched_tokens is sized by vLLM from the GPU and these settings: not judged.
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


@rule(
    code="SI503",
    name="scheduler-limits",
    severity=Severity.ERROR,
    title="Engine settings pass vLLM's start-up scheduler checks",
    rationale="vLLM's SchedulerConfig compares max_num_batched_tokens, max_model_len, max_num_seqs, chunked "
    "prefill and the partial-prefill settings when the engine starts and stops it with a ValueError; the "
    "checks differ by release.",
)
def scheduler_limits(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.container is None or d.container.vllm_version is None:
        return
    release = d.container.vllm_version
    keys = [key for key in SETTINGS if key != "enable_chunked_prefill"]
    values: dict[str, Any] = {key: _engine_int(d, key, release) for key in keys}
    unreadable = [k for k in keys if d.engine.get(k) is not None and values[k] is None]
    if unreadable or values["max_model_len"] is None or values["max_num_seqs"] is None:
        return  # SI502 names a value vLLM would not parse
    forced_until = load_catalog().vllm.scheduler_checks.chunked_prefill_forced_on_until
    chunked = d.engine.get("enable_chunked_prefill", True) is not False
    values["enable_chunked_prefill"] = chunked or version_tuple(release) <= version_tuple(forced_until)
    found = scheduler_refusal(release, values)
    if found is None:
        return
    check, message = found
    yield Violation(
        message=f"vLLM {release} refuses these engine settings at start-up: {message}",
        fix=_fix(check.id, values),
        field=f"engine.{_field(check.id)}",
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
