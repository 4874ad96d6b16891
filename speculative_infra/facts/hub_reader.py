"""Read a repository's config.json, size and gated flag from the Hugging Face Hub or a local folder.

The Hub is reached over its public HTTP API (the endpoint is HF_ENDPOINT, as huggingface_hub reads it):
  GET {endpoint}/api/models/{repo}/revision/{revision}?blobs=true  -> gated flag, files and their sizes
  GET {endpoint}/{repo}/resolve/{revision}/config.json            -> the config
Both accept a token (Authorization: Bearer) for gated repositories.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from speculative_infra.facts.hub_config import ConfigError, FetchedFacts, facts_from_config

DEFAULT_ENDPOINT = "https://huggingface.co"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")


class FactsFetchError(Exception):
    """The repository could not be read, or its config lacks what the rules need.

    kind: "access" (401/403: gated or private), "not_found", "network", "answer" (not JSON, other HTTP
    errors) or "config" (read, but without the facts the checks need).
    """

    def __init__(self, message: str, kind: str = "answer") -> None:
        super().__init__(message)
        self.kind = kind


def _weights_bytes(sizes: dict[str, int]) -> int | None:
    # Prefer safetensors: repositories often carry the same weights in two formats.
    for suffixes in ((".safetensors",), _WEIGHT_SUFFIXES):
        total = sum(size for name, size in sizes.items() if name.endswith(suffixes))
        if total:
            return total
    return None


def _get_json(url: str, token: str | None, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as err:
        if err.code in (401, 403):
            hint = "the repository is gated or private: set HF_TOKEN to a token that has access"
            if token:
                hint = "the token has no access: accept the model's licence on its Hub page with that account"
            raise FactsFetchError(f"{url}: HTTP {err.code}; {hint}", "access") from None
        if err.code == 404:
            raise FactsFetchError(
                f"{url}: HTTP 404; check the repository id and revision", "not_found"
            ) from None
        raise FactsFetchError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise FactsFetchError(f"{url}: cannot connect ({err})", "network") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FactsFetchError(f"{url}: the answer is not JSON ({err})") from None


def read_hub_repository(
    repo_id: str,
    revision: str = "main",
    *,
    endpoint: str = DEFAULT_ENDPOINT,
    token: str | None = None,
    timeout: float = 30.0,
) -> FetchedFacts:
    base = endpoint.rstrip("/")
    quoted_rev = urllib.parse.quote(revision, safe="")
    info = _get_json(f"{base}/api/models/{repo_id}/revision/{quoted_rev}?blobs=true", token, timeout)
    config = _get_json(f"{base}/{repo_id}/resolve/{quoted_rev}/config.json", token, timeout)
    if not isinstance(info, dict) or not isinstance(config, dict):
        raise FactsFetchError(f"{repo_id}: unexpected answer from {base}")
    sizes = {
        str(s.get("rfilename")): int(s["size"])
        for s in info.get("siblings") or []
        if isinstance(s, dict) and isinstance(s.get("size"), int)
    }
    safetensors = info.get("safetensors") or {}
    parameters = safetensors.get("total") if isinstance(safetensors.get("total"), int) else None
    gated = info.get("gated")
    try:
        return facts_from_config(
            config,
            repo_id=repo_id,
            revision=str(info.get("sha") or revision),
            origin=f"{base}/{repo_id}",
            weights_bytes=_weights_bytes(sizes),
            parameters=parameters,
            gated=None if gated is None else gated is not False,  # False, "auto" or "manual"
        )
    except ConfigError as err:
        raise FactsFetchError(str(err), "config") from None


def read_local_folder(folder: Path, repo_id: str, *, gated: bool | None = None) -> FetchedFacts:
    """A downloaded repository (or any folder with its config.json and weights)."""
    config_path = folder / "config.json"
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FactsFetchError(f"{config_path}: cannot read a JSON config ({err})") from None
    if not isinstance(config, dict):
        raise FactsFetchError(f"{config_path}: not a JSON object")
    sizes = {p.name: p.stat().st_size for p in folder.iterdir() if p.is_file()}
    try:
        return facts_from_config(
            config,
            repo_id=repo_id,
            revision="local",
            origin=str(folder.resolve()),
            weights_bytes=_weights_bytes(sizes),
            gated=gated,
        )
    except ConfigError as err:
        raise FactsFetchError(str(err), "config") from None
