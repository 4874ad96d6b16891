"""Integers as vLLM's command line reads some of them (human_readable_int in vllm/engine/arg_utils.py):
"16k" is 16,000 and "16K" 16,384. Used by the spec (max_model_len), the memory model and rule SI502."""

from __future__ import annotations

import re

_HUMAN_INT = re.compile(r"^(\d+(?:\.\d+)?)([kKmMgGtT])$")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_human_int(value: str) -> int | None:
    """An integer as vLLM's human_readable_int reads it (vllm/engine/arg_utils.py): digits, or a number
    with k/m/g/t (powers of 1000, decimals allowed) or K/M/G/T (powers of 1024, whole numbers only);
    None if it would refuse the text."""
    text = value.strip()
    if text.isdigit():
        return int(text)
    match = _HUMAN_INT.match(text)
    if match is None:
        return None
    number, suffix = match.groups()
    if suffix in _DECIMAL:
        return int(float(number) * _DECIMAL[suffix])
    return int(number) * _BINARY[suffix] if number.isdigit() else None


HUMAN_INT_TYPES = ("human_int", "human_int_or_auto")  # the release data's value types for such flags


def reads_as_human_int(value_type: str, text: str) -> bool:
    """Would vLLM's parser for this value type (human_readable_int, or its _or_auto form, which also
    takes "-1" and "auto") accept the text?"""
    if parse_human_int(text) is not None:
        return True
    return value_type == "human_int_or_auto" and text.strip().lower() in ("-1", "auto")
