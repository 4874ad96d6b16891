#!/usr/bin/env python3
"""Run each vLLM release's own code for a draft's max_model_len on stand-in draft configs and write the golden
table tests/golden/vllm_draft_max_model_len.json: which speculative.max_model_len values vLLM refuses
against the draft's own config, at which step, and in its own words.

    .venv/bin/python scripts/probe_vllm_draft_max_model_len.py                    # every default release
    .venv/bin/python scripts/probe_vllm_draft_max_model_len.py --versions 0.21.0  # some

SpeculativeConfig.__post_init__ builds the draft's ModelConfig, whose `_get_and_verify_max_len` derives the
draft's max_model_len from the draft's config.json (with `spec_target_max_model_len`, the target's
max_model_len, standing in where the config has no length key), and then calls
`_maybe_override_draft_max_model_len(speculative.max_model_len, draft, target)`. Which max_model_len the
draft's ModelConfig is given differs per release: nothing at first (it derives its default), then
speculative.max_model_len itself (which ModelConfig verifies against the draft's config). The probe reads
that keyword out of the wheel's `ModelConfig(...)` call in SpeculativeConfig with ast and runs both steps
in that order with the wheel's own functions (loaded as scripts/probe_vllm_max_model_len.py and
scripts/probe_vllm_speculative_max_len.py load them).

The 2048-token head is also run with VLLM_ALLOW_LONG_MAX_MODEL_LEN set ("allowed_long").

Not executed: loading the draft's config through transformers (a speculators-format config is read as its
transformer_layer_config merged over the top level, which is what the stand-ins are), the draft's tokenizer
(the target's; its model_max_length is left out here), and what later steps do with the result (0.27.0 on
raise the draft's max_position_embeddings for its rotary cache after this check; 0.33.0's V2 model runner
lowers the target's max_model_len to the draft's).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts import probe_vllm_max_model_len as derivation
from scripts import probe_vllm_speculative_max_len as override
from scripts.vllm_release_extractor.records import find_or_download, run_release_probe, sha256_file

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_draft_max_model_len.json"

# Draft configs as vLLM reads them. A 2048-token EAGLE-3 head is what vLLM's own docstring names
# (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, vllm/config/speculative.py 0.27.0 on); a speculators head carries its
# verifier's layer config (Qwen3: 40960); the others straddle what the derivation treats differently.
CASES: dict[str, dict[str, Any]] = {
    "head_2048": {"config": {"model_type": "llama", "max_position_embeddings": 2048}},
    "speculator_40960": {"config": {"model_type": "qwen3", "max_position_embeddings": 40960}},
    "linear_rope": {
        "config": {
            "model_type": "llama",
            "max_position_embeddings": 2048,
            "rope": {"rope_type": "linear", "factor": 4.0},
        }
    },
    "llama3_rope": {
        "config": {
            "model_type": "llama",
            "max_position_embeddings": 2048,
            "rope": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
        }
    },
    "longrope": {
        "config": {
            "model_type": "phi3",
            "max_position_embeddings": 131072,
            "original_max_position_embeddings": 4096,
            "rope": {"rope_type": "longrope", "short_factor": [1.0], "long_factor": [1.0]},
        }
    },
    "config_model_max_length": {
        "config": {"model_type": "llama", "max_position_embeddings": 2048, "model_max_length": 32768}
    },
    "no_length_key": {"config": {"model_type": "speculators"}},
}
SPECULATIVE = (None, 2047, 2048, 2049, 4096, 4097, 8192, 8193, 32768, 32769, 40960, 40961, 131072)
TARGET = (8192, 131072)


def draft_model_config_keywords(tree: ast.Module) -> dict[str, str]:
    """The keywords of SpeculativeConfig's `ModelConfig(...)` call for the draft, as source text."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("ModelConfig"):
                    return {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg is not None}
    raise LookupError("no ModelConfig(...) call in SpeculativeConfig")


def guards_of(scope: ast.AST, matches: Any) -> list[str]:
    """The `if` tests (joined with `and`, an `else` branch as `not (...)`) enclosing each node under `scope`
    for which `matches(node)` holds."""
    found: list[str] = []

    def walk(node: ast.AST, path: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            step = path
            if isinstance(node, ast.If):
                test = ast.unparse(node.test)
                step = [*path, test if child in node.body else f"not ({test})"]
            if matches(child):
                found.append(" and ".join(step))
            walk(child, step)

    walk(scope, [])
    return found


def _makes_target_the_draft(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Assign)
        and ast.unparse(node.targets[0]) == "self.model"
        and "self.target_model_config.model" in ast.unparse(node.value)
    )


