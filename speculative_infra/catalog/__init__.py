"""The catalog: facts about instances, GPUs, CUDA, host images, containers, models, drafts, vLLM."""

from speculative_infra.catalog.loader import Catalog, CatalogError, load_catalog

__all__ = ["Catalog", "CatalogError", "load_catalog"]
