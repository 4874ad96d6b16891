"""From raw request outcomes to per-request records and per-level statistics.

Definitions (``vllm bench serve`` names):

* TTFT: from the request leaving the client to the first chunk that carries generated text.
* TPOT: ``(E2EL - TTFT) / (output_tokens - 1)`` per request, output tokens from the server.
* ITL: gap between consecutive content chunks, pooled over requests. With speculative decoding
  one chunk carries several tokens, so ITL > TPOT and ``mean_tokens_per_chunk`` > 1.
* E2EL: from the request leaving the client to the end of its stream.
* Output throughput: output tokens delivered between the first measured request's send and the
  last measured request's end, divided by that window. Each request's tokens are spread over its
  chunks; chunks of uncounted warm-up/filler requests inside the window count too, because those
  requests are what keeps the concurrency at C there. With all slots starting together this is
  exactly vLLM's ``output tokens / duration``; with staggered starts it avoids the edge effect of
  counting only requests that started and ended inside the window.
* Request throughput: output throughput / mean output tokens per request; total token
  throughput adds request throughput x mean input tokens.
* Cost per million output tokens: ``price_per_hour x instances / (3600 x output_throughput) x 1e6``.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from .config import CostConfig, Level, SloConfig, WorkloadConfig
from .formats import TokenSource
from .load import LevelRun, RequestOutcome
from .results import InputTokenSource, LevelResult, OutputTokenSource, RequestRecord, RequestStatus
from .workload import Phase


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """``q``-th percentile (0-100) with linear interpolation, as numpy's default method."""
    if not sorted_values:
        raise ValueError("percentile of an empty sequence")
    rank = (len(sorted_values) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Summary:
    mean: float
    median: float
    p90: float
    p99: float
    max: float


def summarize(values: Sequence[float]) -> Summary | None:
    if not values:
        return None
    ordered = sorted(values)
    return Summary(
        mean=sum(ordered) / len(ordered),
        median=percentile(ordered, 50),
        p90=percentile(ordered, 90),
        p99=percentile(ordered, 99),
        max=ordered[-1],
    )


def cost_per_million_output_tokens(
    price_per_hour: float | None, instance_count: int, output_tokens_per_second: float | None
) -> float | None:
    """Dollars per million output tokens at a sustained aggregate output rate."""
    if price_per_hour is None or not output_tokens_per_second:
        return None
    return price_per_hour * instance_count / (3600.0 * output_tokens_per_second) * 1e6


@dataclass(frozen=True, slots=True)
class _Tokens:
    output: int | None
    output_source: OutputTokenSource | None
    prompt: int
    prompt_source: InputTokenSource


def _tokens(outcome: RequestOutcome, workload: WorkloadConfig, server_source: TokenSource) -> _Tokens:
    rec = outcome.rec
    output: int | None
    output_source: OutputTokenSource | None
    if rec.completion_tokens is not None:
        output, output_source = rec.completion_tokens, server_source
    elif rec.finish_reason == "length":
        # Stopped by max_tokens: exactly the requested count, even without a usage block.
        output, output_source = outcome.expected_output_tokens or workload.output_tokens, "max_tokens"
    elif rec.content_times:
        # Lower bound: one token per chunk is wrong under speculative decoding.
        output, output_source = len(rec.content_times), "chunks"
    else:
        output, output_source = None, None
    if rec.prompt_tokens is not None:
        return _Tokens(output, output_source, rec.prompt_tokens, server_source)
    return _Tokens(output, output_source, outcome.estimated_input_tokens or workload.input_tokens, "estimate")


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000.0, 4)


