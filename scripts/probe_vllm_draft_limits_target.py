#!/usr/bin/env python3
"""Read, in each vLLM release's wheel, whether VllmConfig lowers the target's max_model_len to the draft's,
run that function and the model-runner choice it depends on, and write the golden table
tests/golden/vllm_draft_limits_target.json.

    .venv/bin/python scripts/probe_vllm_draft_limits_target.py                    # every default release
    .venv/bin/python scripts/probe_vllm_draft_limits_target.py --versions 0.33.0  # some

Where a draft's max_model_len (its own config's context, or speculative.max_model_len) is shorter than the
target's, the V1 model runner skips speculation for longer sequences. vLLM 0.33.0's VllmConfig instead
lowers the whole engine's max_model_len to the draft's when the V2 model runner serves it and the draft
does not share the target's positions. Recorded per release:

- `lowers_when`: the `if` tests under which VllmConfig.__post_init__ calls `_limit_max_model_len_to_draft`
  (empty where the release has no such function);
- `probes`: that function, taken out of the wheel and run on stand-in configs (method, the draft's RoPE
  type, draft and target max_model_len, the runner), and the target max_model_len it leaves;
  `draft_shares_target_positions` is the wheel's own SpeculativeConfig method, run on the stand-in;
- `runner_probes` (releases that lower it): the wheel's `use_v2_model_runner` property with its
  `_get_v2_model_runner_unsupported_features`, run on stand-ins for VLLM_USE_V2_MODEL_RUNNER unset / 0 /
  1, P-EAGLE's parallel drafting, a DFlash draft's, a heterogeneous-vocabulary draft model and dual batch
  overlap.

Stubs: the logger, vllm.envs (only VLLM_USE_V2_MODEL_RUNNER, as maybe_convert_bool leaves it), HAS_TRITON
(True, as on a CUDA host), current_platform, and transformers' ALLOWED_LAYER_TYPES. Not executed: the rest
of VllmConfig.__post_init__.
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts import probe_vllm_max_model_len as derivation
from scripts.probe_vllm_draft_max_model_len import guards_of
from scripts.probe_vllm_draft_rope_cache import CONFIG_FILES as SPECULATIVE_FILES
from scripts.probe_vllm_draft_rope_cache import _compile, class_in_wheel
from scripts.vllm_release_extractor.records import run_release_probe, wheel_reader

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_draft_limits_target.json"
FUNCTION = "_limit_max_model_len_to_draft"
CONFIG_FILES = ("vllm/config.py", "vllm/config/__init__.py", "vllm/config/vllm.py")
# (method, draft RoPE type or None for none, draft max_model_len, target max_model_len, V2 runner): either
# side of equality, each RoPE kind (cache-only: default, linear, llama3; not: yarn, longrope, dynamic),
# an independent draft model, MTP, and the V1 runner.
PROBES: tuple[tuple[str, str | None, int, int, bool], ...] = (
    ("draft_model", None, 4095, 4096, True), ("draft_model", None, 4096, 4096, True),
    ("draft_model", None, 2048, 32768, True), ("draft_model", None, 2048, 32768, False),
    ("eagle3", None, 2048, 32768, True), ("eagle3", "llama3", 2048, 32768, True),
    ("eagle3", "linear", 2048, 32768, True), ("eagle3", "yarn", 2048, 32768, True),
    ("eagle3", "yarn", 2048, 32768, False), ("eagle3", "longrope", 4096, 8192, True),
    ("eagle3", "dynamic", 4096, 8192, True), ("eagle", "yarn", 4096, 4096, True),
    ("dflash", "yarn", 4096, 8192, True), ("mtp", "yarn", 4096, 8192, True),
)  # fmt: skip
# (VLLM_USE_V2_MODEL_RUNNER as maybe_convert_bool leaves it, method, parallel_drafting,
# use_heterogeneous_vocab, enable_dbo)
RUNNER_PROBES: tuple[tuple[bool | None, str, bool, bool, bool], ...] = (
    (None, "eagle3", False, False, False), (False, "eagle3", False, False, False),
    (True, "eagle3", False, False, False), (None, "eagle3", True, False, False),
    (True, "eagle3", True, False, False), (None, "dflash", True, False, False),
    (None, "draft_model", False, True, False), (None, "draft_model", False, False, True),
    (None, "draft_model", False, False, False),
)  # fmt: skip


def lowers_when(cls: ast.ClassDef) -> list[str]:
    return guards_of(
        cls,
        lambda node: isinstance(node, ast.Call) and ast.unparse(node.func).endswith(f"self.{FUNCTION}"),
    )


def _method(
    archive: zipfile.ZipFile, path: str, cls: ast.ClassDef, name: str, namespace: dict[str, Any]
) -> Any:
    """The class's method `name` (its property getter, where it is one) compiled out of the wheel's source
    into `namespace`, with what it uses from its module; None where the class has none."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            _compile(archive, path, ast.parse(archive.read(path)), node, namespace)
            return namespace[name]
    return None


