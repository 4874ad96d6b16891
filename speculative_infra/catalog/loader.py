"""Load and index the catalog data files shipped inside the package.

Data is read through importlib.resources so it works the same from a checkout and from an installed
wheel. Loading is lazy and cached: importing the package parses nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, TypeAdapter

from speculative_infra.catalog.models import (
    AcceptanceFacts,
    Ami,
    ContainerImage,
    CudaFacts,
    DlcAccounts,
    Draft,
    ForwardCompat,
    Gpu,
    HostingRegionEvidence,
    InferenceComponentRegions,
    InstanceFamily,
    InstanceType,
    LmiRelease,
    LmiRepository,
    ModelFacts,
    Observation,
    OptimizationFacts,
    Price,
    PriceList,
    RecommendedAmis,
    SageMakerFacts,
    VllmDlcRelease,
    VllmDlcRepository,
    VllmFacts,
    version_tuple,
)

# libyaml's C parser where PyYAML has it (its wheels do): the catalog parses ~10x faster than in Python.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogError(Exception):
    """A catalog data file is missing or does not match its schema."""


def _read_yaml(name: str) -> Any:
    path = resources.files("speculative_infra.catalog") / "data" / name
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except (OSError, yaml.YAMLError) as err:
        raise CatalogError(f"cannot read catalog file {name}: {err}") from err


def _parse(adapter_type: Any, data: Any, name: str) -> Any:
    try:
        return TypeAdapter(adapter_type).validate_python(data)
    except ValueError as err:
        raise CatalogError(f"catalog file {name} does not match its schema: {err}") from err


class Catalog(BaseModel):
    """Every fact the rules and constructs use, indexed for lookup."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    gpus: dict[str, Gpu]
    families: dict[str, InstanceFamily]
    price_lists: list[PriceList]
    amis: dict[str, Ami]
    batch_amis: dict[str, Ami]  # TransformAmiVersion: the hosts of batch transform jobs
    recommended_amis: RecommendedAmis
    cuda: CudaFacts
    vllm_dlc: VllmDlcRepository
    lmi: LmiRepository
    observations: list[Observation]
    dlc_accounts: DlcAccounts
    inference_components: InferenceComponentRegions
    hosting_region_evidence: dict[str, list[HostingRegionEvidence]]
    models: dict[str, ModelFacts]
    drafts: dict[str, Draft]
    acceptance: AcceptanceFacts  # published acceptance lengths of drafts, for the planner
    vllm: VllmFacts
    optimization: OptimizationFacts
    sagemaker: SageMakerFacts

    # --- instances ---------------------------------------------------------------------------

    def instance_type(self, name: str) -> InstanceType | None:
        """'ml.g5.12xlarge' -> the joined facts, or None when the catalog does not know it."""
        parts = name.split(".")
        if len(parts) != 3 or parts[0] != "ml":
            return None
        family = self.families.get(parts[1])
        if family is None or parts[2] not in family.sizes:
            return None
        size = family.sizes[parts[2]]
        return InstanceType(
            name=name,
            family=parts[1],
            size=parts[2],
            gpu_name=family.gpu,
            gpu=self.gpus[family.gpu],
            gpu_count=size.gpus,
            vcpus=size.vcpus,
            memory_gib=size.memory_gib,
            default_host=family.default_host,
            storage=family.storage,
            tensor_parallel_link=family.tensor_parallel_link,
            source=family.source,
            confidence=family.confidence,
        )

    def families_where(self, gpu_ok: Callable[[Gpu], bool]) -> list[str]:
        """Instance families (g5, p5, ...) whose GPU passes a test: what a fix message suggests."""
        return sorted(name for name, family in self.families.items() if gpu_ok(self.gpus[family.gpu]))

    def max_gpus_per_instance(self) -> int:
        return max(size.gpus for family in self.families.values() for size in family.sizes.values())

    def instance_type_names(self) -> list[str]:
        return [f"ml.{fam}.{size}" for fam, family in self.families.items() for size in family.sizes]

    def price(self, instance_type: str, region: str | None = None) -> Price | None:
        """On-demand price; the region's list if we have one, else the first list that has it."""
        lists = sorted(self.price_lists, key=lambda p: p.region != region)
        for price_list in lists:
            if instance_type in price_list.usd_per_hour:
                return Price(
                    instance_type=instance_type,
                    usd_per_hour=price_list.usd_per_hour[instance_type],
                    region=price_list.region,
                    as_of=price_list.as_of,
                    source=price_list.source,
                    confidence=price_list.confidence,
                )
        return None

    # --- containers --------------------------------------------------------------------------

    def vllm_dlc_versions(self) -> list[str]:
        return sorted((r.version for r in self.vllm_dlc.releases), key=version_tuple)

    def container_vllm_versions(self, framework: str) -> list[str]:
        """The vLLM releases a container of this framework ships, oldest first: what a fix may suggest."""
        if framework == "vllm":
            return self.vllm_dlc_versions()
        return sorted({r.vllm_version for r in self.lmi.releases}, key=version_tuple)

    def lmi_versions(self) -> list[str]:
        return sorted((r.lmi_version for r in self.lmi.releases), key=int)

    def first_releases_with_cuda(self, minimum: str) -> str:
        """The oldest vLLM DLC and LMI releases built with CUDA >= minimum, for fix messages."""
        return self._first_releases(
            lambda r: version_tuple(r.cuda) >= version_tuple(minimum),
            lambda r: version_tuple(r.cuda) >= version_tuple(minimum),
        )

    def first_releases_running(self, runs: Callable[[str], bool | None]) -> str:
        """The oldest vLLM DLC and LMI releases from which every newer one's vLLM passes `runs(vllm_version)`
        (None: not known for that vLLM, which neither counts nor breaks the run)."""
        return self._first_releases(lambda r: runs(r.version), lambda r: runs(r.vllm_version))

    def _first_releases(
        self, vllm_ok: Callable[[VllmDlcRelease], bool | None], lmi_ok: Callable[[LmiRelease], bool | None]
    ) -> str:
        """'vLLM DLC X or newer, LMI vY or newer': the oldest release of each from which all newer pass."""
        vllm = _oldest_of_passing_tail(
            sorted(self.vllm_dlc.releases, key=lambda r: version_tuple(r.version)), vllm_ok
        )
        lmi = _oldest_of_passing_tail(sorted(self.lmi.releases, key=lambda r: int(r.lmi_version)), lmi_ok)
        named = [
            f"vLLM DLC {vllm.version} or newer" if vllm else "",
            f"LMI v{lmi.lmi_version} or newer" if lmi else "",
        ]
        return ", ".join(n for n in named if n) or "no release in the catalog yet"

    def container_images(self, framework: str) -> list[ContainerImage]:
        """Every image of this framework in the catalog, oldest first: what a fix may point to."""
        versions = self.vllm_dlc_versions() if framework == "vllm" else self.lmi_versions()
        return [image for v in versions if (image := self.container(framework, v)) is not None]

    def container(self, framework: str, version: str) -> ContainerImage | None:
        if framework == "vllm":
            rel = next((r for r in self.vllm_dlc.releases if r.version == version), None)
            if rel is None:
                return None
            return _image(
                "vllm",
                rel.version,
                rel.version,
                rel.cuda,
                self.vllm_dlc,
                rel.forward_compat,
                rel.boolean_env,
                {"version": rel.version, "os": rel.os},
            )
        if framework == "lmi":
            wanted = version.lower().removeprefix("v").removesuffix(".0.0")
            lmi = next((r for r in self.lmi.releases if r.lmi_version == wanted), None)
            if lmi is None:
                return None
            return _image(
                "lmi",
                lmi.lmi_version,
                lmi.vllm_version,
                lmi.cuda,
                self.lmi,
                lmi.forward_compat,
                None,
                {"lmi_version": lmi.lmi_version},
            )
        return None

    def observation(self, framework: str, version: str, family: str) -> Observation | None:
        for obs in self.observations:
            if (obs.framework, obs.version, obs.family) == (framework, version, family):
                return obs
        return None

    def default_host_evidence(self, container: ContainerImage, family: str) -> Observation | None:
        """What was seen on the family's default host for this image, else for one of the same framework and CUDA.

        A default host whose driver AWS does not document is judged by what ran there: an image that worked
        vouches for the driver to the images built on the same CUDA (failures are only taken as seen).
        """
        exact = self.observation(container.framework, container.version, family)
        if exact is not None:
            return exact
        for obs in self.observations:
            seen = self.container(obs.framework, obs.version)
            if (
                obs.family == family
                and obs.outcome == "works"
                and seen is not None
                and seen.cuda == container.cuda
            ):
                return obs
        return None

    # --- regions -----------------------------------------------------------------------------

    def dlc_account(self, region: str) -> str | None:
        return self.dlc_accounts.accounts.get(region)

    def offers_inference_components(self, region: str) -> bool:
        return region not in self.inference_components.unavailable_regions

    def hosting_regions(self, family: str) -> list[str] | None:
        """Regions public sources name as offering the family for SageMaker hosting; None: no source known."""
        evidence = self.hosting_region_evidence.get(family)
        if not evidence:
            return None
        return sorted({region for item in evidence for region in item.regions})

    # --- models ------------------------------------------------------------------------------

    def model(self, model_id: str) -> ModelFacts | None:
        return self.models.get(model_id)

    def draft(self, model_id: str) -> Draft | None:
        return self.drafts.get(model_id)


