"""Checks on an EAGLE optimization job's inputs (construct-level: not part of a deployment spec)."""

from __future__ import annotations

from speculative_infra.catalog import load_catalog
from speculative_infra.rules.finding import Finding

CHECKS = {
    "SI800": (
        "Optimization job deployment instance type is one the API allows",
        "CreateOptimizationJob rejects DeploymentInstanceType values outside its enum (catalog: optimization.yaml).",
    ),
    "SI801": (
        "Model architecture has an EAGLE technique",
        "SageMaker trains EAGLE 3 heads for a fixed set of architectures and EAGLE 2 for Qwen3-Next only.",
    ),
    "SI802": (
        "S3 URIs of the job are well-formed",
        "A malformed URI fails the job only after it starts.",
    ),
}


def _finding(code: str, message: str, fix: str, field: str) -> Finding:
    title, _ = CHECKS[code]
    return Finding.error(code, title, message, fix, field)


def check_optimization_job(
    *,
    deployment_instance_type: str,
    architecture: str | None,
    model_id: str,
    uri_problems: list[tuple[str, str]],
) -> list[Finding]:
    cat = load_catalog()
    findings: list[Finding] = []
    allowed = cat.optimization.deployment_instance_types.values
    if deployment_instance_type not in allowed:
        families = sorted({t.split(".")[1] for t in allowed if t.startswith("ml.")})
        findings.append(
            _finding(
                "SI800",
                f"deployment_instance_type {deployment_instance_type!r} is not allowed for optimization jobs; "
                f"allowed families: {', '.join(families)}",
                f"choose one of: {', '.join(sorted(allowed))}",
                "deployment_instance_type",
            )
        )
    arch = cat.optimization.eagle_architectures
    if architecture is None:
        findings.append(
            _finding(
                "SI801",
                f"the architecture of {model_id!r} is unknown (not in the catalog)",
                "pass model_architecture (the HF config's architectures[0]), or use a catalog model",
                "model_architecture",
            )
        )
    elif arch.technique(architecture) is None:
        findings.append(
            _finding(
                "SI801",
                f"{model_id} has architecture {architecture}, for which SageMaker offers no EAGLE training; "
                f"EAGLE 3: {', '.join(arch.eagle3)}; EAGLE 2: {', '.join(arch.eagle2)}",
                "use an existing draft from the catalog (`speculative-infra catalog drafts`) or another model",
                "model_id",
            )
        )
    for field, problem in uri_problems:
        findings.append(_finding("SI802", problem, "use s3://<bucket>/<prefix>", field))
    return findings