def request_record(
    outcome: RequestOutcome, level: Level, level_start: float, tokens: _Tokens
) -> RequestRecord:
    rec = outcome.rec
    start = rec.start
    status: RequestStatus = "cancelled" if outcome.cancelled else ("failed" if rec.failure else "ok")
    ok = status == "ok"
    times = rec.content_times
    ttft = times[0] - start if ok and times else None
    e2el = rec.completed_at - start if ok and rec.completed_at is not None else None
    tpot = None
    if ok and ttft is not None and e2el is not None and tokens.output and tokens.output > 1:
        tpot = (e2el - ttft) / (tokens.output - 1)
    return RequestRecord(
        concurrency=level.concurrency,
        request_rate=level.request_rate,
        phase=outcome.phase.value,
        index=outcome.index,
        request_id=outcome.request_id,
        slot=outcome.slot,
        status=status,
        failure_class=rec.failure.failure_class.value if rec.failure else None,
        failure_message=rec.failure.message if rec.failure else None,
        retries=rec.retries,
        retried_classes=list(rec.retried_classes),
        slot_freed_at_s=round(outcome.slot_freed_at - level_start, 6),
        sent_at_s=round(start - level_start, 6),
        first_token_at_s=round(times[0] - level_start, 6) if times else None,
        completed_at_s=round(rec.completed_at - level_start, 6) if rec.completed_at is not None else None,
        client_lag_ms=round((outcome.first_attempt_at - outcome.slot_freed_at) * 1000.0, 4),
        ttft_ms=_ms(ttft),
        tpot_ms=_ms(tpot),
        e2el_ms=_ms(e2el),
        output_tokens=tokens.output if ok else None,
        output_tokens_source=tokens.output_source if ok else None,
        prompt_tokens=rec.prompt_tokens,
        chunks=len(times),
        finish_reason=rec.finish_reason,
        itl_ms=[round((b - a) * 1000.0, 4) for a, b in pairwise(times)] if ok else [],
    )


def _window_output_tokens(
    outcomes: Sequence[RequestOutcome],
    tokens: Sequence[_Tokens],
    start: float,
    end: float,
    fallback_tokens_per_chunk: float,
) -> float:
    total = 0.0
    for outcome, tok in zip(outcomes, tokens, strict=True):
        rec = outcome.rec
        if rec.failure is not None or not rec.content_times:
            continue  # failed requests deliver nothing usable
        times = rec.content_times
        n_in = bisect_right(times, end) - bisect_right(times, start)  # chunks in (start, end]
        if n_in <= 0:
            continue
        if not outcome.cancelled and tok.output is not None:
            per_chunk = tok.output / len(times)
        else:
            per_chunk = fallback_tokens_per_chunk  # cancelled filler: its usage never arrived
        total += per_chunk * n_in
    return total


def meets_slo(record: RequestRecord, slo: SloConfig) -> bool:
    """A completed request within every objective given (vllm bench serve's goodput test)."""
    for name, limit in slo.given().items():
        value = getattr(record, name)
        if value is None or value > limit:
            return False
    return record.status == "ok"


