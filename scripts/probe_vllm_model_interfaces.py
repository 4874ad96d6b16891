#!/usr/bin/env python3
"""Read each vLLM release's wheel and write the golden table tests/golden/vllm_model_interfaces.json:
which registry architectures implement EAGLE3 and multimodal interfaces, which checks refuse them,
and each quantization method's minimum GPU capability.

    .venv/bin/python scripts/probe_vllm_model_interfaces.py                    # every default release
    .venv/bin/python scripts/probe_vllm_model_interfaces.py --versions 0.13.0  # some

It also writes what rules SI414 / SI415 read, speculative_infra/catalog/data/vllm_model_interfaces.json
(the EAGLE3 and multimodal architectures and quantization floors per release), a projection of the same
reading; `--project-only` rewrites it from the golden table without reading the wheels again.

Nothing is imported or installed: the wheel's .py files are read with zipfile and parsed with ast.
- Architectures: the module-level ``_*_MODELS`` dicts of vllm/model_executor/models/registry.py,
  evaluated from the wheel's own literals (a ``**{...}`` splat is evaluated, without builtins,
  against the dicts already read). Each ``(module, class)`` is resolved to its ClassDef through
  the module's definitions, aliases and imports, and its bases are followed transitively. A class
  implements an interface when SupportsEagle3 / SupportsMultiModal / SupportsPP of
  vllm/model_executor/models/interfaces.py is among them. ``multimodal_architectures`` is the
  ``_MULTIMODAL_MODELS`` keys plus any architecture whose class has SupportsMultiModal.
- Checks: ``raise`` statements whose message or enclosing ``if`` tests match a pattern, with the
  file, Class.function, message (f-string fields shown as {expr}) and the guarding condition.
- Quantization: every class under vllm/model_executor/layers/quantization/ with a
  get_min_capability, keyed by its literal get_name() (schemes without get_name by path:Class),
  and by every ``--quantization`` name get_quantization_config's dict maps to a class; the value
  when the body is one literal ``return`` (inherited ones followed), otherwise "unknown: <source>".
What it cannot see: interfaces gained at runtime (classes built by a function call or ``type()``,
attributes set after definition, Protocols satisfied structurally without subclassing), checks
made without a ``raise`` in the scanned files, and code paths a config flag selects.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import version_key
from scripts.vllm_release_extractor.records import sha256_file, wheel_probe_parser

ROOT = Path(__file__).resolve().parent.parent
MODELS = "vllm.model_executor.models"
INTERFACES = f"{MODELS}.interfaces"
QUANT_DIR = "vllm/model_executor/layers/quantization/"
EAGLE3_RE = re.compile(r"eagle.?3", re.I)
MM_RE = re.compile(r"multi.?modal|\bmm_|_mm\b|mm_inputs|is_multimodal", re.I)
Found = tuple[str, ast.ClassDef] | str  # (module, class) or why it was not found


class Wheel:
    """The wheel's vllm/**/*.py sources, parsed on demand."""

    def __init__(self, path: Path) -> None:
        with zipfile.ZipFile(path) as archive:
            self.sources = {
                name: archive.read(name).decode("utf-8", errors="replace")
                for name in archive.namelist()
                if name.startswith("vllm/") and name.endswith(".py")
            }
        self._trees: dict[str, ast.Module | None] = {}

    def path_of(self, module: str) -> str | None:
        base = module.replace(".", "/")
        return next((p for p in (f"{base}.py", f"{base}/__init__.py") if p in self.sources), None)

    def tree(self, module: str) -> ast.Module | None:
        if module not in self._trees:
            path = self.path_of(module)
            self._trees[module] = ast.parse(self.sources[path]) if path else None
        return self._trees[module]


def absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join(parts + ([node.module] if node.module else []))


def top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module statements, with those nested in if/try blocks (TYPE_CHECKING, platform, optional
    imports); later ones win a lookup, so an ``else:`` (CUDA, runtime) branch beats its ``if``."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If | ast.Try):
            out += top_level([*stmt.body, *stmt.orelse])
    return out


