"""Integers as vLLM's command line reads some of them (human_readable_int in vllm/engine/arg_utils.py,
later vllm/utils/argparse_utils.py): "16k" is 16,000 and "16K" 16,384. Used by the spec (max_model_len),
the memory model and rule SI502."""

from __future__ import annotations

import math
import re

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_human_int(value: str, *, tera: bool = True) -> int | None:
    """An integer as vLLM's human_readable_int reads it: the text stripped, then a number with k/m/g/t
    (powers of 1000, decimals allowed) or K/M/G/T (powers of 1024, whole numbers only), else whatever
    Python's int() takes ("-1", "+8", "1_000"); None where it raises. Releases before t/T existed
    (`tera=False`) refuse "1t" and "1T". tests/golden/vllm_human_readable_int.json holds each release's
    own verdicts."""
    text = value.strip()
    match = _HUMAN_INT.fullmatch(text)
    if match is not None:
        number, suffix = match.groups()
        if suffix in "tT" and not tera:
            return None
        if suffix in _DECIMAL:
            scaled = float(number) * _DECIMAL[suffix]
            # vLLM's int() of an overflowing float raises OverflowError, which argparse does not catch
            # as a bad value: the server does not start, as for any value it refuses.
            return int(scaled) if math.isfinite(scaled) else None
        return None if "." in number else int(number) * _BINARY[suffix]
    try:
        return int(text)
    except ValueError:
        return None


def parses_as_int(value: str) -> bool:
    """Would Python's int() (vLLM's parser for plain integer flags) take the text?"""
    try:
        int(value)
    except ValueError:
        return False
    return True


HUMAN_INT_TYPES = ("human_int", "human_int_or_auto")  # the release data's value types for such flags


def reads_as_human_int(value_type: str, text: str, *, tera: bool = True) -> bool:
    """Would vLLM's parser for this value type (human_readable_int, or its _or_auto form, which also
    takes "-1" and "auto") accept the text?"""
    if parse_human_int(text, tera=tera) is not None:
        return True
    return value_type == "human_int_or_auto" and text.strip().lower() in ("-1", "auto")