def summarize_level(
    run: LevelRun,
    workload: WorkloadConfig,
    cost: CostConfig,
    server_source: TokenSource,
    slo: SloConfig | None = None,
) -> tuple[LevelResult, list[RequestRecord]]:
    outcomes = run.outcomes
    tokens = [_tokens(o, workload, server_source) for o in outcomes]
    records = [request_record(o, run.level, run.started_at, t) for o, t in zip(outcomes, tokens, strict=True)]

    measured = [i for i, o in enumerate(outcomes) if o.phase is Phase.MEASURED]
    finished = [i for i in measured if not outcomes[i].cancelled]
    ok = [i for i in finished if outcomes[i].rec.failure is None]
    failed = [i for i in finished if outcomes[i].rec.failure is not None]

    failure_classes: Counter[str] = Counter()
    failure_examples: dict[str, str] = {}
    for i in failed:
        failure = outcomes[i].rec.failure
        assert failure is not None
        failure_classes[failure.failure_class.value] += 1
        failure_examples.setdefault(failure.failure_class.value, failure.message[:300])
    retried: Counter[str] = Counter()
    for i in measured:
        retried.update(outcomes[i].rec.retried_classes)

    ok_records = [records[i] for i in ok]
    out_tokens = [float(n) for i in ok if (n := tokens[i].output) is not None]
    in_tokens = [float(tokens[i].prompt) for i in ok]
    chunks = sum(len(outcomes[i].rec.content_times) for i in ok)
    tokens_per_chunk = sum(out_tokens) / chunks if chunks else None
    mean_out = sum(out_tokens) / len(out_tokens) if out_tokens else None
    mean_in = sum(in_tokens) / len(in_tokens) if in_tokens else None

    duration = output_throughput = request_throughput = total_throughput = None
    if finished:
        window_start = min(outcomes[i].first_attempt_at for i in finished)
        ends = [outcomes[i].rec.completed_at for i in finished]
        window_end = max(e for e in ends if e is not None)
        duration = window_end - window_start
        if duration > 0 and mean_out:
            delivered = _window_output_tokens(
                outcomes, tokens, window_start, window_end, tokens_per_chunk or 1.0
            )
            output_throughput = delivered / duration
            request_throughput = output_throughput / mean_out
            total_throughput = output_throughput + request_throughput * (mean_in or 0.0)

    def stats(values: list[float | None]) -> Summary | None:
        return summarize([v for v in values if v is not None])

    ttft = stats([r.ttft_ms for r in ok_records])
    tpot = stats([r.tpot_ms for r in ok_records])
    itl = summarize([x for r in ok_records for x in r.itl_ms])
    e2el = stats([r.e2el_ms for r in ok_records])
    per_user = stats(
        [r.output_tokens / (r.e2el_ms / 1000.0) for r in ok_records if r.output_tokens and r.e2el_ms]
    )
    lag = summarize([records[i].client_lag_ms for i in finished])
    achieved_rate = None
    if run.level.request_rate is not None:
        sends = sorted(outcomes[i].first_attempt_at for i in measured)
        if len(sends) >= 2 and sends[-1] > sends[0]:
            achieved_rate = (len(sends) - 1) / (sends[-1] - sends[0])
    good = request_goodput = output_goodput = None
    if slo is not None:
        good_records = [r for r in ok_records if meets_slo(r, slo)]
        good = len(good_records)
        if duration:
            request_goodput = good / duration
            output_goodput = sum(r.output_tokens or 0 for r in good_records) / duration

    result = LevelResult(
        concurrency=run.level.concurrency,
        request_rate=run.level.request_rate,
        achieved_request_rate=achieved_rate,
        complete=run.stop_reason == "complete",
        stop_reason=run.stop_reason.value,
        stop_message=run.stop_message,
        warmup_requests=run.planned_warmup,
        planned_requests=run.planned_measured,
        completed=len(ok),
        failed=len(failed),
        cancelled=len(measured) - len(finished),
        failure_classes=dict(failure_classes),
        failure_examples=failure_examples,
        retries=sum(retried.values()),
        retried_classes=dict(retried),
        duration_s=duration,
        request_throughput=request_throughput,
        output_throughput=output_throughput,
        total_token_throughput=total_throughput,
        mean_ttft_ms=ttft.mean if ttft else None,
        median_ttft_ms=ttft.median if ttft else None,
        p90_ttft_ms=ttft.p90 if ttft else None,
        p99_ttft_ms=ttft.p99 if ttft else None,
        mean_tpot_ms=tpot.mean if tpot else None,
        median_tpot_ms=tpot.median if tpot else None,
        p90_tpot_ms=tpot.p90 if tpot else None,
        p99_tpot_ms=tpot.p99 if tpot else None,
        mean_itl_ms=itl.mean if itl else None,
        median_itl_ms=itl.median if itl else None,
        p90_itl_ms=itl.p90 if itl else None,
        p99_itl_ms=itl.p99 if itl else None,
        mean_e2el_ms=e2el.mean if e2el else None,
        median_e2el_ms=e2el.median if e2el else None,
        p90_e2el_ms=e2el.p90 if e2el else None,
        p99_e2el_ms=e2el.p99 if e2el else None,
        output_tokens_per_second_per_user=per_user.mean if per_user else None,
        median_output_tokens_per_second_per_user=per_user.median if per_user else None,
        mean_tokens_per_chunk=tokens_per_chunk,
        mean_output_tokens=mean_out,
        mean_input_tokens=mean_in,
        short_outputs=sum(
            1
            for i in ok
            if (n := tokens[i].output) is not None
            and n < (outcomes[i].expected_output_tokens or workload.output_tokens)
        ),
        output_tokens_source=dict(Counter(tokens[i].output_source or "none" for i in ok)),
        input_tokens_source=dict(Counter(tokens[i].prompt_source for i in ok)),
        mean_client_lag_ms=lag.mean if lag else None,
        median_client_lag_ms=lag.median if lag else None,
        p99_client_lag_ms=lag.p99 if lag else None,
        max_client_lag_ms=lag.max if lag else None,
        cost_per_million_output_tokens=cost_per_million_output_tokens(
            cost.price_per_hour, cost.instance_count, output_throughput
        ),
        good_requests=good,
        request_goodput=request_goodput,
        output_goodput=output_goodput,
    )
    return result, records
