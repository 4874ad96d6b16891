"""Writing the release data: one JSON record per release, from a downloaded wheel."""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .constants import DEFAULT_VERSIONS, EXTRACTED_BY, version_key
from .extractor import Extractor
from .release import extract_serve_flags, extract_speculative
from .source_tree import SourceTree

PUBLIC_FLAG_KEYS = ("name", "dest", "takes_value", "boolean", "negatable", "negations", "nargs", "choices",
                    "value_type", "aliases", "deprecated")  # fmt: skip


def extract_release(
    tree: SourceTree, version: str, wheel_name: str, sha256: str
) -> tuple[dict[str, Any], Extractor]:
    ex = Extractor(tree, version)
    flags, meta = extract_serve_flags(ex)
    spec = extract_speculative(ex)
    record = {
        "vllm_version": version,
        "source": {
            "wheel": wheel_name,
            "sha256": sha256,
            "extracted_by": EXTRACTED_BY,
            "confidence": "verified",
            "frontend_module": meta["frontend_module"],
        },
        "serve_flags": [{k: f[k] for k in PUBLIC_FLAG_KEYS} for f in flags],
        "speculative": spec,
    }
    ex.stats = meta
    return record, ex


def dump_json(record: Mapping[str, Any]) -> str:
    return json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download_wheel(version: str, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", f"vllm=={version}", "-d", str(dest)]  # fmt: skip
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"pip download vllm=={version} failed ({proc.returncode}): {tail}")
    wheels = sorted(dest.glob(f"vllm-{version}-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download produced no wheel for vllm=={version} in {dest}")
    return wheels[0]


def find_or_download(version: str, wheels_dir: Path) -> Path:
    """The release's wheel under wheels_dir/<version>/, downloaded there first if it is missing."""
    folder = wheels_dir / version
    existing = sorted(folder.glob(f"vllm-{version}-*.whl")) if folder.exists() else []
    return existing[0] if existing else download_wheel(version, folder)


def wheel_reader(
    read_release: Callable[[zipfile.ZipFile], dict[str, Any]],
) -> Callable[[str, Path], dict[str, Any]]:
    """A probe_release for run_release_probe: the release's wheel found or downloaded, read by
    `read_release`, and named with its digest in the record."""

    def probe_release(version: str, wheels_dir: Path) -> dict[str, Any]:
        wheel = find_or_download(version, wheels_dir)
        with zipfile.ZipFile(wheel) as archive:
            record = read_release(archive)
        return {"wheel": wheel.name, "sha256": sha256_file(wheel), **record}

    return probe_release


def update_release_table(out: Path, records: Mapping[str, Any], probed_by: str) -> None:
    """Merge per-release probe records into the golden table at `out` (the releases not probed again are
    kept, all in release order) and write it."""
    table = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"releases": {}}
    releases = {**table["releases"], **records}
    table["probed_by"] = probed_by
    table["releases"] = dict(sorted(releases.items(), key=lambda kv: version_key(kv[0])))
    out.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def wheel_probe_parser(description: str, out: Path) -> argparse.ArgumentParser:
    """The options every wheel reader and probe under scripts/ takes: --versions, --wheels-dir, --out."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--versions", nargs="+", default=list(DEFAULT_VERSIONS))
    parser.add_argument("--wheels-dir", type=Path, default=Path("/tmp/vllm_wheels"))
    parser.add_argument("--out", type=Path, default=out)
    return parser


def run_release_probe(
    description: str,
    out: Path,
    probe_release: Callable[[str, Path], dict[str, Any]],
    shown: str,
    probed_by: str,
) -> int:
    """The main loop of a per-release probe: each release asked for probed from its wheel (one line of
    progress showing the record's `shown` field), then merged into the golden table."""
    args = wheel_probe_parser(description, out).parse_args()
    records = {}
    for version in args.versions:
        records[version] = probe_release(version, args.wheels_dir)
        print(version, records[version][shown], flush=True)
    update_release_table(args.out, records, probed_by)
    return 0


def process_version(
    version: str, cache_dir: Path, out_dir: Path, keep_wheels: bool
) -> tuple[str, dict[str, Any]]:
    started = time.monotonic()
    wheel_dir = cache_dir / version
    existing = sorted(wheel_dir.glob(f"vllm-{version}-*.whl")) if wheel_dir.exists() else []
    wheel = existing[0] if existing else download_wheel(version, wheel_dir)
    downloaded = time.monotonic()
    digest = sha256_file(wheel)
    with zipfile.ZipFile(wheel) as zf:
        record, ex = extract_release(SourceTree.from_zip(zf), version, wheel.name, digest)
    (out_dir / f"{version}.json").write_text(dump_json(record), encoding="utf-8")
    if not keep_wheels:
        shutil.rmtree(wheel_dir, ignore_errors=True)
    info = {
        "flags": len(record["serve_flags"]),
        "download_s": round(downloaded - started, 1),
        "total_s": round(time.monotonic() - started, 1),
        "warnings": ex.warnings,
        **ex.stats,
    }
    return version, info
