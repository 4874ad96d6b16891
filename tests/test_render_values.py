"""Structured engine and speculative values (dicts, lists) reach the container as JSON, the form vLLM's
JSON flags parse (`--compilation-config '{"level":3}'`): never Python's repr (`{'level': 3}`, `True`,
`None`), which vLLM refuses and the server does not start."""

from __future__ import annotations

import json
from typing import Any

import pytest

from speculative_infra.check import check
from speculative_infra.render import render_environment, render_lmi_environment, render_vllm_environment
from speculative_infra.render.values import compact_json, scalar_text
from tests.conftest import REFERENCE_SPEC, deep_merge
from tests.constructs.dlc_entrypoint import entrypoint_argv, serve_argv_problems

COMPILATION = {"level": 3, "cudagraph_capture_sizes": [1, 2, 4], "use_inductor": False}
GENERATION = {"temperature": 0.6, "top_k": None, "stop": ["</s>", "é"]}
ENGINE = {"compilation_config": COMPILATION, "override_generation_config": GENERATION}
SPECULATIVE_EXTRA = {"draft_tensor_parallel_size": 1, "disable_padded_drafter_batch": True}

COMPILATION_JSON = '{"level":3,"cudagraph_capture_sizes":[1,2,4],"use_inductor":false}'
GENERATION_JSON = '{"temperature":0.6,"top_k":null,"stop":["</s>","\\u00e9"]}'
SPECULATIVE_JSON = (
    '{"method":"eagle3","model":"RedHatAI/Qwen3-32B-speculator.eagle3","num_speculative_tokens":4,'
    '"draft_tensor_parallel_size":1,"disable_padded_drafter_batch":true}'
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1, "b": [True, None]}, '{"a":1,"b":[true,null]}'),
        ([1, 2.5, "x"], '[1,2.5,"x"]'),
        ([], "[]"),
        ({}, "{}"),
        (4096, "4096"),
        (0.9, "0.9"),
        ("bfloat16", "bfloat16"),
    ],
)
def test_scalar_text_is_json_for_structures_and_plain_for_scalars(value: Any, text: str) -> None:
    assert scalar_text(value) == text
    if isinstance(value, (dict, list)):
        assert json.loads(scalar_text(value)) == value
    assert compact_json({"k": [1, {"n": None}]}) == '{"k":[1,{"n":null}]}'


def _deployment(changes: dict[str, Any]) -> Any:
    result = check(deep_merge(REFERENCE_SPEC, changes))
    return result.deployment


def test_vllm_environment_carries_engine_and_speculative_structures_as_json() -> None:
    deployment = _deployment({"engine": ENGINE, "speculative": SPECULATIVE_EXTRA})
    env = render_environment(deployment)
    assert env is not None
    assert env["SM_VLLM_COMPILATION_CONFIG"] == COMPILATION_JSON
    assert env["SM_VLLM_OVERRIDE_GENERATION_CONFIG"] == GENERATION_JSON
    assert env["SM_VLLM_SPECULATIVE_CONFIG"] == SPECULATIVE_JSON
    # What the DLC entrypoint hands vLLM: each JSON flag followed by its value, which parses back.
    argv = entrypoint_argv(env, deployment.container.boolean_env)
    assert serve_argv_problems(argv, deployment.vllm_release) == []
    values = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i].startswith("--")}
    assert json.loads(values["--compilation-config"]) == COMPILATION
    assert json.loads(values["--override-generation-config"]) == GENERATION
    assert json.loads(values["--speculative-config"]) == {
        **REFERENCE_SPEC["speculative"],
        **SPECULATIVE_EXTRA,
    }


def test_lmi_environment_carries_engine_and_speculative_structures_as_json() -> None:
    env = render_lmi_environment(
        model="m",
        engine={**ENGINE, "enable_prefix_caching": False, "max_num_seqs": 8},
        speculative={"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": None},
    )
    assert env["OPTION_COMPILATION_CONFIG"] == COMPILATION_JSON
    assert env["OPTION_OVERRIDE_GENERATION_CONFIG"] == GENERATION_JSON
    assert (
        env["OPTION_SPECULATIVE_CONFIG"]
        == '{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_max":null}'
    )
    assert env["OPTION_ENABLE_PREFIX_CACHING"] == "false" and env["OPTION_MAX_ROLLING_BATCH_SIZE"] == "8"


def test_lmi_deployment_renders_structures_as_json() -> None:
    deployment = _deployment(
        {
            "container": {"framework": "lmi", "version": "20"},
            "engine": ENGINE,
            "speculative": SPECULATIVE_EXTRA,
        }
    )
    env = render_environment(deployment)
    assert env is not None
    assert env["OPTION_COMPILATION_CONFIG"] == COMPILATION_JSON
    assert env["OPTION_SPECULATIVE_CONFIG"] == SPECULATIVE_JSON


def test_a_list_valued_engine_arg_is_a_json_list() -> None:
    deployment = _deployment({})
    env = render_vllm_environment(
        model="m",
        engine={"some_sizes": [1, 2, 4], "some_map": {"image": 2}},
        speculative=None,
        container=deployment.container,
        release=deployment.vllm_release,
    )
    assert env["SM_VLLM_SOME_SIZES"] == "[1,2,4]" and env["SM_VLLM_SOME_MAP"] == '{"image":2}'
    assert "SM_VLLM_SPECULATIVE_CONFIG" not in env
