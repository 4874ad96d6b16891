"""One test group per module of scripts/vllm_release_extractor/ (the end-to-end runs over a synthetic vLLM
tree are in tests/catalog/test_vllm_releases.py)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from vllm_release_extractor import constants, records, source_tree, tables, values


# --- constants ------------------------------------------------------------------------------------
def test_versions_sort_numerically_and_paths_point_into_the_package():
    assert sorted(["0.10.0", "0.9.2", "0.33.0"], key=constants.version_key) == ["0.9.2", "0.10.0", "0.33.0"]
    assert list(constants.DEFAULT_VERSIONS) == sorted(constants.DEFAULT_VERSIONS, key=constants.version_key)
    assert constants.DEFAULT_OUT.parts[-4:] == ("speculative_infra", "catalog", "data", "vllm")
    assert constants.DEFAULT_OUT.is_dir()


# --- source_tree: reading a wheel -----------------------------------------------------------------
def test_source_tree_reads_modules_and_packages_from_a_wheel():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        wheel.writestr("vllm/__init__.py", "")
        wheel.writestr("vllm/config/__init__.py", "X = 1\n")
        wheel.writestr("vllm/utils.py", "def f():\n    return 2\n")
    tree = source_tree.SourceTree.from_zip(zipfile.ZipFile(buffer))
    assert tree.module_path("vllm.utils") == "vllm/utils.py"
    assert tree.is_package("vllm.config") and not tree.is_package("vllm.utils")
    assert tree.is_module("vllm.utils") and not tree.is_module("vllm.missing") and not tree.is_module("torch")
    assert tree.module_ast("vllm.config").body[0].targets[0].id == "X"
    assert tree.module_ast("vllm.missing") is None


# --- values ---------------------------------------------------------------------------------------
def test_concrete_and_plain_values():
    unknown = values.Unknown("an environment variable")
    assert values.is_concrete([1, "a", (2, 3)]) and values.is_concrete({"k": [1]})
    assert not values.is_concrete([1, unknown]) and not values.is_concrete({"k": unknown})
    assert values.is_plain([1, "a", None, 2.5, True]) and not values.is_plain([object()])


# --- records: one JSON record per release ---------------------------------------------------------
def test_records_are_canonical_json_and_wheels_are_hashed(tmp_path):
    text = records.dump_json({"b": 1, "a": [2, {"d": 3, "c": 4}], "é": "漢"})
    assert text.index('"a"') < text.index('"b"') and text.index('"c"') < text.index('"d"')  # keys sorted
    assert '"é": "漢"' in text and text.endswith("}\n")  # UTF-8 as is, one final newline
    assert json.loads(text) == {"b": 1, "a": [2, {"d": 3, "c": 4}], "é": "漢"}
    wheel = tmp_path / "w.whl"
    wheel.write_bytes(b"abc")
    assert records.sha256_file(wheel) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


# --- tables: docs/vllm-releases.md's summaries ----------------------------------------------------
def test_tables_from_records():
    flags = [
        {"name": "--a", "aliases": ["-a", "--alias-a"]},
        {"name": "--help", "aliases": []},
        {"name": "-x", "aliases": []},
    ]
    assert tables.long_option_count(flags) == 3  # --a, --alias-a, --help
    committed = tables.load_records(constants.DEFAULT_OUT)
    assert [r["vllm_version"] for r in committed] == sorted(
        (r["vllm_version"] for r in committed), key=constants.version_key
    )
    table = tables.release_table(committed)
    assert table.splitlines()[0].startswith("| vLLM |") and "| 0.15.1 |" in table
    assert "eagle3" in tables.methods_table(committed)


@pytest.mark.parametrize(
    "module", ["command", "dataclass_fields", "extractor", "flags", "interpreter", "release"]
)
def test_every_module_imports_alone(module):
    # One job per module, no import cycle: each imports on its own.
    __import__(f"vllm_release_extractor.{module}")
