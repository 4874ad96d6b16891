"""Region rules: the DLC registry account and inference-component availability."""

from __future__ import annotations

from collections.abc import Iterator

from speculative_infra.catalog import load_catalog
from speculative_infra.resolve import ResolvedDeployment
from speculative_infra.rules.decorator import rule
from speculative_infra.rules.finding import Severity, Violation


@rule(
    code="SI110",
    name="region-has-dlc-registry",
    severity=Severity.ERROR,
    title="Region has a Deep Learning Containers registry",
    rationale="The image URI names the region's DLC account; without one the model cannot pull its image.",
)
def region_has_dlc_registry(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.region is None:
        return
    cat = load_catalog()
    if cat.dlc_account(d.region) is None:
        yield Violation(
            message=f"region {d.region!r} has no Deep Learning Containers registry in the catalog; "
            f"known regions: {', '.join(sorted(cat.dlc_accounts.accounts))}",
            fix="deploy to one of the listed regions",
            field="region",
        )


@rule(
    code="SI111",
    name="region-offers-inference-components",
    severity=Severity.ERROR,
    title="Region offers SageMaker inference components (LMI deployments)",
    rationale="LMI models deploy as AWS::SageMaker::InferenceComponent, which some regions do not offer.",
)
def region_offers_inference_components(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.region is None or d.endpoint_kind != "inference_component":
        return
    cat = load_catalog()
    if not cat.offers_inference_components(d.region):
        yield Violation(
            message=f"region {d.region!r} does not offer AWS::SageMaker::InferenceComponent, which LMI "
            "deployments use",
            fix="choose another region, or the vLLM container (framework: vllm) on a real-time endpoint",
            field="region",
        )
