"""Turning engine-arg values into the strings a container's environment carries."""

from __future__ import annotations

import json
from typing import Any


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def scalar_text(value: Any) -> str:
    """Numbers and strings as vLLM's argparse reads them; dicts and lists as compact JSON."""
    if isinstance(value, (dict, list)):
        return compact_json(value)
    return str(value)