def imported(wheel: Wheel, module: str, stmt: ast.stmt, name: str) -> tuple[str, str] | None:
    """(module, name) that `name` is bound to by an import statement, if it binds it."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        for alias in stmt.names:
            if (alias.asname or alias.name) == name:
                if isinstance(stmt, ast.Import):
                    return alias.name, ""
                package = (wheel.path_of(module) or "").endswith("__init__.py")
                return absolute(module, stmt, package), alias.name
    return None


def lookup(wheel: Wheel, module: str, name: str, depth: int = 0) -> Found:
    """The ClassDef `name` means in `module`, or "external"/a reason it could not be resolved."""
    tree = wheel.tree(module)
    if tree is None or depth > 20:
        return "external" if not module.startswith("vllm") else f"no module {module}"
    for stmt in reversed(top_level(tree.body)):
        if isinstance(stmt, ast.ClassDef) and stmt.name == name:
            return module, stmt
        if source := imported(wheel, module, stmt, name):
            return lookup(wheel, *source, depth + 1)
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", "") == name for t in stmt.targets):
            if isinstance(stmt.value, ast.Name):
                return lookup(wheel, module, stmt.value.id, depth + 1)
            return f"{module}.{name} = {ast.unparse(stmt.value)[:80]}"
    return "external" if hasattr(builtins, name) else f"{module}.{name} not found"


def resolve_base(wheel: Wheel, module: str, base: ast.expr) -> Found:
    base = base.value if isinstance(base, ast.Subscript) else base
    if isinstance(base, ast.Name):
        return lookup(wheel, module, base.id)
    if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):  # e.g. interfaces.X
        for stmt in top_level(getattr(wheel.tree(module), "body", [])):
            if source := imported(wheel, module, stmt, base.value.id):
                return lookup(wheel, ".".join(filter(None, source)), base.attr)
    return "external"


def ancestors(wheel: Wheel, found: tuple[str, ast.ClassDef], unresolved: set[str]) -> dict[str, Any]:
    """ "module.Class" -> (module, ClassDef) for `found` and its bases, transitively, in DFS order."""
    seen: dict[str, Any] = {}
    stack = [found]
    while stack:
        module, node = stack.pop()
        if f"{module}.{node.name}" in seen:
            continue
        seen[f"{module}.{node.name}"] = (module, node)
        for base in reversed(node.bases):
            result = resolve_base(wheel, module, base)
            if isinstance(result, tuple):
                stack.append(result)
            elif result != "external":
                unresolved.add(f"base {ast.unparse(base)} of {module}.{node.name}: {result}")
    return seen


def registry(wheel: Wheel) -> dict[str, dict[str, tuple[str, str]]]:
    """dict name -> {architecture: (module, class)}, from registry.py's own literals."""
    tree = wheel.tree(f"{MODELS}.registry")
    tables: dict[str, Any] = {}
    for stmt in tree.body if tree else []:
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) else getattr(stmt, "target", None)
        name = getattr(target, "id", "")
        value = getattr(stmt, "value", None)
        if not re.fullmatch(r"_[A-Z0-9_]*MODELS", name) or not isinstance(value, ast.Dict):
            continue
        table: dict[str, Any] = {}
        for key, item in zip(value.keys, value.values, strict=True):
            if key is None:
                code = compile(ast.Expression(item), "registry.py", "eval")
                table.update(eval(code, {"__builtins__": {}, **tables}))  # the wheel's own splat
            else:
                table[ast.literal_eval(key)] = ast.literal_eval(item)
        tables[name] = table
    return {
        name: {arch: tuple(v[:2]) for arch, v in table.items() if isinstance(v, tuple)}
        for name, table in tables.items()
        if any(isinstance(v, tuple) for v in table.values())
    }


def interfaces_of(wheel: Wheel, tables: dict[str, dict[str, tuple[str, str]]]) -> dict[str, Any]:
    archs = {arch: target for table in tables.values() for arch, target in table.items()}
    eagle3, multimodal, unresolved = set(), set(tables.get("_MULTIMODAL_MODELS", {})), set()
    pipeline: set[str] = set()
    pipeline_unknown: set[str] = set()
    for arch, (module, cls) in sorted(archs.items()):
        found = lookup(wheel, module if module.startswith("vllm.") else f"{MODELS}.{module}", cls)
        if isinstance(found, str):
            unresolved.add(f"{arch}: {found}")
            pipeline_unknown.add(arch)
            continue
        missing: set[str] = set()
        names = ancestors(wheel, found, missing)
        unresolved |= missing
        if missing:
            pipeline_unknown.add(arch)  # a base not followed may carry SupportsPP
        if f"{INTERFACES}.SupportsEagle3" in names:
            eagle3.add(arch)
        if f"{INTERFACES}.SupportsMultiModal" in names:
            multimodal.add(arch)
        if f"{INTERFACES}.SupportsPP" in names:
            pipeline.add(arch)
    defined = {n.name for n in getattr(wheel.tree(INTERFACES), "body", []) if isinstance(n, ast.ClassDef)}
    return {
        # What resolve_model_cls looks an architecture up in (self.models, built from _VLLM_MODELS): one
        # not there loads through the Transformers backend, when transformers has a compatible class.
        "registered_architectures": sorted(tables.get("_VLLM_MODELS", {})),
        "transformers_backend_architectures": sorted(tables.get("_TRANSFORMERS_BACKEND_MODELS", {})),
        "eagle3_interface_defined": "SupportsEagle3" in defined,
        "eagle3_architectures": sorted(eagle3),
        "multimodal_architectures": sorted(multimodal),
        # ModelConfig.verify_with_parallel_config refuses pipeline_parallel_size > 1 for any other class.
        "pipeline_parallel_architectures": sorted(pipeline),
        "pipeline_parallel_unresolved": sorted(pipeline_unknown),
        "unresolved": sorted(unresolved),
    }


