"""Which model architectures each vLLM release can serve as an EAGLE3 target or with pipeline parallelism,
and which it treats as multimodal: read from each release's wheel (its model registry and the classes it names) by
``scripts/probe_vllm_model_interfaces.py`` into ``catalog/data/vllm_model_interfaces.json``."""

from __future__ import annotations

import functools
import json
from importlib import resources

from pydantic import BaseModel, ConfigDict

__all__ = ["ReleaseModelInterfaces", "load_vllm_model_interfaces"]


class ReleaseModelInterfaces(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    wheel: str
    # Registry architectures whose class implements SupportsEagle3; None: the release does not check it.
    eagle3_architectures: frozenset[str] | None
    multimodal_architectures: frozenset[str]
    # Registered architectures whose class lacks SupportsPP (None: the release does not check it), and
    # vLLM's words when pipeline_parallel_size > 1 meets such a class.
    architectures_without_pipeline_parallel: frozenset[str] | None
    pipeline_parallel_refusal: str | None
    # Every architecture the registry resolves itself (_VLLM_MODELS); another loads through the Transformers
    # backend (one of transformers_backend_architectures) when transformers has a compatible class.
    registered_architectures: frozenset[str]
    transformers_backend_architectures: frozenset[str]
    quantization_min_capability: dict[str, str]  # --quantization method -> its get_min_capability()
    compressed_tensors_scheme_min_capability: dict[str, str]  # scheme (wna16, w8a8_fp8, ...) -> its floor

    def supports_pipeline_parallel(self, architecture: str) -> bool | None:
        """Whether the release lets pipeline parallelism load this registered architecture's class; None where
        it does not check, or the architecture is not registered."""
        if (
            self.architectures_without_pipeline_parallel is None
            or architecture not in self.registered_architectures
        ):
            return None
        return architecture not in self.architectures_without_pipeline_parallel


class VllmModelInterfaces(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    read_by: str
    source: str
    releases: dict[str, ReleaseModelInterfaces]


@functools.lru_cache(maxsize=1)
def load_vllm_model_interfaces() -> VllmModelInterfaces:
    data = resources.files("speculative_infra.catalog").joinpath("data/vllm_model_interfaces.json")
    return VllmModelInterfaces.model_validate(json.loads(data.read_text("utf-8")))