def _namespace(v2_env: bool | None) -> dict[str, Any]:
    quiet = SimpleNamespace(info=lambda *a, **k: None, warning=lambda *a, **k: None)
    quiet.info_once = quiet.warning_once = quiet.info
    return {
        "logger": quiet,
        "envs": SimpleNamespace(VLLM_USE_V2_MODEL_RUNNER=v2_env),
        "HAS_TRITON": True,
        "current_platform": SimpleNamespace(is_unspecified=lambda: False),
        "PretrainedConfig": object,
        "PreTrainedConfig": object,
        "ALLOWED_LAYER_TYPES": derivation.ALLOWED_LAYER_TYPES,
    }


def _speculative(archive: zipfile.ZipFile, method: str, rope: str | None, draft_len: int) -> SimpleNamespace:
    path, cls = class_in_wheel(archive, SPECULATIVE_FILES, "SpeculativeConfig")
    hf_config = SimpleNamespace(max_position_embeddings=draft_len)
    if rope is not None:
        hf_config.rope_parameters = {
            "rope_type": rope,
            "factor": 4.0,
            "original_max_position_embeddings": 1024,
        }
    spec = SimpleNamespace(
        method=method, draft_model_config=SimpleNamespace(max_model_len=draft_len, hf_config=hf_config)
    )
    shares = _method(archive, path, cls, "draft_shares_target_positions", _namespace(None))
    spec.draft_shares_target_positions = (lambda: shares(spec)) if shares is not None else None
    return spec


def run_probes(archive: zipfile.ZipFile, path: str, cls: ast.ClassDef) -> list[dict[str, Any]]:
    limit = _method(archive, path, cls, FUNCTION, _namespace(None))
    probes = []
    for method, rope, draft_len, target_len, v2 in PROBES:
        probe: dict[str, Any] = {
            "method": method,
            "rope_type": rope,
            "draft_max_model_len": draft_len,
            "target_max_model_len": target_len,
            "v2_model_runner": v2,
        }
        if limit is not None:
            spec = _speculative(archive, method, rope, draft_len)
            vllm_config = SimpleNamespace(
                speculative_config=spec,
                model_config=SimpleNamespace(max_model_len=target_len),
                use_v2_model_runner=v2,
            )
            limit(vllm_config)
            probe["shares_target_positions"] = spec.draft_shares_target_positions()
            probe["left"] = vllm_config.model_config.max_model_len
        probes.append(probe)
    return probes


def run_runner_probes(archive: zipfile.ZipFile, path: str, cls: ast.ClassDef) -> list[dict[str, Any]]:
    out = []
    for env, method, parallel_drafting, heterogeneous, dbo in RUNNER_PROBES:
        namespace = _namespace(env)
        chooses = _method(archive, path, cls, "use_v2_model_runner", namespace)
        unsupported = _method(archive, path, cls, "_get_v2_model_runner_unsupported_features", namespace)
        dbo_unsupported = _method(archive, path, cls, "_get_dbo_unsupported_features", namespace)
        config = SimpleNamespace(
            attention_config=SimpleNamespace(hisparse_config=None),
            watermark_config=None,
            speculative_config=SimpleNamespace(
                method=method, parallel_drafting=parallel_drafting, use_heterogeneous_vocab=heterogeneous
            ),
            parallel_config=SimpleNamespace(
                distributed_executor_backend=None,
                pipeline_parallel_size=1,
                use_ubatching=dbo,
                enable_dbo=dbo,
            ),
            model_config=None,
            lora_config=None,
        )
        config._get_v2_model_runner_unsupported_features = lambda c=config, f=unsupported: f(c)
        config._get_dbo_unsupported_features = lambda c=config, f=dbo_unsupported: f(c)
        out.append(
            {
                "VLLM_USE_V2_MODEL_RUNNER": env,
                "method": method,
                "parallel_drafting": parallel_drafting,
                "use_heterogeneous_vocab": heterogeneous,
                "enable_dbo": dbo,
                "v2_model_runner": chooses(config),
            }
        )
    return out


def read_release(archive: zipfile.ZipFile) -> dict[str, Any]:
    path, cls = class_in_wheel(archive, CONFIG_FILES, "VllmConfig")
    when = lowers_when(cls)
    record: dict[str, Any] = {
        "vllm_config": path,
        "lowers_when": when,
        "probes": run_probes(archive, path, cls),
    }
    if when:
        record["runner_probes"] = run_runner_probes(archive, path, cls)
    return record


def main() -> int:
    return run_release_probe(
        __doc__ or "",
        OUT,
        wheel_reader(read_release),
        "lowers_when",
        "scripts/probe_vllm_draft_limits_target.py",
    )


if __name__ == "__main__":
    raise SystemExit(main())
