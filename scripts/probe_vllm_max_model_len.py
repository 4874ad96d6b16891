#!/usr/bin/env python3
"""Run each vLLM release's own _get_and_verify_max_len on stand-in model configs and write the golden table
tests/golden/vllm_max_model_len.json: the max_model_len vLLM derives from a model's config (its length
keys, RoPE scaling and tokenizer), and which max_model_len values it refuses, in its own words.

    .venv/bin/python scripts/probe_vllm_max_model_len.py                    # every default release
    .venv/bin/python scripts/probe_vllm_max_model_len.py --versions 0.30.0  # some

What it executes: the module-level function `_get_and_verify_max_len`, read with ast out of the wheel's
config module (vllm/config.py, vllm/config/__init__.py or vllm/config/model.py), and from 0.14.0 the
method that finds the length keys (`derive_max_model_len_and_key` in
vllm/transformers_utils/model_arch_config_convertor.py), whose result the function reads from a
ModelArchitectureConfig. The RoPE helpers the function calls (`is_rope_parameters_nested`,
`iter_rope_parameters`) are the wheel's own too, from vllm/transformers_utils/config.py. Decorators and
annotations are stripped; `logger`, `current_platform` (a CUDA platform: no TPU, `check_max_model_len`
keeps the value) and `envs` (VLLM_ALLOW_LONG_MAX_MODEL_LEN unset) are stubs, and transformers'
ALLOWED_LAYER_TYPES is a stand-in tuple (recorded).

The tokenizer cases run the function as a pooling model with absolute position embeddings reaches it:
ModelConfig.get_and_verify_max_len reads tokenizer_config.json only then (the `if` test is recorded as
"tokenizer_config_read_when"); for a generating model it passes no tokenizer config.

What it does not execute: loading config.json through transformers and vLLM's `patch_rope_parameters`.
A probe's config is what the function reads after them: RoPE parameters with `rope_type` (the legacy
`type` key already renamed), set both as `rope_scaling` (read up to 0.11.x) and `rope_parameters` (read
from 0.12.0, which copies rope_scaling there under transformers 4).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.records import find_or_download, run_release_probe, sha256_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_max_model_len.json"
FUNCTION = "_get_and_verify_max_len"
KEY_METHOD = "derive_max_model_len_and_key"
CONVERTOR = "vllm/transformers_utils/model_arch_config_convertor.py"
ROPE_HELPERS = ("is_rope_parameters_nested", "iter_rope_parameters", "_iter_rope_parameters")
ALLOWED_LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention", "linear_attention")

# Each case: the config attributes vLLM reads (after loading), and the tokenizer_config.json it read.
# Shapes from public configs: Qwen3-8B (40960, YaRN 4 x 32768 as Qwen's model card suggests), gpt-oss
# (131072, YaRN 32 x 4096), Llama 3.1 (llama3 8 x 8192), Gemma 3 (linear 8, model_type gemma3_text),
# Phi-3 mini 128k (longrope, original 4096), DeepSeek-V3 (YaRN 40 x 4096, 163840).
CASES: dict[str, dict[str, Any]] = {
    "plain": {"config": {"max_position_embeddings": 40960}},
    "yarn_unscaled_max": {
        "config": {
            "max_position_embeddings": 40960,
            "rope": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
        }
    },
    "yarn_scaled_max": {
        "config": {
            "max_position_embeddings": 131072,
            "rope": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
        }
    },
    "deepseek_yarn": {
        "config": {
            "max_position_embeddings": 163840,
            "rope": {"rope_type": "deepseek_yarn", "factor": 40, "original_max_position_embeddings": 4096},
        }
    },
    "llama3": {
        "config": {
            "max_position_embeddings": 131072,
            "rope": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
        }
    },
    "linear": {"config": {"max_position_embeddings": 4096, "rope": {"rope_type": "linear", "factor": 2.0}}},
    "dynamic": {"config": {"max_position_embeddings": 4096, "rope": {"rope_type": "dynamic", "factor": 2.0}}},
    "default_rope": {"config": {"max_position_embeddings": 8192, "rope": {"rope_type": "default"}}},
    "null_factor": {
        "config": {"max_position_embeddings": 8192, "rope": {"rope_type": "linear", "factor": None}}
    },
    "gemma3_linear": {
        "config": {
            "model_type": "gemma3_text",
            "max_position_embeddings": 131072,
            "rope": {"rope_type": "linear", "factor": 8.0},
        }
    },
    "longrope": {
        "config": {
            "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096,
            "rope": {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]},
        }
    },
    "config_model_max_length": {"config": {"max_position_embeddings": 8192, "model_max_length": 131072}},
    "two_length_keys": {"config": {"max_position_embeddings": 131072, "seq_length": 32768}},
    "tokenizer_shorter": {
        "config": {"max_position_embeddings": 131072},
        "tokenizer": {"model_max_length": 8192},
    },
    "tokenizer_below_config_model_max_length": {
        "config": {"max_position_embeddings": 8192, "model_max_length": 131072},
        "tokenizer": {"model_max_length": 32768},
    },
    "tokenizer_huge": {
        "config": {"max_position_embeddings": 32768},
        "tokenizer": {"model_max_length": 1000000000000000019884624838656},
    },
    "tokenizer_without_length": {"config": {"max_position_embeddings": 32768}, "tokenizer": {"eos": "x"}},
    "no_length_key": {"config": {}},
}


class _Quiet:
    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None


class _CudaPlatform:
    @staticmethod
    def is_tpu() -> bool:
        return False

    @staticmethod
    def check_max_model_len(max_model_len: int) -> int:
        return max_model_len


def _bare(node: ast.FunctionDef) -> ast.FunctionDef:
    node.decorator_list = []
    node.returns = None
    for arg in [*node.args.args, *node.args.kwonlyargs]:
        arg.annotation = None
    return node


def _function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), None)


def load(archive: zipfile.ZipFile) -> tuple[str, Any, Any, list[str]]:
    """The function, the key method (None before 0.14.0), where the function lives and the helpers run."""
    names = sorted(n for n in archive.namelist() if n.startswith("vllm/config") and n.endswith(".py"))
    path = next(n for n in names if f"def {FUNCTION}(".encode() in archive.read(n))
    namespace: dict[str, Any] = {
        "logger": _Quiet(),
        "current_platform": _CudaPlatform(),
        "envs": SimpleNamespace(VLLM_ALLOW_LONG_MAX_MODEL_LEN=False),
        "ALLOWED_LAYER_TYPES": ALLOWED_LAYER_TYPES,
        "ALLOWED_ATTENTION_LAYER_TYPES": ALLOWED_LAYER_TYPES,  # 0.14.0 imports it under this name
        "Any": Any,
    }
    helpers: list[str] = []
    if "vllm/transformers_utils/config.py" in archive.namelist():
        tree = ast.parse(archive.read("vllm/transformers_utils/config.py"))
        for helper in ROPE_HELPERS:
            node = _function(tree, helper)
            if node is not None:
                exec(compile(ast.Module(body=[_bare(node)], type_ignores=[]), "<vllm>", "exec"), namespace)
                helpers.append(helper)
    node = _function(ast.parse(archive.read(path)), FUNCTION)
    assert node is not None
    exec(
        compile(ast.Module(body=[_bare(node)], type_ignores=[]), "<vllm>", "exec"), namespace
    )  # the wheel's own
    key_method = None
    if CONVERTOR in archive.namelist():
        method = _function(ast.parse(archive.read(CONVERTOR)), KEY_METHOD)
        if method is not None:
            exec(compile(ast.Module(body=[_bare(method)], type_ignores=[]), "<vllm>", "exec"), namespace)
            key_method = namespace[KEY_METHOD]
    return path, namespace[FUNCTION], key_method, helpers


def tokenizer_read_when(archive: zipfile.ZipFile, path: str) -> list[str]:
    """The `if` tests under which ModelConfig.get_and_verify_max_len reads tokenizer_config.json (the
    tokenizer cases below only matter where they hold)."""
    for node in ast.walk(ast.parse(archive.read(path))):
        if isinstance(node, ast.FunctionDef) and node.name == "get_and_verify_max_len":
            for branch in ast.walk(node):
                if isinstance(branch, ast.If) and "try_get_tokenizer_config" in ast.unparse(branch.body):
                    return [ast.unparse(branch.test)]
            return []
    raise LookupError("ModelConfig.get_and_verify_max_len not found")


ALLOW_LONG = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
ALLOW_LONG_VALUES = ("1", "true", "TRUE", " True ", "0", "false", "yes", "on", "2", "")


def allow_long_parse(archive: zipfile.ZipFile) -> dict[str, bool]:
    """vllm/envs.py's own reader of VLLM_ALLOW_LONG_MAX_MODEL_LEN, run on values (the empty string: unset)."""
    tree = ast.parse(archive.read("vllm/envs.py"))
    reader = next(
        v
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for k, v in zip(node.keys, node.values, strict=True)
        if isinstance(k, ast.Constant) and k.value == ALLOW_LONG
    )
    out = {}
    for value in ALLOW_LONG_VALUES:
        environ = {ALLOW_LONG: value} if value else {}
        fake_os = SimpleNamespace(environ=environ, getenv=environ.get)
        out[value] = bool(eval(compile(ast.Expression(reader), "<vllm>", "eval"), {"os": fake_os})())
    return out


