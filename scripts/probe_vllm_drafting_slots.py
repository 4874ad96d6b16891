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
num_speculative_tokens x parallel_drafting cases ("slots" per release). From 0.33.0 the method compares with
VllmConfig.num_lookahead_tokens, which the stand-in sets to `slots`; DFlash / DSpark branches are off.
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import version_key
from scripts.vllm_release_extractor.records import find_or_download, sha256_file, wheel_probe_parser

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_drafting_slots.json"
FUNCTION = "_set_max_num_scheduled_tokens"


SLOT_CASES = [
    {"method": method, "num_speculative_tokens": k, "parallel_drafting": parallel}
    for method in ("eagle3", "draft_model", "ngram", "mtp")
    for k in (1, 3, 5)
    for parallel in (False, True)
]


def load_slot_property(source: str) -> Any | None:
    """SpeculativeConfig.max_num_new_slots_for_drafting with the methods of the class it calls, alone."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name == "SpeculativeConfig":
            methods = [f for f in node.body if isinstance(f, ast.FunctionDef)]
            if not any(f.name == "max_num_new_slots_for_drafting" for f in methods):
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


def probes() -> list[dict[str, int]]:
    grid = []
    for slots in (0, 1, 2, 4, 6):
        for seqs in (1, 128, 256, 512):
            edges = {
                slots * seqs - 1,
                slots * seqs,
                slots * seqs + 1,
                slots - 1,
                slots,
                slots + 1,
                2048,
                8192,
            }
            for tokens in sorted(e for e in edges if e >= 1):
                grid.append({"slots": slots, "max_num_seqs": seqs, "max_num_batched_tokens": tokens})
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
        speculative_config=speculative, scheduler_config=scheduler, num_lookahead_tokens=probe["slots"]
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
    if method is None:
        record["function"] = None
        return record
    record["function"] = f"vllm/config/vllm.py:VllmConfig.{FUNCTION}"
    record["probes"] = [{"inputs": p, "verdict": run(method, p)} for p in probes()]
    return record


def main() -> int:
    args = wheel_probe_parser(__doc__, OUT).parse_args()
    table = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {"releases": {}}
    for version in args.versions:
        table["releases"][version] = probe_release(version, args.wheels_dir)
        print(version, table["releases"][version]["function"], flush=True)
    table["probed_by"] = "scripts/probe_vllm_drafting_slots.py"
    table["releases"] = dict(sorted(table["releases"].items(), key=lambda kv: version_key(kv[0])))
    args.out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
