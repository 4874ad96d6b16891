"""`speculative-infra catalog instances|containers|models|drafts|vllm-flags VERSION`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.vllm_release import available_vllm_versions, load_vllm_release
from speculative_infra.cli.tables import render_table


def add_catalog_command(subparsers: Any) -> None:
    parser = subparsers.add_parser("catalog", help="print the catalog of facts")
    sub = parser.add_subparsers(
        dest="what", required=True, metavar="{instances,containers,models,drafts,vllm-flags}"
    )
    for name, handler, text in (
        ("instances", _instances, "GPU instance types, GPUs, host drivers, prices"),
        ("containers", _containers, "vLLM DLC and DJL LMI releases"),
        ("models", _models, "target models"),
        ("drafts", _drafts, "speculative-decoding drafts"),
    ):
        sub.add_parser(name, help=text).set_defaults(handler=handler)
    flags = sub.add_parser("vllm-flags", help="a vLLM release's `vllm serve` flags, one per line")
    flags.add_argument("version", help="vLLM version, e.g. 0.15.1")
    flags.set_defaults(handler=_vllm_flags)


def _instances(args: argparse.Namespace) -> int:
    cat = load_catalog()
    rows = []
    for name in cat.instance_type_names():
        it = cat.instance_type(name)
        assert it is not None
        price = cat.price(name)
        host = it.default_host
        rows.append(
            (
                name,
                it.gpu_name,
                it.gpu_count,
                it.gpu.compute_capability,
                f"{it.gpu.memory_mib / 1024:.1f}",
                "yes" if it.gpu.bf16 else "no",
                f"{host.driver}/{host.cuda}" if host else "undocumented",
                f"{price.usd_per_hour:g} ({price.region})" if price else "-",
                it.confidence,
            )
        )
    headers = [
        "instance type",
        "GPU",
        "GPUs",
        "CC",
        "GiB/GPU",
        "bf16",
        "default driver",
        "$/hour",
        "confidence",
    ]
    print(render_table(headers, rows))
    return 0


def _containers(args: argparse.Namespace) -> int:
    cat = load_catalog()
    rows = []
    for version in cat.vllm_dlc_versions():
        c = cat.container("vllm", version)
        assert c is not None
        rows.append(
            (
                "vllm",
                c.version,
                f"{c.repository}:{c.tag}",
                c.vllm_version,
                c.cuda,
                "yes" if c.forward_compat.enabled else "no",
            )
        )
    for version in cat.lmi_versions():
        c = cat.container("lmi", version)
        assert c is not None
        rows.append(
            (
                "lmi",
                c.version,
                f"{c.repository}:{c.tag}",
                c.vllm_version,
                c.cuda,
                "yes" if c.forward_compat.enabled else "no",
            )
        )
    print(render_table(["framework", "version", "image", "vLLM", "CUDA", "fwd compat"], rows, max_width=70))
    return 0


def _models(args: argparse.Namespace) -> int:
    cat = load_catalog()
    rows = [
        (
            mid,
            m.architecture,
            m.model_type,
            m.parameters_billion,
            m.num_hidden_layers,
            f"{m.num_attention_heads}/{m.num_key_value_heads}",
            m.head_dim,
            m.max_position_embeddings,
            m.dtype,
        )
        for mid, m in cat.models.items()
    ]
    headers = [
        "model",
        "architecture",
        "model_type",
        "params (B)",
        "layers",
        "heads/kv",
        "head_dim",
        "context",
        "dtype",
    ]
    print(render_table(headers, rows))
    return 0


def _drafts(args: argparse.Namespace) -> int:
    cat = load_catalog()
    rows = [
        (
            did,
            d.method + (" (P-EAGLE)" if d.parallel_drafting else ""),
            d.target,
            "-" if d.size_gb is None else f"{d.size_gb:g}",
            "-" if d.download_gb is None else f"{d.download_gb:g}",
            d.confidence,
        )
        for did, d in cat.drafts.items()
    ]
    headers = ["draft", "method", "target", "on GPU (GB)", "download (GB)", "confidence"]
    print(render_table(headers, rows))
    return 0


def _vllm_flags(args: argparse.Namespace) -> int:
    if args.version not in available_vllm_versions():
        print(
            f"speculative-infra: no flag data for vLLM {args.version!r}; available: "
            + ", ".join(available_vllm_versions()),
            file=sys.stderr,
        )
        return 2
    print("\n".join(load_vllm_release(args.version).flag_names()))
    return 0
