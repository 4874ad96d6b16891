#!/usr/bin/env python3
"""Run each vLLM release's own VllmConfig._set_max_num_scheduled_tokens on a grid of settings and write
the golden table tests/golden/vllm_drafting_slots.json (which batch sizes leave no room for the draft
slots speculative decoding adds, and vLLM's words for it).

    .venv/bin/python scripts/probe_vllm_drafting_slots.py                    # every default release
    .venv/bin/python scripts/probe_vllm_drafting_slots.py --versions 0.20.0  # some

The method is read out of vllm/config/vllm.py (0.17.0 onward; absent before) with ast and executed
alone on a stand-in `self`: a scheduler config with max_num_batched_tokens, max_num_seqs and no
max_num_scheduled_tokens, and a speculative config whose max_num_new_slots_for_drafting is the probe's
`slots` (SpeculativeConfig computes it: num_speculative_tokens - 1 with parallel drafting, plus 1 for
a draft model; 0 otherwise). A stub logger stands in for vLLM's. The slot count itself is probed too: SpeculativeConfig's
max_num_new_slots_for_drafting property, with the class's other methods it calls, run on method x
num_speculative_tokens x parallel_drafting cases ("slots" per release). From 0.33.0 the method compares
max_num_batched_tokens with VllmConfig.num_lookahead_tokens instead, which the stand-in sets to the probe's
`lookahead` (a separate input, so a table that confuses the two would be caught); DFlash / DSpark branches are
off. That property is probed too where a release has it: VllmConfig.num_lookahead_tokens and
num_speculative_tokens, with SpeculativeConfig's methods they call, run on method x num_speculative_tokens
cases ("lookahead" per release; a DSpark draft config is left without sample_from_anchor, vLLM's default).
"""

from __future__ import annotations

