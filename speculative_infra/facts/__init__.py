"""Facts about Hugging Face repositories the catalog does not know, fetched once and kept in cdk.context.json.

`speculative-infra facts fetch ID` reads a repository's config.json (and its size and gated flag) from
the Hub or a local folder and writes the facts under one key of the app's cdk.context.json, the way CDK
context lookups cache what they find; `check` and the constructs read them there, so synthesis stays
offline and reproducible.
"""

from speculative_infra.facts.context_file import (
    CONTEXT_FILE,
    CONTEXT_PREFIX,
    ContextFileError,
    context_key,
    facts_from_context,
    read_context_file,
    write_facts,
)
from speculative_infra.facts.hub_config import FetchedFacts, facts_from_config
from speculative_infra.facts.hub_reader import FactsFetchError, read_hub_repository, read_local_folder
from speculative_infra.facts.overlay import catalog_with_facts

__all__ = [
    "CONTEXT_FILE",
    "CONTEXT_PREFIX",
    "ContextFileError",
    "FactsFetchError",
    "FetchedFacts",
    "catalog_with_facts",
    "context_key",
    "facts_from_config",
    "facts_from_context",
    "read_context_file",
    "read_hub_repository",
    "read_local_folder",
    "write_facts",
]
