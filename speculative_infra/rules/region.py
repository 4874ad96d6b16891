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


@rule(
    code="SI112",
    name="region-known-to-offer-family",
    severity=Severity.WARNING,
    title="A public source says the region offers the instance family for SageMaker hosting",
    rationale="An endpoint on a family the region does not offer fails at creation. The catalog's region "
    "lists come from AWS announcements and observed deployments and lag behind AWS; the account's endpoint "
    "quota, which `speculative-infra preflight` reads, settles it.",
)
def region_known_to_offer_family(d: ResolvedDeployment) -> Iterator[Violation]:
    if d.region is None or d.instance is None or d.spec.serving == "batch":
        return
    known = load_catalog().hosting_regions(d.instance.family)
    if known is None or d.region in known:
        return
    yield Violation(
        message=f"no public source the catalog holds says SageMaker hosting offers {d.instance.family} instances "
        f"in {d.region}; sources name {', '.join(known)} (lists from AWS announcements and deployments, which "
        "may be out of date)",
        fix=f"confirm with `speculative-infra preflight <spec> --region {d.region}`, which reads the account's "
        f"endpoint quota for {d.instance.name} there, or deploy in one of {', '.join(known)}",
        field="region",
    )