import ast
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.records import (
    find_or_download,
    run_release_probe,
    sha256_file,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_drafting_slots.json"
FUNCTION = "_set_max_num_scheduled_tokens"


SLOT_CASES = [
    {"method": method, "num_speculative_tokens": k, "parallel_drafting": parallel}
    for method in ("eagle3", "draft_model", "ngram", "mtp")
    for k in (1, 3, 5)
    for parallel in (False, True)
]


LOOKAHEAD_CASES = [
    {"method": method, "num_speculative_tokens": k}
    for method in (
        "eagle",
        "eagle3",
        "mtp",
        "draft_model",
        "dflash",
        "dspark",
        "ngram",
        "ngram_gpu",
        "suffix",
    )
    for k in (1, 3, 5)
]


def load_class_methods(source: str, class_name: str, needs: str) -> Any | None:
    """A class's own methods and properties (not its dunders), alone on a bare class; None where the class
    lacks `needs`."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            methods = [f for f in node.body if isinstance(f, ast.FunctionDef)]
            if not any(f.name == needs for f in methods):
                return None
            for f in methods:
                f.decorator_list = [d for d in f.decorator_list if ast.unparse(d) == "property"]
            body = [f for f in methods if not f.name.startswith("__")]
            cls = ast.ClassDef(
                name="Stand", bases=[], keywords=[], body=body, decorator_list=[], type_params=[]
            )
            namespace: dict[str, Any] = {}
            exec(
                compile(ast.fix_missing_locations(ast.Module(body=[cls], type_ignores=[])), "<vllm>", "exec"),
                namespace,
            )
            return namespace["Stand"]
    return None


def load_slot_property(source: str) -> Any | None:
    """SpeculativeConfig.max_num_new_slots_for_drafting with the methods of the class it calls, alone."""
    return load_class_methods(source, "SpeculativeConfig", "max_num_new_slots_for_drafting")


def mtp_model_types(source: str) -> list[str]:
    """The MTPModelTypes literal: method names SpeculativeConfig.__post_init__ replaces with "mtp"."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "MTPModelTypes" for t in node.targets
        ):
            return sorted(
                c.value
                for c in ast.walk(node.value)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return []


def run_lookahead(vllm_stand: Any, spec_stand: Any, case: dict[str, Any]) -> Any:
    speculative = spec_stand.__new__(spec_stand)
    speculative.__dict__.update(case, draft_model_config=SimpleNamespace(hf_config=SimpleNamespace()))
    this = vllm_stand.__new__(vllm_stand)
    this.__dict__.update(speculative_config=speculative, diffusion_config=None)
    try:
        return this.num_lookahead_tokens
    except Exception as exc:  # a helper the stand-in lacks: recorded, not guessed
        return {"unrunnable": f"{type(exc).__name__}: {exc}"}


def run_slots(stand: Any, case: dict[str, Any]) -> Any:
    this = stand.__new__(stand)
    this.__dict__.update(
        case, draft_model_config=None, model="draft" if case["method"] == "draft_model" else None
    )
    try:
        return this.max_num_new_slots_for_drafting
    except Exception as exc:  # a helper the stand-in lacks: recorded, not guessed
        return {"unrunnable": f"{type(exc).__name__}: {exc}"}


class _Logger:
    def __getattr__(self, _name: str) -> Any:
        return lambda *args, **kwargs: None


def load_method(source: str) -> Any | None:
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == FUNCTION:
            node.decorator_list = []
            module = ast.Module(body=[node], type_ignores=[])
            namespace: dict[str, Any] = {"logger": _Logger()}
            exec(compile(module, "<vllm>", "exec"), namespace)  # the wheel's own function, alone
            return namespace[FUNCTION]
    return None


# (draft slots per request, num_lookahead_tokens): the two differ in most pairs, as they do in vLLM (EAGLE3
# at k = 5 adds no slot but looks 5 tokens ahead), so a rule comparing the wrong one fails some probe.
SLOT_LOOKAHEAD_PAIRS = ((0, 0), (0, 5), (1, 1), (1, 3), (2, 3), (4, 5), (6, 6))


def probes() -> list[dict[str, int]]:
    grid = []
    for slots, lookahead in SLOT_LOOKAHEAD_PAIRS:
        for seqs in (1, 128, 256, 512):
            edges = {2048, 8192}
            for n in (slots * seqs, slots, lookahead):
                edges |= {n - 1, n, n + 1}
            for tokens in sorted(e for e in edges if e >= 1):
                grid.append(
                    {
                        "slots": slots,
                        "lookahead": lookahead,
                        "max_num_seqs": seqs,
                        "max_num_batched_tokens": tokens,
                    }
                )
    return grid


def run(method: Any, probe: dict[str, int]) -> Any:
    scheduler = SimpleNamespace(
        max_num_batched_tokens=probe["max_num_batched_tokens"],
        max_num_seqs=probe["max_num_seqs"],
        max_num_scheduled_tokens=None,
        max_num_active_seqs=None,
    )
    speculative = SimpleNamespace(
        max_num_new_slots_for_drafting=probe["slots"],
        use_dflash=lambda: False,
        use_dspark=lambda: False,
        method="eagle3",
    )
    this = SimpleNamespace(
        speculative_config=speculative, scheduler_config=scheduler, num_lookahead_tokens=probe["lookahead"]
    )
    try:
        method(this)
    except ValueError as exc:
        return {"error": "ValueError", "message": str(exc)}
    return "ok"


def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
    wheel = find_or_download(version, wheels_dir)
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        source = zf.read("vllm/config/vllm.py").decode() if "vllm/config/vllm.py" in names else ""
        spec = "vllm/config/speculative.py"
        spec_source = zf.read(spec).decode() if spec in names else ""
    method = load_method(source)
    record: dict[str, Any] = {"wheel": wheel.name, "sha256": sha256_file(wheel)}
    stand = load_slot_property(spec_source)
    if stand is not None:
        record["slots"] = [{"inputs": c, "slots": run_slots(stand, c)} for c in SLOT_CASES]
    vllm_stand = load_class_methods(source, "VllmConfig", "num_lookahead_tokens")
    spec_stand = load_class_methods(spec_source, "SpeculativeConfig", "use_eagle")
    if vllm_stand is not None and spec_stand is not None:
        record["lookahead"] = [
            {"inputs": c, "lookahead": run_lookahead(vllm_stand, spec_stand, c)} for c in LOOKAHEAD_CASES
        ]
        record["mtp_model_types"] = mtp_model_types(spec_source)
    if method is None:
        record["function"] = None
        return record
    record["function"] = f"vllm/config/vllm.py:VllmConfig.{FUNCTION}"
    record["probes"] = [{"inputs": p, "verdict": run(method, p)} for p in probes()]
    return record


def main() -> int:
    return run_release_probe(
        __doc__ or "", OUT, probe_release, "function", "scripts/probe_vllm_drafting_slots.py"
    )


if __name__ == "__main__":
    raise SystemExit(main())
