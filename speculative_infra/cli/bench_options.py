"""Options of `bench` that another command running the same workload can reuse, and their argument types.

A command "with the same options as bench" adds the same groups, checks them together with
bench_config.workload_and_cost_problem and builds the same engine configs from them with
bench_config.workload_config, slo_config and cost_config (--timeout is LoadConfig.request_timeout_s)::

    add_workload_arguments(parser.add_argument_group("workload"))
    add_slo_and_timeout_arguments(parser.add_argument_group("load"))
    add_cost_arguments(parser.add_argument_group("cost"))

bench calls them inside its own groups (--slo and --timeout sit among its load options), so its
--help keeps its order.

Standard library only: the parser is built for every command, the benchmark engine loads only to run.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from urllib.parse import urlparse

SLO_KEYS = ("ttft_ms", "tpot_ms", "e2el_ms")


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


def finite_float(text: str) -> float:
    """A number; Python's float() also reads 'nan' and 'inf', which no option means."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_float(text: str) -> float:
    value = finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def concurrency_levels(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        levels = tuple(int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers such as 1,2,4, got {text!r}"
        ) from None
    if not levels or any(c < 1 for c in levels):
        raise argparse.ArgumentTypeError(f"levels must be integers >= 1, got {text!r}")
    return levels


def request_rates(text: str) -> tuple[float, ...]:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        rates = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers such as 0.5,1,2, got {text!r}"
        ) from None
    if not rates or any(not (math.isfinite(r) and r > 0) for r in rates):
        raise argparse.ArgumentTypeError(f"request rates must be numbers > 0 (requests/s), got {text!r}")
    return rates


def slo_objectives(text: str) -> dict[str, float]:
    """``ttft_ms=500,tpot_ms=50``: the objectives a request must all meet to count as good."""
    objectives: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = part.partition("=")
        if not sep or key not in SLO_KEYS:
            raise argparse.ArgumentTypeError(
                f"expected KEY=MS pairs with KEY one of {', '.join(SLO_KEYS)}, got {part!r}"
            )
        objectives[key] = positive_float(value)
    if not objectives:
        raise argparse.ArgumentTypeError("give at least one objective, e.g. ttft_ms=500")
    return objectives


def http_url(text: str) -> str:
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise argparse.ArgumentTypeError(
            f"expected an http(s) URL such as http://localhost:8000, got {text!r}"
        )
    try:
        _ = parsed.port
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port in {text!r}") from None
    return text


# argparse's parsers and argument groups both add arguments; it names their common base privately.
ArgumentContainer = argparse._ActionsContainer


def add_workload_arguments(work: ArgumentContainer) -> None:
    """The requests sent: generated prompts (sizes, shared prefix, seed) or a --dataset, and sampling."""
    work.add_argument("--input-tokens", type=int_at_least(1), default=1000, metavar="N", help="default: 1000")
    work.add_argument("--output-tokens", type=int_at_least(1), default=560, metavar="N", help="default: 560")
    work.add_argument(
        "--shared-prefix-tokens",
        type=int_at_least(0),
        default=0,
        metavar="N",
        help="prefix shared by all requests (exercises prefix caching; default: 0)",
    )
    work.add_argument(
        "--dataset",
        metavar="PATH",
        help="real prompts instead of generated words: a ShareGPT JSON file, JSON lines of prompts or "
        "messages, or SageMaker data capture (a file or an s3://bucket/prefix)",
    )
    work.add_argument(
        "--dataset-format",
        choices=["auto", "sharegpt", "jsonl", "datacapture"],
        default="auto",
        help="how to read --dataset (default: auto, from its first bytes)",
    )
    work.add_argument(
        "--output-length",
        choices=["forced", "record"],
        help="with --dataset: forced (every request generates --output-tokens; the default) or record "
        "(the length each record asked for, else --output-tokens; the default of --mode batch)",
    )
    work.add_argument("--seed", type=int, help="prompt seed (default: random, recorded in the results)")
    work.add_argument(
        "--reuse-prompts", action="store_true", help="same prompts at every level (prefix-cache hits)"
    )
    work.add_argument("--no-force-length", action="store_true", help="do not send ignore_eos/min_tokens")
    work.add_argument("--temperature", type=finite_float, help="sampling temperature (default: the server's)")


def add_slo_and_timeout_arguments(load: ArgumentContainer) -> None:
    """What a good request is (--slo, for goodput) and how long one may take (--timeout)."""
    load.add_argument(
        "--slo",
        type=slo_objectives,
        metavar="KEY=MS,...",
        help="objectives for goodput: any of ttft_ms, tpot_ms, e2el_ms (e.g. ttft_ms=500,tpot_ms=50)",
    )
    load.add_argument(
        "--timeout", type=positive_float, default=300.0, metavar="S", help="per request (default: 300)"
    )


def add_cost_arguments(price: ArgumentContainer) -> None:
    """The price of the instances serving, for $ per million tokens."""
    price.add_argument("--price-per-hour", type=positive_float, metavar="X", help="$ per instance-hour")
    price.add_argument(
        "--instance-type",
        metavar="TYPE",
        help="instance type of the endpoint: its on-demand price comes from the catalog unless --price-per-hour",
    )
    price.add_argument(
        "--instance-count", type=int_at_least(1), metavar="N", help="instances serving (default: 1)"
    )
