"""`inference_ami_version: auto` over the whole catalog: its host passes every host rule, and so do the fixes.

These are properties, not examples: every instance family the catalog knows, every container release,
every host image. The expected answer is never read from the host picker itself; it comes from running
the rules on the picked host and on every alternative.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import yaml

from speculative_infra.catalog import load_catalog
from speculative_infra.check import check
from speculative_infra.rules import Finding

# The rules that judge the host (image name, driver vs GPU, driver vs CUDA, undocumented driver,
# observed failures on the default host).
HOST_RULES = {"SI122", "SI210", "SI211", "SI213", "SI214"}

CATALOG = load_catalog()
FAMILIES = sorted(CATALOG.families)
CONTAINERS = [("vllm", v) for v in CATALOG.vllm_dlc_versions()] + [("lmi", v) for v in CATALOG.lmi_versions()]


def _spec(family: str, framework: str, version: str, host: str) -> dict[str, Any]:
    size = next(iter(CATALOG.families[family].sizes))
    return {
        "instance_type": f"ml.{family}.{size}",
        "container": {"framework": framework, "version": version},
        "model": {"id": "Qwen/Qwen3-8B"},
        "engine": {"tensor_parallel_size": 1},
        "inference_ami_version": host,
    }


def _host_findings(spec: dict[str, Any]) -> list[Finding]:
    return [f for f in check(spec).findings if f.code in HOST_RULES and f.severity.value != "info"]


@pytest.mark.parametrize("family", FAMILIES)
def test_auto_host_passes_every_host_rule_or_nothing_does(family: str) -> None:
    for framework, version in CONTAINERS:
        spec = _spec(family, framework, version, "auto")
        result = check(spec)
        problems = [f for f in result.findings if f.code in HOST_RULES and f.severity.value != "info"]
        if not problems:
            continue
        # auto found nothing that passes: then no host image, and not the default host, may pass either.
        for host in [*CATALOG.amis, "default"]:
            assert _host_findings(_spec(family, framework, version, host)), (
                f"{family} + {framework} {version}: auto picked {result.deployment.host} with {problems}, "
                f"but {host} passes every host rule"
            )


def test_every_host_fix_passes_every_host_rule() -> None:
    fixed = 0
    for family in FAMILIES:
        for framework, version in CONTAINERS:
            for host in [*CATALOG.amis, "default"]:
                for finding in _host_findings(_spec(family, framework, version, host)):
                    named = re.search(r"inference_ami_version: (\S+)", finding.fix)
                    if named is None:
                        continue  # the fix names no host (nothing fits): covered by the test above
                    after = _host_findings(_spec(family, framework, version, named.group(1)))
                    assert not after, (
                        f"{family} {framework} {version} on {host}: fix {finding.fix!r} still fails {after}"
                    )
                    fixed += 1
    assert fixed > 100, f"only {fixed} host findings with a fix were checked"


def test_keyword_props_spec_and_cli_resolve_the_same_host(run_cli, tmp_path) -> None:
    """One default: leaving inference_ami_version out, None and 'auto' resolve the same host everywhere."""
    base = _spec("g7e", "vllm", "0.15.1", "auto")
    without = {k: v for k, v in base.items() if k != "inference_ami_version"}
    hosts = {
        "spec omitted": check(without).deployment.host,
        "spec auto": check(base).deployment.host,
        "props None": check({**base, "inference_ami_version": None}).deployment.host,
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(without))
    _, out, _ = run_cli("check", str(path), "--format", "json")
    cli_host = json.loads(out)["resolved"]["host"]
    assert len({h.model_dump_json() for h in hosts.values() if h is not None}) == 1, hosts
    assert cli_host == hosts["spec auto"].model_dump()  # type: ignore[union-attr]


BATCH_FAMILIES = sorted(
    {t.split(".")[1] for t in CATALOG.sagemaker.transform_instance_types.types} & set(CATALOG.families)
)
VLLM = [("vllm", v) for v in CATALOG.vllm_dlc_versions()]


@pytest.mark.parametrize("family", BATCH_FAMILIES)
def test_batch_auto_host_passes_every_host_rule_or_no_batch_host_does(family: str) -> None:
    """serving: batch picks among the batch transform host images only; the same property as above."""
    for framework, version in VLLM:
        spec = {**_spec(family, framework, version, "auto"), "serving": "batch"}
        result = check(spec)
        assert result.deployment.host is not None
        assert result.deployment.host.inference_ami_version in CATALOG.batch_amis
        problems = [f for f in result.findings if f.code in HOST_RULES and f.severity.value != "info"]
        if not problems:
            continue
        for host in CATALOG.batch_amis:
            assert _host_findings({**_spec(family, framework, version, host), "serving": "batch"}), (
                f"{family} + vLLM {version} (batch): auto picked {result.deployment.host} with {problems}, "
                f"but {host} passes every host rule"
            )


def test_batch_refuses_endpoint_host_images_and_the_reverse() -> None:
    batch = {**_spec("g6e", "vllm", "0.15.1", "al2-ami-sagemaker-inference-gpu-3-1"), "serving": "batch"}
    assert "SI214" in {f.code for f in check(batch).errors}
    endpoint = _spec("g6e", "vllm", "0.15.1", "al2-ami-sagemaker-batch-gpu-535")
    assert "SI214" in {f.code for f in check(endpoint).errors}


def test_batch_host_on_driver_470_is_refused_for_current_vllm() -> None:
    """The older batch image (driver 470) runs no CUDA 12 container: auto never picks it for vLLM."""
    spec = {**_spec("g5", "vllm", "0.15.1", "al2-ami-sagemaker-batch-gpu-470"), "serving": "batch"}
    assert {"SI210"} <= {f.code for f in check(spec).errors}


def test_every_batch_host_fix_passes_every_host_rule() -> None:
    fixed = 0
    for family in BATCH_FAMILIES:
        for framework, version in VLLM:
            for host in [*CATALOG.batch_amis, *CATALOG.amis]:
                spec = {**_spec(family, framework, version, host), "serving": "batch"}
                for finding in _host_findings(spec):
                    named = re.search(r"inference_ami_version: (\S+),", finding.fix)
                    if named is None:
                        continue
                    after = _host_findings({**spec, "inference_ami_version": named.group(1)})
                    assert not after, (
                        f"{family} {version} batch on {host}: fix {finding.fix!r} still fails {after}"
                    )
                    fixed += 1
    assert fixed > 50, f"only {fixed} batch host findings with a fix were checked"


# Pinned from AWS, not from the catalog: "G7 instances (RTX PRO 4500 / Blackwell) require NVIDIA driver
# 595+. The default EKS GPU AMI ships with driver 580 which does not support G7" (awslabs/amazon-eks-ami
# PR #2747). SageMaker's host images bring 535, 550 or 580 (botocore's InferenceAmiVersion documentation).
def test_no_r580_or_older_host_image_is_said_to_drive_a_g7() -> None:
    for host in CATALOG.amis:
        codes = {
            f.code for f in check(_spec("g7", "vllm", "0.20.1", host)).findings if f.severity.value == "error"
        }
        assert "SI213" in codes, host
    auto = check(_spec("g7", "vllm", "0.20.1", "auto"))
    assert auto.deployment.host.inference_ami_version is None  # SageMaker's default host, unverified
    (warning,) = [f for f in auto.findings if f.code == "SI211"]
    assert "set inference_ami_version to default" in warning.fix
