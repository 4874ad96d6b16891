"""Each suffix of vLLM's human_readable_int, by hand (vllm/engine/arg_utils.py, later
vllm/utils/argparse_utils.py): lower case k/m/g/t are powers of 1000 and take decimals, upper case
K/M/G/T powers of 1024 and whole numbers only. Independent of the golden file of test_human_int.py."""

from __future__ import annotations

import pytest

from speculative_infra.human_int import parse_human_int, reads_as_human_int

DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@pytest.mark.parametrize(("suffix", "factor"), [*DECIMAL.items(), *BINARY.items()])
def test_each_suffix_scales_by_its_own_factor(suffix: str, factor: int) -> None:
    assert parse_human_int(f"1{suffix}") == factor
    assert parse_human_int(f"3{suffix}") == 3 * factor
    assert parse_human_int(f" 16{suffix} ") == 16 * factor  # stripped first, as vLLM does


def test_lower_and_upper_case_differ() -> None:
    assert parse_human_int("2m") == 2_000_000 and parse_human_int("2M") == 2_097_152
    assert parse_human_int("16k") == 16_000 and parse_human_int("16K") == 16_384
    assert parse_human_int("1g") == 1_000_000_000 and parse_human_int("1G") == 1_073_741_824
    assert parse_human_int("1t") == 1_000_000_000_000 and parse_human_int("1T") == 1_099_511_627_776


@pytest.mark.parametrize(
    ("text", "expected"),
    [("25.6k", 25_600), ("1.5m", 1_500_000), ("0.5g", 500_000_000), ("2.5t", 2_500_000_000_000),
     ("0.0001k", 0)],  # int(float(number) * factor): truncated, as vLLM's int() does
)  # fmt: skip
def test_decimals_with_a_decimal_suffix(text: str, expected: int) -> None:
    assert parse_human_int(text) == expected


@pytest.mark.parametrize("suffix", list(BINARY))
def test_no_decimals_with_a_binary_suffix(suffix: str) -> None:
    assert parse_human_int(f"1.5{suffix}") is None
    assert parse_human_int(f"2.0{suffix}") is None


@pytest.mark.parametrize("text", ["1t", "1T", "2.5t"])
def test_tera_only_where_the_release_reads_it(text: str) -> None:
    assert parse_human_int(text, tera=False) is None
    assert parse_human_int(text, tera=True) is not None
    # The other suffixes do not depend on it.
    assert parse_human_int("2m", tera=False) == 2_000_000 and parse_human_int("2M", tera=False) == 2**21


@pytest.mark.parametrize(
    "text", ["1Ki", "1Mi", "1kb", "1e3", "k", "M", "1 k", "-1k", "+1k", "1kk", "1p", "1P"]
)
def test_what_is_not_a_size(text: str) -> None:
    assert parse_human_int(text) is None


def test_plain_integers_and_the_auto_form() -> None:
    assert parse_human_int("4096") == 4096 and parse_human_int("-1") == -1
    assert reads_as_human_int("human_int", "2m") and reads_as_human_int("human_int", "2M")
    assert not reads_as_human_int("human_int", "auto")
    assert reads_as_human_int("human_int_or_auto", "auto") and reads_as_human_int(
        "human_int_or_auto", " AUTO "
    )
    assert not reads_as_human_int("human_int", "1.5K") and not reads_as_human_int("human_int_or_auto", "1.5K")
    assert not reads_as_human_int("human_int", "1t", tera=False)
    assert reads_as_human_int("human_int", "1t") and reads_as_human_int("human_int", "1T")  # tera by default