def draft_is_target_when(tree: ast.Module) -> list[str]:
    """The `if` tests under which SpeculativeConfig.__post_init__ makes the target's own checkpoint the draft
    (`self.model = self.target_model_config.model`, from 0.29.0 its model_weights or model): the draft's
    ModelConfig then reads the target's config."""
    return [
        guard
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig"
        for guard in guards_of(node, _makes_target_the_draft)
    ]


def passes_spec_target(archive: zipfile.ZipFile, path: str) -> bool:
    """Whether ModelConfig hands its spec_target_max_model_len to _get_and_verify_max_len."""
    for node in ast.walk(ast.parse(archive.read(path))):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(derivation.FUNCTION):
            return any(k.arg == "spec_target_max_model_len" for k in node.keywords)
    return False


def run(
    verify: Any,
    key_method: Any,
    maybe_override: Any,
    case: dict[str, Any],
    speculative: int | None,
    target: int,
    given: bool,
    spec_target: bool,
    allow_long: bool = False,
) -> dict[str, Any]:
    config = derivation.hf_config(case)
    kwargs: dict[str, Any] = {
        "hf_config": config,
        "tokenizer_config": None,
        "max_model_len": speculative if given else None,
        "disable_sliding_window": False,
    }
    params = verify.__code__.co_varnames[: verify.__code__.co_argcount]
    kwargs["sliding_window" if "sliding_window" in params else "sliding_window_len"] = None
    if spec_target:
        kwargs["spec_target_max_model_len"] = target
    if "model_arch_config" in params:
        derived = key_method(derivation.SimpleNamespace(hf_text_config=config))
        kwargs["model_arch_config"] = derivation.SimpleNamespace(derived_max_model_len_and_key=derived)
    verify.__globals__["envs"] = derivation.SimpleNamespace(VLLM_ALLOW_LONG_MAX_MODEL_LEN=allow_long)
    try:
        draft = int(verify(**kwargs))
    except ValueError as exc:
        message = str(exc)
        if ".json)." in message:
            message = message.split(".json).", 1)[0] + ".json)."
        return {"step": "draft ModelConfig", "error": "ValueError", "message": message}
    try:
        return {"draft_max_model_len": draft, "max_model_len": maybe_override(speculative, draft, target)}
    except ValueError as exc:
        return {"step": override.FUNCTION, "error": "ValueError", "message": str(exc)}


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as archive:
        path, verify, key_method, _helpers = derivation.load(archive)
        speculative_path, tree = override.find_source(archive)
        spec_target = passes_spec_target(archive, path)
    maybe_override = override.load_function(tree)
    keywords = draft_model_config_keywords(tree)
    given = "max_model_len" in keywords
    return {
        "wheel": wheel.name,
        "sha256": sha256_file(wheel),
        "draft_model_config": f"{speculative_path}:SpeculativeConfig.__post_init__ ModelConfig(...)",
        "draft_given_max_model_len": keywords.get("max_model_len"),
        "draft_spec_target_max_model_len": keywords.get("spec_target_max_model_len"),
        "verify_reads_spec_target": spec_target,
        "draft_is_target_when": draft_is_target_when(tree),
        "probes": [
            {
                "case": name,
                "speculative": s,
                "target": t,
                "verdict": run(verify, key_method, maybe_override, case, s, t, given, spec_target),
            }
            for name, case in CASES.items()
            for s in SPECULATIVE
            for t in TARGET
        ],
        # The 2048-token head again with VLLM_ALLOW_LONG_MAX_MODEL_LEN set (the draft's ModelConfig warns
        # instead of refusing; SpeculativeConfig's own comparison does not read it).
        "allowed_long": [
            {
                "case": "head_2048",
                "speculative": s,
                "target": 8192,
                "verdict": run(
                    verify, key_method, maybe_override, CASES["head_2048"], s, 8192, given, spec_target, True
                ),
            }
            for s in (2048, 2049, 8192, 8193)
        ],
    }


def main() -> int:
    return run_release_probe(
        __doc__ or "",
        OUT,
        probe_release,
        "draft_given_max_model_len",
        "scripts/probe_vllm_draft_max_model_len.py",
    )


if __name__ == "__main__":
    raise SystemExit(main())
