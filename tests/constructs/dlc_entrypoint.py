"""What the vLLM DLC entrypoint does with SM_VLLM_* variables, and whether vLLM's parser accepts the result.

A test helper (not shipped in the wheel), used to prove that rendered environments start vLLM:
`entrypoint_argv` mirrors the entrypoint's translation (aws/deep-learning-containers
scripts/docker/vllm/sagemaker_entrypoint.sh), `serve_argv_problems` replays argparse's rules against
the release's generated flag data. Anything argparse would tolerate by accident (a stray value landing
in the positional model_tag, an abbreviated flag) counts as a problem here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from speculative_infra.catalog.vllm_release import VllmRelease
from speculative_infra.human_int import HUMAN_INT_TYPES, reads_as_human_int

PREFIX = "SM_VLLM_"


def entrypoint_argv(env: Mapping[str, str], boolean_env: Literal["empty", "true_false"]) -> list[str]:
    argv = ["--port", "8080"]
    for key, value in env.items():
        if not key.startswith(PREFIX):
            continue
        argv.append("--" + key[len(PREFIX) :].lower().replace("_", "-"))
        if boolean_env == "true_false" and value.strip().lower() in ("true", "false"):
            if value.strip().lower() == "false":
                argv.pop()
            continue
        if value:
            argv.append(value)
    return argv


def serve_argv_problems(argv: list[str], release: VllmRelease) -> list[str]:
    problems: list[str] = []
    options = {name: flag for flag in release.serve_flags for name in flag.option_strings()}
    i = 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("-"):
            problems.append(f"stray value {token!r} (vLLM would take it as the positional model_tag)")
            continue
        flag = options.get(token)
        if flag is None:
            problems.append(f"unknown flag {token} for vLLM {release.vllm_version}")
            continue
        if token in flag.negations or (flag.boolean and not flag.takes_value):
            continue
        if not flag.takes_value:
            continue
        if i >= len(argv) or (argv[i].startswith("--") and flag.nargs != "?"):
            if flag.nargs != "?":
                problems.append(f"{token} expects a value")
            continue
        value = argv[i]
        i += 1
        if flag.choices is not None and value not in flag.choices:
            problems.append(f"{token} {value!r} is not one of {', '.join(flag.choices)}")
        elif flag.value_type == "int" and not value.lstrip("-").isdigit():
            problems.append(f"{token} {value!r} is not an integer")
        elif flag.value_type in HUMAN_INT_TYPES and not reads_as_human_int(flag.value_type, value):
            problems.append(f"{token} {value!r} is not an integer or a size such as 16k")
        elif flag.value_type == "float":
            try:
                float(value)
            except ValueError:
                problems.append(f"{token} {value!r} is not a number")
    return problems