def message(node: ast.expr | None) -> str:
    if isinstance(node, ast.Call):
        return message(node.args[0]) if node.args else ""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.JoinedStr):
        return "".join(message(v) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return "{" + ast.unparse(node.value) + "}"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return message(node.left) + message(node.right)
    return ast.unparse(node) if node is not None else ""


def events(path: str, source: str) -> list[dict[str, str]]:
    """Every raise, call and def in a file: where, what, and the if tests it sits under."""
    out: list[dict[str, str]] = []

    def walk(node: ast.AST, scope: tuple[str, ...], tests: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            where = {"raised_in": f"{path}:{'.'.join(scope) or '<module>'}", "condition": " and ".join(tests)}
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                raising = any(isinstance(n, ast.Raise) for n in ast.walk(child))
                out.append({"def": child.name, "raising": str(raising), **where})
                walk(child, (*scope, child.name), tests)
                continue
            if isinstance(child, ast.If):
                walk(child.test, scope, tests)
                for branch, test in ((child.body, ast.unparse(child.test)), (child.orelse, None)):
                    guard = (*tests, test or f"not ({ast.unparse(child.test)})")
                    walk(ast.Module(branch, []), scope, guard)
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                out.append({"exception": ast.unparse(exc), "message": message(child.exc), **where})
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute | ast.Name):
                out.append({"call": getattr(child.func, "attr", getattr(child.func, "id", "")), **where})
            walk(child, scope, tests)

    walk(ast.parse(source), (), ())
    return out


def eagle3_checks(wheel: Wheel) -> dict[str, Any]:
    """The raise refusing a target without SupportsEagle3 (the engine's own first, vllm/v1/...; the
    others listed) and the one refusing a target model_type outside an allow-list."""
    interface: list[dict[str, str]] = []
    allowlist: list[dict[str, str]] = []
    for path, source in sorted(wheel.sources.items()):
        if not EAGLE3_RE.search(source):
            continue
        for item in (e for e in events(path, source) if "message" in e):
            text, guard = item["message"], item["condition"].rsplit(" and ", 1)[-1]
            if "supports_eagle3" in guard or (EAGLE3_RE.search(text) and "interface" in text):
                interface.append(item)
            elif EAGLE3_RE.search(text + item["condition"]) and "only supported" in text:
                allowlist.append(item)
    interface.sort(
        key=lambda e: (not e["raised_in"].startswith("vllm/v1/"), "gpu_model_runner" not in e["raised_in"])
    )
    return {
        "eagle3_interface_check": interface[0] if interface else None,
        "eagle3_interface_check_also_in": sorted(e["raised_in"] for e in interface[1:]),
        "eagle3_allowlist_check": allowlist[0] if allowlist else None,
    }


def pipeline_parallel_check(wheel: Wheel) -> dict[str, str] | None:
    """The raise refusing pipeline parallelism for a model class without SupportsPP."""
    for path, source in sorted(wheel.sources.items()):
        if not path.startswith("vllm/config") or "is_pp_supported_model" not in source:
            continue
        for item in events(path, source):
            if "message" in item and "is_pp_supported_model" in item["condition"]:
                return item
    return None


def multimodal_refusals(wheel: Wheel) -> list[dict[str, Any]]:
    """Raises in the spec-decode proposers and SpeculativeConfig guarded by, or about, multimodality,
    with the calls of the raising helper (and their conditions) and the overrides that drop it."""
    found = []
    for path, source in sorted(wheel.sources.items()):
        if path.startswith("vllm/v1/spec_decode/"):
            found += events(path, source)
        elif path in ("vllm/config/speculative.py", "vllm/config.py"):
            found += [e for e in events(path, source) if ":SpeculativeConfig" in e["raised_in"]]
    out = []
    for item in (e for e in found if "message" in e and MM_RE.search(e["message"] + " " + e["condition"])):
        helper = item["raised_in"].rsplit(".", 1)[-1]
        helper = "" if helper.startswith("__") else helper  # callers and overrides of helpers only
        calls = [f"{e['raised_in']} if {e['condition'] or 'True'}" for e in found if e.get("call") == helper]
        drops = [e["raised_in"] for e in found if e.get("def") == helper and e["raising"] == "False"]
        methods = re.findall(r"['\"]([a-z][a-z_0-9]+)['\"]", " ".join([item["condition"], *calls]))
        extra = {"called_from": sorted(calls), "overridden_without_raise_in": sorted(drops)}
        out.append({**item, **extra, "methods_in_conditions": sorted(set(methods))})
    return out


def floor(wheel: Wheel, found: tuple[str, ast.ClassDef]) -> tuple[Any, Any, bool]:
    """(get_min_capability, get_name, whether the class defines get_name itself) of a class."""
    chain = [v for k, v in ancestors(wheel, found, set()).items() if ".base_config." not in k]
    own = any(getattr(item, "name", "") == "get_name" for item in found[1].body)
    return first_body(chain, "get_min_capability", wheel), first_body(chain, "get_name", wheel), own


def min_capabilities(wheel: Wheel) -> dict[str, Any]:
    """get_name() -> get_min_capability() for every quantization class defining or inheriting one;
    schemes and configs without a literal get_name by path:Class."""
    methods: dict[str, Any] = {}
    schemes: dict[str, Any] = {}
    for path in sorted(p for p in wheel.sources if p.startswith(QUANT_DIR)):
        module = path.removesuffix(".py").replace("/", ".")
        for node in (n for n in ast.parse(wheel.sources[path]).body if isinstance(n, ast.ClassDef)):
            capability, name, own = floor(wheel, (module, node))
            if capability is None or (name is None and "NotImplementedError" in str(capability)):
                continue  # no floor, or an abstract base's
            if isinstance(name, str) and not name.startswith("unknown") and (own or name not in methods):
                methods[name] = capability  # a subclass inheriting get_name never shadows it
            elif node.name.endswith("Config") or "scheme" in path:
                schemes[f"{path.removeprefix(QUANT_DIR)}:{node.name}"] = capability
    return {
        "quantization_min_capability": methods,
        "quantization_scheme_min_capability": schemes,
        "quantization_method_min_capability": method_floors(wheel),
    }


def method_floors(wheel: Wheel) -> dict[str, Any]:
    """`--quantization` name -> floor of the class get_quantization_config's dict maps it to."""
    package = QUANT_DIR.rstrip("/").replace("/", ".")
    body = getattr(wheel.tree(package), "body", [])
    function = next((n for n in body if getattr(n, "name", "") == "get_quantization_config"), None)
    nodes = list(ast.walk(function)) if function else []
    imports = [n for n in nodes if isinstance(n, ast.ImportFrom)]
    table = next((n.value for n in nodes if isinstance(getattr(n, "value", None), ast.Dict)), None)
    out: dict[str, Any] = {}
    for key, value in zip(getattr(table, "keys", []), getattr(table, "values", []), strict=True):
        if isinstance(key, ast.Constant) and isinstance(value, ast.Name):
            source = next(filter(None, (imported(wheel, package, s, value.id) for s in imports)), None)
            found = lookup(wheel, *source) if source else lookup(wheel, package, value.id)
            out[key.value] = floor(wheel, found)[0] if isinstance(found, tuple) else f"unresolved: {found}"
    return out


def first_body(chain: list[tuple[str, ast.ClassDef]], method: str, wheel: Wheel) -> Any:
    """The literal a method returns, from the first class in the MRO-ish chain defining it."""
    for module, node in chain:
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and item.name == method:
                body = [s for s in item.body if not isinstance(s, ast.Expr)]
                if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                    try:
                        return ast.literal_eval(body[0].value)
                    except ValueError:
                        pass
                source = wheel.sources[wheel.path_of(module) or ""]
                snippet = " ".join((ast.get_source_segment(source, item) or "").split())
                return f"unknown: {snippet[:300]}"
    return None


def probe(version: str, wheels_dir: Path) -> dict[str, Any]:
    matches = sorted((wheels_dir / version).glob(f"vllm-{version}-*.whl"))
    if not matches:
        raise SystemExit(f"{version}: no wheel under {wheels_dir / version}")
    path = matches[0]
    wheel = Wheel(path)
    return {
        "wheel": path.name,
        "sha256": sha256_file(path),
        **interfaces_of(wheel, registry(wheel)),
        **eagle3_checks(wheel),
        "multimodal_draft_refusals": multimodal_refusals(wheel),
        "pipeline_parallel_check": pipeline_parallel_check(wheel),
        **min_capabilities(wheel),
    }


def main() -> int:
    parser = wheel_probe_parser(__doc__, ROOT / "tests" / "golden" / "vllm_model_interfaces.json")
    parser.add_argument("--catalog-out", type=Path, default=CATALOG_OUT)
    parser.add_argument("--project-only", action="store_true", help="rewrite --catalog-out from --out only")
    args = parser.parse_args()
    if args.project_only:
        table = json.loads(args.out.read_text(encoding="utf-8"))
        args.catalog_out.write_text(
            json.dumps(catalog_projection(table), indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        return 0
    table = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {"releases": {}}
    for version in args.versions:
        table["releases"][version] = probe(version, args.wheels_dir)
        print(f"{version}: {len(table['releases'][version]['eagle3_architectures'])} EAGLE3", file=sys.stderr)
    table["source"] = "vllm wheels from PyPI, read with zipfile and ast (never imported)"
    table["probed_by"] = "scripts/probe_vllm_model_interfaces.py"
    table["releases"] = dict(sorted(table["releases"].items(), key=lambda kv: version_key(kv[0])))
    args.out.write_text(
        json.dumps(table, indent=1, sort_keys=True, ensure_ascii=True) + "\n", encoding="utf-8"
    )
    args.catalog_out.write_text(
        json.dumps(catalog_projection(table), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return 0


# compressed-tensors scheme classes by the names the library's model facts use (quantization_scheme).
SCHEME_CLASSES = {
    "CompressedTensorsWNA16": "wna16",
    "CompressedTensorsW8A16Fp8": "w8a16_fp8",
    "CompressedTensorsW8A8Fp8": "w8a8_fp8",
    "CompressedTensorsW8A8Int8": "w8a8_int8",
    "CompressedTensorsW4A16Fp4": "w4a16_nvfp4",
    "CompressedTensorsW4A4Fp4": "w4a4_nvfp4",
}
CATALOG_OUT = ROOT / "speculative_infra" / "catalog" / "data" / "vllm_model_interfaces.json"


def catalog_projection(table: dict[str, Any]) -> dict[str, Any]:
    """What the rules read (catalog/data/vllm_model_interfaces.json): per release, the architectures whose
    class implements the EAGLE3 interface (null where the release has no interface check) and the
    architectures vLLM registers as multimodal, and each --quantization method's get_min_capability()."""
    releases = {
        version: {
            "wheel": record["wheel"],
            "eagle3_architectures": record["eagle3_architectures"]
            if record["eagle3_interface_check"]
            else None,
            "multimodal_architectures": record["multimodal_architectures"],
            # Stored as the registered architectures without SupportsPP (the shorter list), leaving out those
            # whose bases the reading could not follow: not judged.
            "architectures_without_pipeline_parallel": sorted(
                set(record["registered_architectures"])
                - set(record["pipeline_parallel_architectures"])
                - set(record["pipeline_parallel_unresolved"])
            )
            if record["pipeline_parallel_check"]
            else None,
            "pipeline_parallel_refusal": (record["pipeline_parallel_check"] or {}).get("message"),
            "registered_architectures": record["registered_architectures"],
            "transformers_backend_architectures": record["transformers_backend_architectures"],
            "quantization_min_capability": {
                name: f"{value // 10}.{value % 10}"
                for name, value in record["quantization_method_min_capability"].items()
                if isinstance(value, int) and value > 0
            },
            "compressed_tensors_scheme_min_capability": {
                SCHEME_CLASSES[path.rsplit(":", 1)[-1]]: f"{value // 10}.{value % 10}"
                for path, value in record["quantization_scheme_min_capability"].items()
                if "compressed_tensors" in path
                and path.rsplit(":", 1)[-1] in SCHEME_CLASSES
                and isinstance(value, int)
                and value > 0
            },
        }
        for version, record in table["releases"].items()
    }
    return {
        "read_by": "scripts/probe_vllm_model_interfaces.py",
        "source": table["source"],
        "releases": releases,
    }


if __name__ == "__main__":
    sys.exit(main())
