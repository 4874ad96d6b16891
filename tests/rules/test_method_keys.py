"""SI412's table of method-specific speculative keys (vllm.yaml speculative.method_keys), held to where each
release's wheel reads them (tests/golden/vllm_method_keys.json, written by scripts/probe_vllm_method_keys.py):
a warning that a key is ignored must never fall on a method that reads it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_release import load_vllm_release
from speculative_infra.check import check
from tests.conftest import REFERENCE_SPEC, deep_merge

GOLDEN = json.loads((Path(__file__).parent.parent / "golden" / "vllm_method_keys.json").read_text())
RELEASES: dict[str, Any] = GOLDEN["releases"]


def _branch_methods(branches: list[str], known: set[str]) -> set[str] | None:
    """The methods the innermost positive `if` around a read admits (None: no method test around it)."""
    positive = [b for b in branches if not b.startswith("not (")]
    if not positive:
        return None
    return set(re.findall(r"'([^']+)'", positive[-1])) & known


def _module_methods(module: str, known: set[str]) -> set[str]:
    """The methods whose proposer lives in a module, by its path (ngram*, suffix*)."""
    path = module.lower()
    if "ngram" in path:
        return {"ngram", "ngram_gpu"} & known
    if "suffix" in path:
        return {"suffix"} & known
    return set()


def _readers(release: str) -> dict[str, set[str]]:
    """key -> the methods under which the release reads it."""
    record, known = RELEASES[release], set(load_vllm_release(release).speculative.methods)
    readers: dict[str, set[str]] = {k: set() for k in record["keys"]}
    for module, entry in record["modules"].items():
        calls = entry.get("calls", [])
        for read in entry["reads"]:
            if module != record["config_module"]:
                owners = _module_methods(module, known)
                assert owners, (release, module)  # a reader outside the proposers would need a look
                readers[read["key"]] |= owners
                continue
            methods = _branch_methods(read["branches"], known)
            if methods is None:  # a helper of the config class: the branches around its calls
                function = read["function"].split(".")[-1]
                around = [_branch_methods(c["branches"], known) for c in calls if c["callee"] == function]
                assert around and None not in around, (release, read)
                methods = set().union(*around)  # type: ignore[arg-type]
            readers[read["key"]] |= methods
    return readers


@pytest.mark.parametrize("release", list(RELEASES))
def test_method_keys_are_read_by_their_methods_only(release: str) -> None:
    known = set(load_vllm_release(release).speculative.methods)
    groups = load_catalog().vllm.speculative.method_keys
    catalog = {key: set(g.methods) & known for g in groups for key in g.keys if set(g.methods) & known}
    assert _readers(release) == catalog, release


def test_the_probe_saw_every_release_and_both_key_families() -> None:
    assert len(RELEASES) == 38
    assert not any(k.startswith("suffix") for k in RELEASES["0.11.0"]["keys"])
    assert any(k.startswith("suffix") for k in RELEASES["0.11.1"]["keys"])


def _si412(method: str, key: str, value: Any, version: str = "0.25.1") -> list[str]:
    spec = deep_merge(
        REFERENCE_SPEC,
        {"container": {"version": version}, "speculative": {"method": method, key: value, "model": None}},
    )
    return [f.field for f in check(spec).findings if f.code == "SI412"]


def test_ngram_gpu_reads_the_ngram_keys_and_eagle3_does_not() -> None:
    assert _si412("ngram_gpu", "prompt_lookup_max", 4) == []
    assert "speculative.prompt_lookup_max" in _si412("suffix", "prompt_lookup_max", 4)
    assert _si412("suffix", "suffix_decoding_max_tree_depth", 8) == []
    assert "speculative.suffix_decoding_max_tree_depth" in _si412(
        "ngram", "suffix_decoding_max_tree_depth", 8
    )
