"""Shared test helpers: the reference spec and a CLI runner."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.server import ThreadedMotoServer

from speculative_infra.cli.main import main

# jsii prints a Node end-of-life banner on Node 20; it is noise in test output.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
# The CDK's built-in CloudFormation validation compiles its WebAssembly engine once per process and
# validates every synth (about a fifth of a construct test's time); it reports findings as warnings, which
# no test read. Templates are held to cfn-lint here, and the example apps to the built-in validator
# explicitly (tests/test_example_app.py). Must be set before the jsii kernel starts.
os.environ.setdefault("CDK_VALIDATION", "false")

REPO = Path(__file__).resolve().parent.parent
EXAMPLE_SPECS = REPO / "examples" / "specs"


def built_wheel(out: Path) -> Path:
    """The project's wheel, built from this checkout into `out` (no dependencies, no isolation)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(REPO),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        check=True,
        cwd=out.parent,
    )
    [wheel] = out.glob("speculative_infra-*.whl")
    return wheel


REFERENCE_SPEC: dict[str, Any] = {
    "region": "us-west-2",
    "instance_type": "ml.g7e.2xlarge",
    "container": {"framework": "vllm", "version": "0.15.1"},
    "model": {"id": "Qwen/Qwen3-32B"},
    "engine": {
        "tensor_parallel_size": 1,
        "max_model_len": 4096,
        "dtype": "bfloat16",
        "enable_prefix_caching": True,
        "enable_chunked_prefill": True,
        "max_num_seqs": 64,
        "gpu_memory_utilization": 0.9,
    },
    "speculative": {
        "method": "eagle3",
        "model": "RedHatAI/Qwen3-32B-speculator.eagle3",
        "num_speculative_tokens": 4,
    },
}


# An uncatalogued checkpoint shaped like Llama-3.1-8B, described in full in a spec: the quantization tests
# give it an id and their quantization fields (llama_8b("acme/...", quantization="fp8")).
LLAMA_8B_SHAPE: dict[str, Any] = {
    "architecture": "LlamaForCausalLM",
    "model_type": "llama",
    "parameters_billion": 8.0,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "max_position_embeddings": 131072,
}


def llama_8b(model_id: str, **quantization: Any) -> dict[str, Any]:
    return {"id": model_id, **LLAMA_8B_SHAPE, **quantization}


def fetched_eagle3_head(
    repo_id: str, target: str, lengths: Any, *, hidden_size: int, vocab_size: int, size_gb: float
) -> dict[str, Any]:
    """What `facts fetch` would hand `check` for an EAGLE-3 head whose config.json has these lengths."""
    from speculative_infra.catalog.models import Draft
    from speculative_infra.facts.hub_config import FetchedFacts

    draft = Draft(
        method="eagle3",
        target=target,
        size_gb=size_gb,
        target_hidden_size=hidden_size,
        target_vocab_size=vocab_size,
        config_lengths=lengths,
        source="a stand-in config.json",
        confidence="reported",
    )
    return {repo_id: FetchedFacts(repo_id=repo_id, revision="main", origin="test", kind="draft", draft=draft)}


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Merge changes into a copy of base; a None value deletes the key."""
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


@pytest.fixture
def reference_spec() -> Callable[..., dict[str, Any]]:
    def build(**changes: Any) -> dict[str, Any]:
        return deep_merge(REFERENCE_SPEC, changes)

    return build


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="module")
def s3_server() -> Iterator[str]:
    """A local moto S3 server per test module (boto3 speaks the real wire protocol to it)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
