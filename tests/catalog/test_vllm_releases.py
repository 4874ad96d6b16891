"""The vLLM release data (catalog/data/vllm/*.json) and the static extractor that produced it.

Everything here runs offline: the data tests read the committed JSON, and the extractor tests feed
scripts/extract_vllm_release.py a small synthetic `vllm` source tree.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from speculative_infra.catalog.vllm_release import (
    VllmFlag,
    VllmRelease,
    available_vllm_versions,
    load_vllm_release,
    releases_with_dest,
    version_tuple,
)

REPO = Path(__file__).resolve().parents[2]


def flag_for_option(release: VllmRelease, option: str) -> VllmFlag | None:
    """The flag an option string (long or short name, or an alias such as ``-tp``) belongs to."""
    return next((f for f in release.serve_flags if option in (f.name, *f.aliases)), None)


DATA_DIR = REPO / "speculative_infra" / "catalog" / "data" / "vllm"
SCRIPT = REPO / "scripts" / "extract_vllm_release.py"


def _load_script() -> ModuleType:
    name = "extract_vllm_release"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def extractor_mod() -> ModuleType:
    return _load_script()


def _all() -> list[VllmRelease]:
    return [load_vllm_release(v) for v in available_vllm_versions()]


# ---------------------------------------------------------------------------
# Committed data
# ---------------------------------------------------------------------------


def test_default_release_list_is_fully_extracted(extractor_mod: ModuleType) -> None:
    assert available_vllm_versions() == tuple(extractor_mod.DEFAULT_VERSIONS)
    assert available_vllm_versions()[0] == "0.10.0"
    assert available_vllm_versions()[-1] == "0.33.0"


def test_versions_sorted_numerically() -> None:
    versions = available_vllm_versions()
    assert list(versions) == sorted(versions, key=version_tuple)
    assert version_tuple("0.9.2") < version_tuple("0.10.0") < version_tuple("0.10.1.1") < (0, 11, 0)


@pytest.mark.parametrize("path", sorted(DATA_DIR.glob("*.json")), ids=lambda p: p.stem)
def test_data_file_parses_and_is_canonical(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    raw = json.loads(text)
    release = VllmRelease.model_validate(raw)
    assert release.vllm_version == path.stem
    # deterministic: sorted keys, 2-space indent, trailing newline, flags sorted by name
    assert text == json.dumps(raw, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert [f["name"] for f in raw["serve_flags"]] == sorted(f["name"] for f in raw["serve_flags"])
    assert re.fullmatch(r"[0-9a-f]{64}", release.source.sha256)
    assert release.source.wheel.startswith(f"vllm-{release.vllm_version}-")
    assert release.source.wheel.endswith(".whl")
    assert release.source.extracted_by == "scripts/extract_vllm_release.py"
    assert release.source.confidence == "verified"


def test_flag_counts_match_vllm_serve() -> None:
    # `vllm serve` long options, not counting --no-* negations and --help
    assert load_vllm_release("0.15.1").long_option_count() == 207
    assert load_vllm_release("0.33.0").long_option_count() == 321
    # 0.15.1: one argparse action per long option; 0.33.0: --device-memory-utilization is an
    # alias of --gpu-memory-utilization (320 actions, 321 long options)
    assert len(load_vllm_release("0.15.1").serve_flags) == 207
    assert len(load_vllm_release("0.33.0").serve_flags) == 320
    gpu = flag_for_option(load_vllm_release("0.33.0"), "--device-memory-utilization")
    assert gpu is not None and gpu.name == "--gpu-memory-utilization"


def test_every_release_has_speculative_config_flag() -> None:
    for release in _all():
        flag = flag_for_option(release, "--speculative-config")
        assert flag is not None, release.vllm_version
        assert flag.dest == "speculative_config"
        assert flag.takes_value and flag.value_type == "json"
    assert releases_with_dest("speculative_config") == list(available_vllm_versions())


def test_flag_invariants() -> None:
    for release in _all():
        names = release.flag_names()
        assert list(names) == sorted(names)
        assert len(set(names)) == len(names)
        seen: set[str] = set()
        for flag in release.serve_flags:
            assert flag.name.startswith("--")
            for option in flag.option_strings():
                assert option not in seen, (release.vllm_version, option)
                seen.add(option)
            assert flag.negatable == bool(flag.negations)
            if flag.negatable:
                assert flag.boolean and not flag.takes_value
                assert f"--no-{flag.name[2:]}" in flag.negations
            if flag.boolean:
                assert flag.value_type == "bool"
            if flag.choices is not None:
                assert all(isinstance(c, str) for c in flag.choices)
        assert release.dests() == frozenset(f.dest for f in release.serve_flags)


def test_well_known_flags_0_15_1() -> None:
    r = load_vllm_release("0.15.1")
    mml = r.flag_by_dest("max_model_len")
    # vllm/engine/arg_utils.py of 0.15.1 parses max_model_len with human_readable_int_or_auto.
    assert mml is not None and mml.name == "--max-model-len" and mml.value_type == "human_int_or_auto"
    assert mml.takes_value
    tp = flag_for_option(r, "-tp")
    assert tp is not None and tp.name == "--tensor-parallel-size" and tp.aliases == ("-tp",)
    prefix = flag_for_option(r, "--enable-prefix-caching")
    assert prefix is not None and prefix.boolean and prefix.negatable
    assert prefix.negations == ("--no-enable-prefix-caching",)
    stats = flag_for_option(r, "--disable-log-stats")
    assert stats is not None and stats.boolean and not stats.negatable  # store_true
    dtype = flag_for_option(r, "--dtype")
    assert dtype is not None and dtype.choices is not None and "bfloat16" in dtype.choices
    assert flag_for_option(r, "--parallel-drafting") is None
    assert r.flag_by_dest("no_such_flag") is None


def test_enable_disable_pairs_from_0_33_0() -> None:
    # 0.33.0 registers EnableDisableAction for BooleanOptionalAction: --enable-x also has --disable-x
    flag = flag_for_option(load_vllm_release("0.33.0"), "--enable-prefix-caching")
    assert flag is not None
    assert set(flag.negations) == {"--no-enable-prefix-caching", "--disable-prefix-caching"}
    old = flag_for_option(load_vllm_release("0.32.0"), "--enable-prefix-caching")
    assert old is not None and old.negations == ("--no-enable-prefix-caching",)


def test_parallel_drafting_first_in_0_16_0() -> None:
    for release in _all():
        has = "parallel_drafting" in release.speculative.fields
        assert has == (version_tuple(release.vllm_version) >= (0, 16, 0)), release.vllm_version


def test_unknown_speculative_keys_dropped_then_rejected() -> None:
    for release in _all():
        expected = "dropped" if version_tuple(release.vllm_version) <= (0, 15, 1) else "rejected"
        assert release.speculative.unknown_keys == expected, release.vllm_version


def _first_with_method(method: str) -> str | None:
    return next((r.vllm_version for r in _all() if method in r.speculative.methods), None)


def test_speculative_methods() -> None:
    assert set(load_vllm_release("0.10.0").speculative.methods) >= {
        "ngram", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model", "deepseek_mtp",
    }  # fmt: skip
    assert _first_with_method("mtp") == "0.11.0"
    # Often cited as suffix 0.11.2, ngram_gpu 0.18.1, dflash 0.20.2; the wheels say otherwise
    assert _first_with_method("suffix") == "0.11.1"
    assert "suffix" in load_vllm_release("0.11.2").speculative.methods
    assert _first_with_method("ngram_gpu") == "0.18.0"
    assert _first_with_method("dflash") == "0.20.0"
    latest = load_vllm_release("0.33.0").speculative.methods
    assert "medusa" not in latest and "mlp_speculator" not in latest
    assert {"medusa", "mlp_speculator"} <= set(load_vllm_release("0.32.0").speculative.methods)
    for release in _all():
        assert {"eagle", "eagle3", "ngram", "draft_model"} <= set(release.speculative.methods)
        assert list(release.speculative.methods) == sorted(release.speculative.methods)


def test_eagle3_allowlist() -> None:
    def allow(version: str) -> tuple[str, ...] | None:
        return load_vllm_release(version).speculative.eagle3_target_allowlist

    assert allow("0.10.0") == ("llama",)
    assert allow("0.10.2") == ("llama", "qwen")
    assert allow("0.15.1") == ("llama", "qwen", "minicpm", "gpt_oss")
    assert allow("0.16.0") == (*allow("0.15.1"), "hunyuan_vl", "hunyuan_v1_dense", "afmoe")  # type: ignore[misc]
    # Often cited as "from 0.17.1 no allow-list"; the wheels keep a (growing) list up to 0.21.0
    assert allow("0.17.1") is not None and "nemotron_h" in allow("0.17.1")  # type: ignore[operator]
    assert allow("0.21.0") is not None
    for version in available_vllm_versions():
        if version_tuple(version) >= (0, 22, 0):
            assert allow(version) is None, version


def test_refused_methods() -> None:
    """Read in the wheels: up to 0.14.1 SpeculativeConfig sets method "draft_model" for a plain draft and
    raises NotImplementedError ("Speculative decoding with draft model is not supported yet"; seen on
    0.11.0 in vllm#26547 and on 0.13.0 in vllm#31883); 0.15.0 runs draft models again."""
    for release in _all():
        expected = ("draft_model",) if version_tuple(release.vllm_version) <= (0, 14, 1) else ()
        assert release.speculative.refused_methods == expected, release.vllm_version


def test_missing_version_raises_key_error_listing_available() -> None:
    with pytest.raises(KeyError) as info:
        load_vllm_release("0.9.9")
    message = str(info.value)
    assert "0.9.9" in message
    assert "0.15.1" in message and "0.33.0" in message
    with pytest.raises(KeyError):
        load_vllm_release("../../etc/passwd")


def test_releases_with_dest() -> None:
    assert releases_with_dest("no_such_dest") == []
    with_sleep = releases_with_dest("enable_sleep_mode")
    assert with_sleep == sorted(with_sleep, key=version_tuple)


# ---------------------------------------------------------------------------
# The extractor, on a synthetic vllm source tree (no network, no wheel)
# ---------------------------------------------------------------------------

FAKE_TREE: dict[str, str] = {
    "vllm/__init__.py": "",
    "vllm/config/__init__.py": (
        "from vllm.config.fake import FakeConfig\nfrom vllm.config.speculative import SpeculativeConfig\n"
    ),
    "vllm/config/utils.py": """
from pydantic import ConfigDict
from pydantic.dataclasses import dataclass

def config(cls=None, *, config=None):
    merged = ConfigDict(extra="forbid")
    def decorator(cls):
        return dataclass(cls, config=merged)
    return decorator if cls is None else decorator(cls)
""",
    "vllm/config/fake.py": '''
import enum
from dataclasses import field
from typing import Literal

from pydantic.dataclasses import dataclass

Mode = Literal["fast", "slow"]
Size = Literal[1, 2, 4]

class Colour(str, enum.Enum):
    RED = "red"
    BLUE = "blue"

@dataclass
class FakeConfig:
    enable_thing: bool = False
    """A bool field: BooleanOptionalAction."""
    mode: Mode = "fast"
    """A Literal field: choices."""
    size: Size | None = None
    """An optional int Literal."""
    workers: int = 4
    """An int field."""
    ratio: float | None = None
    names: list[str] = field(default_factory=list)
    overrides: dict[str, int] | None = None
    colour: Colour = Colour.RED
    label: Mode | str = "fast"
''',
    "vllm/config/speculative.py": """
from typing import Literal

from vllm.config.utils import config

MTPTypes = Literal["deepseek_mtp", "mtp"]
Method = Literal["ngram", "eagle", "eagle3", MTPTypes]

@config
class SpeculativeConfig:
    num_speculative_tokens: int | None = None
    method: Method | None = None
    parallel_drafting: bool = False

    def _verify(self):
        supported = ["llama", "qwen"]
        if self.method == "eagle3" and not any(
            s in self.target_model_config.hf_text_config.model_type for s in supported
        ):
            raise ValueError("unsupported")
""",
    "vllm/utils/__init__.py": "",
    "vllm/utils/argparse_utils.py": """
from argparse import ArgumentParser

class FlexibleArgumentParser(ArgumentParser):
    pass
""",
    "vllm/engine/__init__.py": "",
    "vllm/engine/arg_utils.py": """
import argparse
import json
import sys
from dataclasses import dataclass

from vllm.config import FakeConfig
from vllm.config.fake import Colour

def get_kwargs(cls):
    ...

def optional_type(return_type):
    ...

@dataclass
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        fake_kwargs = get_kwargs(FakeConfig)
        group = parser.add_argument_group(title="FakeConfig")
        if not ("serve" in sys.argv[1:] and "--help" in sys.argv[1:]):
            group.add_argument("--model", type=str)
        group.add_argument("--enable-thing", **fake_kwargs["enable_thing"])
        group.add_argument("--mode", "-m", **fake_kwargs["mode"])
        group.add_argument("--size", **fake_kwargs["size"])
        group.add_argument("--workers", "-w", **{**fake_kwargs["workers"], "default": None})
        group.add_argument("--ratio", **fake_kwargs["ratio"])
        group.add_argument("--names", **fake_kwargs["names"])
        fake_kwargs["overrides"]["type"] = optional_type(json.loads)
        group.add_argument("--overrides", **fake_kwargs["overrides"])
        group.add_argument("--colour", choices=[c.value for c in Colour], **fake_kwargs["colour"])
        group.add_argument("--label", **fake_kwargs["label"])
        group.add_argument("--speculative-config", type=json.loads, default=None)
        parser.add_argument("--disable-log-stats", action="store_true")
        return parser

@dataclass
class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser, async_args_only=False):
        if not async_args_only:
            parser = EngineArgs.add_cli_args(parser)
        parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction)
        return parser
""",
    "vllm/entrypoints/__init__.py": "",
    "vllm/entrypoints/openai/__init__.py": "",
    "vllm/entrypoints/openai/cli_args.py": """
from vllm.engine.arg_utils import AsyncEngineArgs

def make_arg_parser(parser):
    parser.add_argument("model_tag", type=str, nargs="?")
    parser.add_argument("--port", type=int, default=8000)
    parser = AsyncEngineArgs.add_cli_args(parser)
    return parser
""",
    "vllm/entrypoints/cli/__init__.py": "",
    "vllm/entrypoints/cli/serve.py": "from vllm.entrypoints.openai.cli_args import make_arg_parser\n",
}


def _fake_extractor(mod: ModuleType, files: dict[str, str] | None = None) -> Any:
    return mod.Extractor(mod.SourceTree.from_mapping(files or FAKE_TREE), "test")


def test_field_kwargs_from_dataclass(extractor_mod: ModuleType) -> None:
    ex = _fake_extractor(extractor_mod)
    cls = ex.lookup("vllm.config", "FakeConfig")
    fields = dict(ex.dataclass_fields(cls))
    assert list(fields)[:3] == ["enable_thing", "mode", "size"]
    kwargs = ex.get_kwargs(cls)
    assert kwargs["enable_thing"]["action"] == extractor_mod.ExtRef("argparse.BooleanOptionalAction")
    assert kwargs["mode"]["choices"] == ["fast", "slow"]
    assert kwargs["mode"]["type"] == extractor_mod.ArgType("str")
    assert kwargs["size"]["choices"] == [1, 2, 4, "None"]  # Optional appends None
    assert kwargs["workers"]["type"] == extractor_mod.ArgType("int")
    assert kwargs["ratio"]["type"] == extractor_mod.ArgType("float")
    assert kwargs["names"]["nargs"] == "+"
    assert kwargs["overrides"]["type"] == extractor_mod.ArgType("json")
    assert kwargs["colour"]["type"] == extractor_mod.ArgType("str")  # an Enum: not builtin -> str
    assert "choices" not in kwargs["colour"]


def test_serve_flags_from_synthetic_tree(extractor_mod: ModuleType) -> None:
    ex = _fake_extractor(extractor_mod)
    flags, meta = extractor_mod.extract_serve_flags(ex)
    by_name = {f["name"]: f for f in flags}
    assert meta["frontend_module"] == "vllm.entrypoints.openai.cli_args"
    assert sorted(by_name) == [f["name"] for f in flags]
    assert "model_tag" not in {f["dest"] for f in flags}  # positional
    assert set(by_name) == {
        "--colour", "--disable-log-stats", "--enable-log-requests", "--enable-thing", "--label",
        "--mode", "--model", "--names", "--overrides", "--port", "--ratio", "--size",
        "--speculative-config", "--workers",
    }  # fmt: skip

    thing = by_name["--enable-thing"]
    assert (thing["boolean"], thing["negatable"], thing["takes_value"]) == (True, True, False)
    assert thing["negations"] == ["--no-enable-thing"]
    assert thing["value_type"] == "bool"

    stats = by_name["--disable-log-stats"]
    assert (stats["boolean"], stats["negatable"], stats["takes_value"]) == (True, False, False)

    mode = by_name["--mode"]
    assert mode["aliases"] == ["-m"] and mode["dest"] == "mode"
    assert mode["choices"] == ["fast", "slow"] and mode["value_type"] == "str"

    size = by_name["--size"]
    assert size["choices"] == ["1", "2", "4", "None"] and size["value_type"] == "int"

    workers = by_name["--workers"]
    assert workers["value_type"] == "int" and workers["aliases"] == ["-w"] and workers["choices"] is None

    assert by_name["--ratio"]["value_type"] == "float"
    assert by_name["--names"]["nargs"] == "+" and by_name["--names"]["value_type"] == "str"
    assert by_name["--overrides"]["value_type"] == "json"
    assert by_name["--colour"]["choices"] == ["blue", "red"]
    # Literal | str: argparse gets a metavar, not choices, only when the release's
    # literal_to_kwargs says so; this synthetic arg_utils has the older behaviour (choices)
    assert by_name["--label"]["choices"] == ["fast", "slow"]
    assert by_name["--speculative-config"]["value_type"] == "json"
    assert by_name["--port"]["value_type"] == "int"
    assert by_name["--model"]["value_type"] == "str"
    assert ex.warnings == []


def test_speculative_facts_from_synthetic_tree(extractor_mod: ModuleType) -> None:
    ex = _fake_extractor(extractor_mod)
    spec = extractor_mod.extract_speculative(ex)
    assert spec["fields"] == ["method", "num_speculative_tokens", "parallel_drafting"]
    assert spec["methods"] == ["deepseek_mtp", "eagle", "eagle3", "mtp", "ngram"]  # nested Literal flattened
    assert spec["eagle3_target_allowlist"] == ["llama", "qwen"]
    assert spec["unknown_keys"] == "rejected"  # @config wraps a pydantic dataclass with extra="forbid"


def test_refused_methods_from_synthetic_tree(extractor_mod: ModuleType) -> None:
    files = dict(FAKE_TREE)
    files["vllm/config/speculative.py"] = """
from typing import Literal
from pydantic.dataclasses import dataclass

@dataclass
class SpeculativeConfig:
    method: Literal["ngram", "eagle", "medusa", "draft_model", "suffix"] | None = None

    def __post_init__(self):
        if self.method == "suffix":
            raise NotImplementedError("checked elsewhere, no method set here")
        if self.model is not None:
            if "eagle-" in self.model:
                self.method = "eagle"
            elif self.hf_type == "medusa":
                self.method = "medusa"
                raise ValueError("a different error is not a refusal")
            else:
                self.method = "draft_model"
                raise NotImplementedError(
                    "Speculative decoding with draft model is not supported yet."
                )
"""
    spec = extractor_mod.extract_speculative(_fake_extractor(extractor_mod, files))
    assert spec["refused_methods"] == ["draft_model"]
    assert extractor_mod.extract_speculative(_fake_extractor(extractor_mod))["refused_methods"] == []


def test_speculative_unknown_keys_dropped_for_plain_pydantic_dataclass(extractor_mod: ModuleType) -> None:
    files = dict(FAKE_TREE)
    files["vllm/config/speculative.py"] = """
from typing import Literal
from pydantic.dataclasses import dataclass

@dataclass
class SpeculativeConfig:
    method: Literal["ngram", "eagle"] | None = None
"""
    spec = extractor_mod.extract_speculative(_fake_extractor(extractor_mod, files))
    assert spec["unknown_keys"] == "dropped"
    assert spec["eagle3_target_allowlist"] is None
    assert spec["methods"] == ["eagle", "ngram"]


def test_release_record_is_deterministic(extractor_mod: ModuleType) -> None:
    record, _ = extractor_mod.extract_release(
        extractor_mod.SourceTree.from_mapping(FAKE_TREE), "0.0.1", "vllm-0.0.1-py3-none-any.whl", "0" * 64
    )
    text = extractor_mod.dump_json(record)
    assert text.endswith("}\n")
    again, _ = extractor_mod.extract_release(
        extractor_mod.SourceTree.from_mapping(FAKE_TREE), "0.0.1", "vllm-0.0.1-py3-none-any.whl", "0" * 64
    )
    assert extractor_mod.dump_json(again) == text
    VllmRelease.model_validate(json.loads(text))  # the package model accepts what the script writes


def test_release_table(extractor_mod: ModuleType) -> None:
    records = [json.loads((DATA_DIR / f"{v}.json").read_text()) for v in ("0.15.1", "0.16.0")]
    table = extractor_mod.release_table(records)
    assert "| 0.15.1 | 207 | 207 |" in table
    assert (
        extractor_mod.long_option_count(json.loads((DATA_DIR / "0.33.0.json").read_text())["serve_flags"])
        == 321
    )
    assert "| 0.16.0 |" in table


# What vLLM's arg_utils does, release by release (read in the wheels): 0.11.0-0.13.0 name the fields in a
# local set (human_readable_ints = {"max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"}),
# 0.14.0 and later test `name == "max_model_len"` (human_readable_int_or_auto) and
# `name in ("max_num_batched_tokens", "kv_cache_memory_bytes")` (human_readable_int).
@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (
            "0.11.0",
            {"max_model_len": "human_int", "max_num_batched_tokens": "human_int", "max_num_seqs": "int"},
        ),
        (
            "0.15.1",
            {
                "max_model_len": "human_int_or_auto",
                "max_num_batched_tokens": "human_int",
                "max_num_seqs": "int",
            },
        ),
    ],
)
def test_human_readable_integer_flags(version: str, expected: dict[str, str]) -> None:
    release = load_vllm_release(version)
    assert {dest: release.flag_by_dest(dest).value_type for dest in expected} == expected


def test_extractor_finds_human_readable_fields_in_each_form(extractor_mod: ModuleType) -> None:
    arg_utils = """
from vllm.utils import human_readable_int, human_readable_int_or_auto

def _compute_kwargs(cls):
    big = {"kv_cache_memory_bytes"}
    for name in fields:
        if name == "max_model_len":
            kwargs[name]["type"] = human_readable_int_or_auto
        elif name in ("max_num_batched_tokens",):
            kwargs[name]["type"] = human_readable_int
        if name in big:
            kwargs[name]["type"] = human_readable_int
        if name == "max_num_seqs":
            kwargs[name]["type"] = int
"""
    tree = extractor_mod.SourceTree.from_mapping(
        {"vllm/__init__.py": "", "vllm/engine/arg_utils.py": arg_utils}
    )
    found = extractor_mod.Extractor(tree, "test").human_readable_fields()
    assert found == {
        "max_model_len": "human_int_or_auto",
        "max_num_batched_tokens": "human_int",
        "kv_cache_memory_bytes": "human_int",
    }