def _image(
    framework: Literal["vllm", "lmi"],
    version: str,
    vllm_version: str,
    cuda: str,
    repository: VllmDlcRepository | LmiRepository,
    forward_compat: ForwardCompat,
    boolean_env: Literal["empty", "true_false"] | None,
    tag_fields: dict[str, str],
) -> ContainerImage:
    """One image of either framework: the tag from the repository's pattern and the release's fields."""
    return ContainerImage(
        framework=framework,
        version=version,
        vllm_version=vllm_version,
        cuda=cuda,
        repository=repository.repository,
        tag=repository.tag_pattern.format(cuda_nodot=cuda.replace(".", ""), **tag_fields),
        forward_compat=forward_compat,
        boolean_env=boolean_env,
        source=repository.source,
        confidence=repository.confidence,
    )


@functools.lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """Parse and validate every catalog data file once per process."""
    containers = _read_yaml("containers.yaml")
    regions = _read_yaml("regions.yaml")
    cuda = _read_yaml("cuda.yaml")
    amis = _read_yaml("amis.yaml")
    data = {
        "gpus": _read_yaml("gpus.yaml")["gpus"],
        "families": _read_yaml("instances.yaml")["families"],
        "price_lists": _read_yaml("prices.yaml")["price_lists"],
        "amis": amis["amis"],
        "batch_amis": amis["batch_amis"],
        "recommended_amis": amis["recommended_by_cuda"],
        "cuda": cuda,
        "vllm_dlc": containers["vllm_dlc"],
        "lmi": containers["lmi"],
        "observations": containers["observations"],
        "dlc_accounts": regions["dlc_accounts"],
        "inference_components": regions["inference_components"],
        "hosting_region_evidence": regions["hosting_regions"],
        "models": _read_yaml("models.yaml")["models"],
        "drafts": _read_yaml("drafts.yaml")["drafts"],
        "acceptance": _read_yaml("acceptance.yaml"),
        "vllm": _read_yaml("vllm.yaml"),
        "optimization": _read_yaml("optimization.yaml"),
        "sagemaker": _read_yaml("sagemaker.yaml"),
    }
    catalog: Catalog = _parse(Catalog, data, "catalog")
    _check_references(catalog)
    return catalog


