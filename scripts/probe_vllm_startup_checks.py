#!/usr/bin/env python3
"""Run each vLLM release's own SchedulerConfig start-up checks on a grid of engine settings and write
the golden table tests/golden/vllm_startup_checks.json (which settings each release refuses, and how).

    .venv/bin/python scripts/probe_vllm_startup_checks.py                    # every default release
    .venv/bin/python scripts/probe_vllm_startup_checks.py --versions 0.11.0  # some

What it executes: the class SchedulerConfig is read out of the wheel (vllm/config.py,
vllm/config/__init__.py or vllm/config/scheduler.py) with ast, and its ``__post_init__`` plus the
verification method (``_verify_args`` up to 0.11.0, a pydantic after-validator that runs after
``__post_init__``; ``verify_max_model_len`` from 0.11.1, called by ``__post_init__``) are executed
alone, decorators and annotations stripped, on a stand-in ``self`` that carries the class body's
literal defaults overridden by the probe's values. The module-level names they read are the literal
constants of the wheel's own modules (followed through ``from vllm.x import NAME``) and a stub logger
whose warnings are recorded. An unset setting is one left out of a probe's inputs (the class default
applies); inputs naming a field a release does not have are dropped for that release.

What it cannot see: pydantic field validation (``Field(ge=1)`` and types) runs before
``__post_init__`` and is not executed; the declared constraints are recorded per release and the ones
a probe breaks are listed with it. EngineArgs (vllm/engine/arg_utils.py), which picks the values
handed to SchedulerConfig, and VllmConfig's later checks are not executed; the literal per-usage-context
default tables of arg_utils.py are recorded as text-derived data under "defaults".
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import itertools
import json
import operator
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import version_key
from scripts.vllm_release_extractor.records import sha256_file, wheel_probe_parser

OUT = Path(__file__).resolve().parent.parent / "tests" / "golden" / "vllm_startup_checks.json"
MODULES = ("vllm/config/scheduler.py", "vllm/config/__init__.py", "vllm/config.py")
VERIFIERS = ("_verify_args", "verify_max_model_len")
WATCHED = ("enable_chunked_prefill", "long_prefill_token_threshold", "max_num_batched_tokens")
TABLES = ("default_max_num_batched_tokens", "default_max_num_seqs", "default_max_num_batched_tokens_tpu")
BOUNDS = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt}
PARTIAL = ("enable_chunked_prefill", "max_num_partial_prefills", "max_long_partial_prefills")


def probe_grid() -> list[dict[str, Any]]:
    """Both sides of every comparison the functions make, as explicit settings (unset = left out)."""
    probes: list[dict[str, Any]] = []
    for mml, mns, chunked in itertools.product((4096, 32768), (1, 256, 1024), (True, False)):
        base = {"max_model_len": mml, "max_num_seqs": mns, "enable_chunked_prefill": chunked}
        probes.append(dict(base))  # max_num_batched_tokens unset
        for mbt in sorted({mml - 1, mml, mml + 1, mns - 1, mns, mns * mml, mns * mml + 1}):
            probes.append({**base, "max_num_batched_tokens": mbt})
    base = {"max_model_len": 4096, "max_num_seqs": 256, "max_num_batched_tokens": 8192}
    for values in itertools.product((True, False), (0, 1, 2), (0, 1, 2, 3), (0, 4095, 4096, 4097)):
        probes.append(base | dict(zip((*PARTIAL, "long_prefill_token_threshold"), values, strict=True)))
    base = {**base, "enable_chunked_prefill": True}
    probes += [{**base, "num_lookahead_slots": n} for n in (-1, 0, 1)]
    probes += [{**base, "num_scheduler_steps": n} for n in (0, 1, 2)]
    probes += [{**base, "max_num_active_seqs": n} for n in (255, 256, 257)]
    for mbt, enc_dec in itertools.product((4095, 4096), (False, True)):
        probes.append({**base, "max_num_batched_tokens": mbt, "is_encoder_decoder": enc_dec})
    unset = ("max_model_len", "enable_chunked_prefill", "runner_type", "is_multimodal_model")
    for values in itertools.product(
        (1024, 4096, 32768), (True, False), ("generate", "pooling"), (False, True)
    ):
        probes.append({"max_num_seqs": 256} | dict(zip(unset, values, strict=True)))
    return probes


def literal(node: ast.AST | None, names: dict[str, Any]) -> Any:
    """A literal, a name bound to one, an empty list()/dict(), or arithmetic of those; else ValueError."""
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.Name) and node.id in ("list", "dict"):  # a default_factory
        return [] if node.id == "list" else {}
    if isinstance(node, ast.BinOp):
        left, right = ast.Constant(literal(node.left, names)), ast.Constant(literal(node.right, names))
        return eval(compile(ast.Expression(ast.BinOp(left, node.op, right)), "", "eval"))
    return ast.literal_eval(node)


def find_class(archive: zipfile.ZipFile) -> tuple[str, ast.Module, ast.ClassDef]:
    for name in (n for n in MODULES if n in archive.namelist()):
        tree = ast.parse(archive.read(name))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == "SchedulerConfig":
                return name, tree, node
    raise RuntimeError("no SchedulerConfig in " + ", ".join(MODULES))


def class_body(cls: ast.ClassDef, consts: dict[str, Any]) -> tuple[dict, dict, dict, dict]:
    """(field defaults, ClassVars, InitVar defaults (None: has none), pydantic Field bounds) of the class."""
    fields, classvars, initvars, constraints = {}, {}, {}, {}
    for node in cls.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            continue
        name, annotation, value = node.target.id, ast.unparse(node.annotation), node.value
        if isinstance(value, ast.Call) and ast.unparse(value.func) in ("Field", "field"):
            keywords = {k.arg: k.value for k in value.keywords}
            if bounds := {k: literal(v, consts) for k, v in keywords.items() if k in BOUNDS}:
                constraints[name] = bounds
            value = keywords.get("default", keywords.get("default_factory"))
        if "InitVar" in annotation:
            initvars[name] = None if value is None else literal(value, consts)
        elif value is not None:
            with contextlib.suppress(ValueError):
                (classvars if "ClassVar" in annotation else fields)[name] = literal(value, classvars | consts)
    return fields, classvars, initvars, constraints


def module_constants(archive: zipfile.ZipFile, tree: ast.Module, wanted: set[str]) -> dict[str, Any]:
    """Literal values of the wanted names, bound in the module or imported from another vllm module."""
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in wanted:
                with contextlib.suppress(ValueError):
                    found[node.targets[0].id] = literal(node.value, found)
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("vllm"):
            names = {a.name for a in node.names if (a.asname or a.name) in wanted and a.asname is None}
            base = node.module.replace(".", "/")
            for path in (base + ".py", base + "/__init__.py"):
                if names and path in archive.namelist():
                    found |= module_constants(archive, ast.parse(archive.read(path)), names)
    return found


def strip(function: ast.FunctionDef) -> ast.FunctionDef:
    """The function without decorators or annotations, so it defines with no imports."""
    function.decorator_list, function.returns = [], None
    for arg in function.args.args + function.args.kwonlyargs:
        arg.annotation = None
    return function


def self_attributes(function: ast.AST) -> set[str]:
    return {
        n.attr for n in ast.walk(function) if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "self"
    }


def methods_needed(cls: ast.ClassDef, verifier: str) -> dict[str, ast.FunctionDef]:
    """__post_init__, the verifier, and every class method those call on self, transitively."""
    defs = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    needed, todo = {}, ["__post_init__", verifier]
    while todo:
        name = todo.pop()
        if name in needed or name not in defs:
            continue
        needed[name] = defs[name]
        todo += sorted(self_attributes(defs[name]))
    return {name: strip(node) for name, node in needed.items()}


def free_names(functions: dict[str, ast.FunctionDef]) -> set[str]:
    names: set[str] = set()
    for function in functions.values():
        bound = {a.arg for a in function.args.args}
        for node in ast.walk(function):
            if isinstance(node, ast.Name):
                (names if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        names -= bound
    return names - set(dir(builtins))


class StubLogger:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str, *args: Any, **_: Any) -> None:
        self.warnings.append(message % args if args else message)

    def info(self, *_: Any, **__: Any) -> None:
        pass

    warning_once, info_once, debug = warning, info, info


def build_stand_in(functions: dict[str, ast.FunctionDef], namespace: dict[str, Any], classvars: dict) -> type:
    exec(compile(ast.Module(list(functions.values()), []), "SchedulerConfig", "exec"), namespace)
    return type("SchedulerConfigStandIn", (), classvars | {n: namespace[n] for n in functions})


def violated(inputs: dict[str, Any], constraints: dict[str, dict[str, Any]]) -> list[str]:
    return [
        f"{name} {op} {bound}"
        for name, bounds in sorted(constraints.items())
        for op, bound in sorted(bounds.items())
        if isinstance(inputs.get(name), int | float) and not BOUNDS[op](inputs[name], bound)
    ]


def run_probe(
    stand_in: type, then_call: str | None, fields: dict, initvars: dict, inputs: dict, log: StubLogger
) -> dict:
    """Execute __post_init__ (then the verifier, when __post_init__ does not call it) on one probe."""
    self = stand_in()
    self.__dict__.update(fields)
    self.__dict__.update({k: v for k, v in inputs.items() if k not in initvars})
    init_args = [inputs.get(name, default) for name, default in initvars.items()]
    before = {name: getattr(self, name, None) for name in WATCHED}
    log.warnings.clear()
    try:
        stand_in.__post_init__(self, *init_args)
        if then_call:
            getattr(stand_in, then_call)(self)
        verdict: Any = "ok"
    except Exception as error:  # the wheel's own refusal, whatever its type
        verdict = {"error": type(error).__name__, "message": str(error)}
    record: dict[str, Any] = {"inputs": inputs, "verdict": verdict}
    after = {n: getattr(self, n, None) for n in WATCHED if getattr(self, n, None) != before[n]}
    if after:
        record["after_post_init"] = after
    if log.warnings:
        record["warnings"] = list(log.warnings)
    return record


def engine_defaults(archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    """Each literal default table of vllm/engine/arg_utils.py with the conditions that select it."""
    tree = ast.parse(archive.read("vllm/engine/arg_utils.py"))
    rows: list[dict[str, Any]] = []

    def visit(body: list[ast.stmt], function: str, when: list[str]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                visit(node.body, function, [*when, ast.unparse(node.test)])
                visit(node.orelse, function, [*when, f"not ({ast.unparse(node.test)})"])
            elif isinstance(node, ast.Try):
                visit(node.body, function, when)
            elif isinstance(node, ast.Assign) and (target := ast.unparse(node.targets[0])) in TABLES:
                condition = " and ".join(when) or "always"
                rows.append({"function": function, "table": target, "when": condition})
                rows[-1]["values"] = table_value(node.value)

    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            visit(node.body, node.name, [])
    return rows


def table_value(node: ast.expr) -> Any:
    """A default table: {usage context or chip: number}, a non-literal value as its source text."""
    if isinstance(node, ast.Dict):
        pairs = zip(node.keys, node.values, strict=True)
        return {
            ast.unparse(k).removeprefix("UsageContext.").strip("'"): table_value(v) for k, v in pairs if k
        }
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def probe_release(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as archive:
        module, tree, cls = find_class(archive)
        verifier = next(n.name for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in VERIFIERS)
        functions = methods_needed(cls, verifier)
        wanted = free_names(functions) - {"logger"}
        consts = module_constants(archive, tree, wanted | {"DEFAULT_MAX_NUM_BATCHED_TOKENS"})
        fields, classvars, initvars, constraints = class_body(cls, consts)
        release: dict[str, Any] = {
            "wheel": wheel.name,
            "sha256": sha256_file(wheel),
            "function": f"{module}:SchedulerConfig.{verifier}",
            "executed": sorted(functions),
            "field_constraints": constraints,
            "defaults": {
                "scheduler_config_fields": {k: v for k, v in fields.items() if not isinstance(v, list)},
                "scheduler_config_classvars": classvars,
                "scheduler_config_initvars": initvars,
                "module_constants": consts,
                "engine_args_tables": engine_defaults(archive),
            },
        }
    missing = sorted(wanted - consts.keys())
    if missing:
        release["not_executed"] = f"module-level names with no literal value in the wheel: {missing}"
        return release
    log = StubLogger()
    calls_verifier = verifier in self_attributes(functions["__post_init__"])
    stand_in = build_stand_in(functions, {"logger": log, **consts}, classvars)
    known = set(fields) | set(initvars)
    grid = ({k: v for k, v in probe.items() if k in known} for probe in probe_grid())
    release["probes"] = []
    for inputs in {json.dumps(inputs, sort_keys=True): inputs for inputs in grid}.values():
        record = run_probe(stand_in, None if calls_verifier else verifier, fields, initvars, inputs, log)
        if broken := violated(inputs, constraints):
            record["field_constraints_violated"] = broken
        release["probes"].append(record)
    return release


def main() -> int:
    args = wheel_probe_parser(__doc__, OUT).parse_args()
    table = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {"releases": {}}
    for version in args.versions:
        wheels = sorted((args.wheels_dir / version).glob(f"vllm-{version}-*.whl"))
        if not wheels:
            print(f"{version}: no wheel under {args.wheels_dir / version}", file=sys.stderr)
            return 1
        table["releases"][version] = probe_release(wheels[0])
        print(f"{version}: {table['releases'][version]['function']}", file=sys.stderr)
    table["probed_by"] = "scripts/probe_vllm_startup_checks.py"
    table["releases"] = dict(sorted(table["releases"].items(), key=lambda kv: version_key(kv[0])))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(table, indent=1, sort_keys=True, ensure_ascii=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