def hf_config(case: dict[str, Any]) -> SimpleNamespace:
    config = dict(case["config"])
    rope = config.pop("rope", None)
    attrs = {"model_type": config.pop("model_type", "qwen3"), **config}
    if rope is not None:
        attrs["rope_scaling"] = dict(rope)
        attrs["rope_parameters"] = dict(rope)
    return SimpleNamespace(**attrs)


def run(
    function: Any, key_method: Any, case: dict[str, Any], max_model_len: int | None, allow_long: bool = False
) -> dict[str, Any]:
    config = hf_config(case)
    kwargs: dict[str, Any] = {
        "hf_config": config,
        "tokenizer_config": case.get("tokenizer"),
        "max_model_len": max_model_len,
        "disable_sliding_window": False,
    }
    params = function.__code__.co_varnames[: function.__code__.co_argcount]
    kwargs["sliding_window" if "sliding_window" in params else "sliding_window_len"] = None
    if "model_arch_config" in params:
        derived = key_method(SimpleNamespace(hf_text_config=config))
        kwargs["model_arch_config"] = SimpleNamespace(derived_max_model_len_and_key=derived)
    function.__globals__["envs"] = SimpleNamespace(VLLM_ALLOW_LONG_MAX_MODEL_LEN=allow_long)
    try:
        return {"max_model_len": function(**kwargs)}
    except Exception as exc:  # the wheel's own refusal (ValueError), or what its code raises on the input
        # The refusal's first sentence (the rest is the same warning about VLLM_ALLOW_LONG_MAX_MODEL_LEN).
        message = str(exc)
        if ".json)." in message:
            message = message.split(".json).", 1)[0] + ".json)."
        return {"error": type(exc).__name__, "message": message}


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        path, function, key_method, helpers = load(archive)
        tokenizer_when = tokenizer_read_when(archive, path)
        allow_long = allow_long_parse(archive)
    probes = []
    for name, case in CASES.items():
        default = run(function, key_method, case, None)
        values: set[int] = {-1, 1}
        for verdict in (default, run(function, key_method, case, 10**9)):
            message = verdict.get("message", "")
            if "derived max_model_len (" in message:  # the limit vLLM names when it refuses
                limit = message.split("derived max_model_len (", 1)[1].split("=", 1)[1].split(" ", 1)[0]
                values |= {int(float(limit)) - 1, int(float(limit)), int(float(limit)) + 1}
        if "max_model_len" in default:
            d = int(default["max_model_len"])
            values |= {d - 1, d, d + 1}
        for notable in (4096, 8192, 32768, 40961, 131072, 131073, 163840, 1048576):
            values.add(notable)
        probes.append({"case": name, "max_model_len": None, "verdict": default})
        probes.extend(
            {"case": name, "max_model_len": v, "verdict": run(function, key_method, case, v)}
            for v in sorted(values)
        )
    return {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "function": f"{path}:{FUNCTION}",
        "length_keys_from": f"{CONVERTOR}:{KEY_METHOD}" if key_method is not None else path,
        "rope_helpers": helpers,
        "tokenizer_config_read_when": tokenizer_when,
        # The refusals again with VLLM_ALLOW_LONG_MAX_MODEL_LEN set: each value past the limit, as vLLM runs it.
        f"{ALLOW_LONG}_parsed": allow_long,
        "allowed_long": [
            {
                "case": p["case"],
                "max_model_len": p["max_model_len"],
                "verdict": run(function, key_method, CASES[p["case"]], p["max_model_len"], allow_long=True),
            }
            for p in probes
            if p["verdict"].get("error") == "ValueError" and p["case"] in ("plain", "linear", "llama3")
        ],
        "probes": probes,
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "function", "scripts/probe_vllm_max_model_len.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
