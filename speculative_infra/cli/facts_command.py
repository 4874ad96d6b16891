"""`speculative-infra facts fetch ID`: cache a repository's facts in cdk.context.json for offline synthesis.

Exit codes: 0 written, 2 the repository or folder could not be read (the message says why).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

from speculative_infra.facts import (
    CONTEXT_FILE,
    ContextFileError,
    FactsFetchError,
    FetchedFacts,
    read_hub_repository,
    read_local_folder,
    write_facts,
)
from speculative_infra.facts.hub_reader import DEFAULT_DEADLINE_S, DEFAULT_ENDPOINT, MAX_DEADLINE_S, check_ids

EXIT_OK = 0
EXIT_UNREADABLE = 2


def add_facts_command(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "facts", help="fetch facts of models and drafts the catalog does not know into cdk.context.json"
    )
    sub = parser.add_subparsers(dest="action", required=True, metavar="{fetch}")
    fetch = sub.add_parser(
        "fetch",
        help="read a Hugging Face repository's config.json, size and gated flag",
        description="Read a model's or draft's config.json, weights size and gated flag from the Hugging Face "
        "Hub (HF_ENDPOINT, token from HF_TOKEN) or a local folder, and write them under the key "
        "'speculative-infra:hf-facts:ID' of cdk.context.json. `check` and the constructs read them there, so "
        "synthesis stays offline. Exit codes: 0 written, 2 unreadable.",
    )
    fetch.add_argument("repo_id", help="Hugging Face repository id, e.g. RedHatAI/Qwen3-4B-speculator.eagle3")
    fetch.add_argument("--revision", default="main", help="branch, tag or commit (default: main)")
    fetch.add_argument(
        "--from-folder", type=Path, help="read a downloaded copy in this folder instead of the Hub"
    )
    fetch.add_argument(
        "--gated",
        choices=("yes", "no"),
        help="with --from-folder: whether the Hub gates the repository (a folder cannot say)",
    )
    fetch.add_argument(
        "--deadline",
        type=_seconds,
        default=DEFAULT_DEADLINE_S,
        metavar="SECONDS",
        help=f"give up when the Hub has not answered every request within this time (default: "
        f"{DEFAULT_DEADLINE_S:g})",
    )
    fetch.add_argument(
        "--context",
        type=Path,
        default=Path(CONTEXT_FILE),
        help=f"the context file to update (default: ./{CONTEXT_FILE}, the CDK app's)",
    )
    fetch.set_defaults(handler=run_fetch)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 < value <= MAX_DEADLINE_S):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to {MAX_DEADLINE_S:g}")
    return value


def run_fetch(args: argparse.Namespace) -> int:
    try:
        check_ids(args.repo_id, args.revision)
        if args.from_folder is not None:
            gated = None if args.gated is None else args.gated == "yes"
            facts = read_local_folder(args.from_folder, args.repo_id, gated=gated)
        else:
            facts = read_hub_repository(
                args.repo_id,
                args.revision,
                endpoint=os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT),
                token=os.environ.get("HF_TOKEN") or None,
                deadline=args.deadline,
            )
        key = write_facts(args.context, facts)
    except (FactsFetchError, ContextFileError, OSError) as err:
        print(f"speculative-infra facts fetch: {err}", file=sys.stderr)
        return EXIT_UNREADABLE
    print(f"wrote {key} to {args.context}: {describe(facts)}")
    return EXIT_OK


def describe(facts: FetchedFacts) -> str:
    if facts.draft is not None:
        d = facts.draft
        size = "size unknown" if d.size_gb is None else f"{d.size_gb:.2f} GB"
        return (
            f"draft, method {d.method}, target {d.target or 'not named'}, hidden size {d.target_hidden_size}, "
            f"vocabulary {d.target_vocab_size}, {size}"
        )
    assert facts.model is not None
    m = facts.model
    gated = {True: "gated", False: "not gated", None: "gated: unknown"}[m.gated]
    return (
        f"model {m.architecture}, {m.parameters_billion:.2f}B parameters, {m.num_hidden_layers} layers, "
        f"{m.num_key_value_heads} KV heads x {m.head_dim}, context {m.max_position_embeddings}, {gated}"
    )