def _check_references(catalog: Catalog) -> None:
    """Cross-file consistency: every family names a known GPU, every draft a known target."""
    problems = [
        f"instance family {name!r} names unknown GPU {fam.gpu!r}"
        for name, fam in catalog.families.items()
        if fam.gpu not in catalog.gpus
    ]
    problems += [
        f"draft {name!r} names unknown target model {draft.target!r}"
        for name, draft in catalog.drafts.items()
        if draft.target is None or draft.target not in catalog.models
    ]
    problems += [
        f"recommended host image {ami!r} for CUDA {cuda} is not in amis.yaml"
        for cuda, ami in catalog.recommended_amis.amis.items()
        if ami not in catalog.amis
    ]
    problems += [
        f"compute capability {gpu.compute_capability} of {name} has no minimum CUDA in cuda.yaml"
        for name, gpu in catalog.gpus.items()
        if gpu.compute_capability not in catalog.cuda.min_cuda_by_compute_capability
    ]
    if problems:
        raise CatalogError("catalog is inconsistent: " + "; ".join(problems))


def _oldest_of_passing_tail(releases: list[Any], ok: Callable[[Any], bool | None]) -> Any | None:
    """Of releases sorted oldest first, the oldest one that passes and after which every release passes
    (a release `ok` knows nothing of, None, is skipped)."""
    oldest = None
    for release in reversed(releases):
        verdict = ok(release)
        if verdict is None:
            continue
        if not verdict:
            break
        oldest = release
    return oldest
