#!/usr/bin/env python3
"""Read which GPU architectures each vLLM release's compiled kernels were built for, from its wheel,
and write speculative_infra/catalog/data/vllm_kernels.json.

    .venv/bin/python scripts/read_vllm_kernels.py                       # every default release
    .venv/bin/python scripts/read_vllm_kernels.py --versions 0.20.0     # some (merged into the file)
    .venv/bin/python scripts/read_vllm_kernels.py --wheels-dir /tmp/w   # wheels already downloaded there

vLLM's own operators live in the wheel's top-level extension modules (`vllm/_C.abi3.so`, later
`vllm/_C_stable_libtorch.abi3.so`); the engine does not start without them. Each carries an ELF section
`.nv_fatbin` holding CUDA fat binaries: a list of entries, each a cubin (machine code for one
compute capability) or PTX (code the driver compiles for any equal or newer GPU), with flags that
mark arch-specific builds (sm_90a, sm_100a: they run on that exact GPU only). The layout read here is
the one `cuobjdump --list-elf` walks: a 16-byte container header (magic 0xBA55ED50, header size,
payload size), then per entry a header with its kind (1 PTX, 2 cubin), header size, payload size and
the compute capability as major*10+minor. Nothing else in the binary is interpreted.

The CUDA runtime the module links (libcudart.so.12 / .13) is recorded too: it is what the container
needs of the host driver.
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.vllm_release_extractor.constants import version_key
from scripts.vllm_release_extractor.records import find_or_download, sha256_file, wheel_probe_parser

OUT = Path(__file__).resolve().parent.parent / "speculative_infra" / "catalog" / "data" / "vllm_kernels.json"
CORE_MODULE = re.compile(r"^vllm/_C(_stable_libtorch)?\.abi3\.so$")
FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2
ARCH_SPECIFIC_FLAG = 0x100000  # set on sm_90a / sm_100a / sm_120a entries
CUDART = re.compile(rb"libcudart\.so\.(\d+)")


def elf_section(blob: bytes, wanted: str) -> bytes | None:
    """The bytes of one section of a 64-bit little-endian ELF file, or None."""
    if blob[:4] != b"\x7fELF" or blob[4] != 2 or blob[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", blob, 0x28)[0]
    entsize, count, names_index = struct.unpack_from("<HHH", blob, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", blob, shoff + i * entsize) for i in range(count)]
    names_offset = headers[names_index][4]
    for name_at, _type, _flags, _addr, offset, size, *_ in headers:
        start = names_offset + name_at
        if blob[start : blob.index(b"\0", start)].decode() == wanted:
            return blob[offset : offset + size]
    return None


def fatbin_entries(section: bytes) -> set[tuple[str, str]]:
    """(kind, architecture) pairs: kind 'cubin' or 'ptx', architecture like '8.0', '9.0a'."""
    found: set[tuple[str, str]] = set()
    at = 0
    while at + 16 <= len(section):
        magic, _version, header_size, payload_size = struct.unpack_from("<IHHQ", section, at)
        if magic != FATBIN_MAGIC:
            at += 8  # containers are 8-byte aligned; padding sits between them
            continue
        entry, end = at + header_size, at + header_size + payload_size
        while entry < end:
            kind, _, entry_header, entry_payload = struct.unpack_from("<HHIQ", section, entry)
            sm = struct.unpack_from("<I", section, entry + 28)[0]
            flags = struct.unpack_from("<I", section, entry + 40)[0]
            if kind in (KIND_PTX, KIND_CUBIN):
                arch = f"{sm // 10}.{sm % 10}" + ("a" if flags & ARCH_SPECIFIC_FLAG else "")
                found.add(("ptx" if kind == KIND_PTX else "cubin", arch))
            entry += entry_header + entry_payload
        at = end
    return found


def _arch_key(arch: str) -> tuple[int, int, str]:
    major, minor = arch.rstrip("a").split(".")
    return int(major), int(minor), arch[-1] if arch.endswith("a") else ""


def read_module(blob: bytes) -> dict[str, Any]:
    section = elf_section(blob, ".nv_fatbin")
    entries = fatbin_entries(section) if section is not None else set()
    runtimes = sorted({int(m) for m in CUDART.findall(blob)})
    return {
        "cubin": sorted({a for k, a in entries if k == "cubin"}, key=_arch_key),
        "ptx": sorted({a for k, a in entries if k == "ptx"}, key=_arch_key),
        "cuda_runtime_major": runtimes[-1] if runtimes else None,
    }


def read_wheel(wheel: Path) -> dict[str, Any]:
    with zipfile.ZipFile(wheel) as zf:
        modules = {n: read_module(zf.read(n)) for n in sorted(zf.namelist()) if CORE_MODULE.match(n)}
    if not modules:
        raise RuntimeError(f"{wheel.name}: no core extension module (vllm/_C*.abi3.so)")
    return {"wheel": wheel.name, "sha256": sha256_file(wheel), "core_modules": modules}


def main() -> int:
    args = wheel_probe_parser(__doc__, OUT).parse_args()
    data = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else {}
    releases = data.get("releases", {})
    for version in args.versions:
        releases[version] = read_wheel(find_or_download(version, args.wheels_dir))
        mods = releases[version]["core_modules"]
        print(version, {Path(n).name: m["cubin"] for n, m in mods.items()}, flush=True)
    data = {
        "read_by": "scripts/read_vllm_kernels.py",
        "source": "the PyPI wheel of each vLLM release (its core extension modules' .nv_fatbin sections)",
        "confidence": "verified",
        "releases": dict(sorted(releases.items(), key=lambda kv: version_key(kv[0]))),
    }
    args.out.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
