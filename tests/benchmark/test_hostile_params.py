"""Hostile input, load parameters: every bad value of a `bench` flag is an argparse-style error naming the
flag, the value and the allowed range (exit 2) before any request; NaN and infinity are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from speculative_infra.benchmark.config import (
    MAX_REQUEST_RATE,
    MIN_REQUEST_RATE,
    ConfigError,
    LoadConfig,
    RateSweepConfig,
)
from speculative_infra.benchmark.rate_sweep import sweep_position
from speculative_infra.benchmark.results import LevelResult
from speculative_infra.cli.main import main

BASE = ["bench", "--url", "http://127.0.0.1:9", "--quiet"]


def exit_code(argv: list[str]) -> int:
    """main's return value, or the status argparse exits with (its own errors exit 2)."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(
    ("args", "flag", "shown"),
    [
        (["--request-rate", "1e-9"], "--request-rate", "1e-09"),
        (["--request-rate", "1e6"], "--request-rate", "1000000"),
        (["--request-rate", "nan"], "--request-rate", "nan"),
        (["--request-rate", "1,inf"], "--request-rate", "inf"),
        (["--concurrency", "100000"], "--concurrency", "100000"),
        (["--concurrency", "0"], "--concurrency", "0"),
        (["--timeout", "nan"], "--timeout", "nan"),
        (["--timeout", "inf"], "--timeout", "inf"),
        (["--timeout", "1e9"], "--timeout", "1000000000"),
        (["--timeout", "0.00001"], "--timeout", "1e-05"),
        (["--time-budget", "inf"], "--time-budget", "inf"),
        (["--time-budget", "1e12"], "--time-budget", "1000000000000.0"),
        (["--ramp-up", "nan"], "--ramp-up", "nan"),
        (["--ramp-up", "1e7"], "--ramp-up", "10000000"),
        (["--workers", "100000"], "--workers", "100000"),
        (["--requests-per-level", "1000000000"], "--requests-per-level", "1000000000"),
        (["--warmup", "1000000000"], "--warmup", "1000000000"),
        (["--max-retries", "1000"], "--max-retries", "1000"),
        (["--input-tokens", "1000000000"], "--input-tokens", "1000000000"),
        (["--output-tokens", "1000000000"], "--output-tokens", "1000000000"),
        (["--temperature", "nan"], "--temperature", "nan"),
        (["--temperature=-inf"], "--temperature", "-inf"),
        (["--temperature", "-1"], "--temperature", "-1"),
        (["--price-per-hour", "inf"], "--price-per-hour", "inf"),
        (["--price-per-hour", "1e12"], "--price-per-hour", "1000000000000.0"),
        (["--price-per-hour", "1", "--instance-count", "10000000"], "--instance-count", "10000000"),
        (["--request-rate", "1", "--burstiness", "1e-300"], "--burstiness", "1e-300"),
        (["--request-rate", "1", "--burstiness", "nan"], "--burstiness", "nan"),
        (["--request-rate", "1", "--max-concurrency", "10000000"], "--max-concurrency", "10000000"),
        (["--slo", "ttft_ms=nan", "--rate-sweep", "1"], "--slo", "nan"),
        (["--slo", "ttft_ms=500", "--rate-sweep", "1e-9"], "--rate-sweep", "1e-09"),
        (["--slo", "ttft_ms=500", "--rate-sweep", "inf"], "--rate-sweep", "inf"),
        (
            ["--slo", "ttft_ms=500", "--rate-sweep", "1", "--rate-sweep-steps", "1000"],
            "--rate-sweep-steps",
            "1000",
        ),
        (["--slo", "ttft_ms=500", "--rate-sweep", "1", "--slo-attainment", "nan"], "--slo-attainment", "nan"),
        (["--label", "x" * 1000], "--label", "xxxx"),
    ],
)
def test_a_bad_load_parameter_is_refused_naming_flag_value_and_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], flag: str, shown: str
) -> None:
    out = tmp_path / "r.json"
    assert exit_code([*BASE, *args, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"argument {flag}:" in err and shown in err, err
    # The allowed range (or kind) is said: ">= 0.01 and <= 1000", "must be > 0", "a finite number".
    assert any(word in err for word in (">=", "<=", "> 0", "finite", "at most")), err
    assert "Traceback" not in err
    assert not out.exists()


def test_the_bounds_live_in_the_config_records() -> None:
    # The Lambda and results files pass through the same records as the CLI.
    with pytest.raises(
        ConfigError, match=r"request_rates\[0\]: expected a finite number >= 0.01 and <= 1000"
    ):
        LoadConfig(request_rates=(1e-9,))
    with pytest.raises(ConfigError, match="request_timeout_s"):
        LoadConfig(request_timeout_s=float("inf"))
    LoadConfig(request_rates=(MIN_REQUEST_RATE, MAX_REQUEST_RATE))  # the bounds themselves are allowed


def test_a_rate_sweep_without_a_maximum_stops_doubling_at_the_engine_maximum() -> None:
    sweep = RateSweepConfig(start_rate=100.0)

    def sustained_level(rate: float) -> LevelResult:
        return LevelResult(
            concurrency=0,
            request_rate=rate,
            complete=True,
            stop_reason="complete",
            warmup_requests=0,
            planned_requests=1,
            completed=1,
            failed=0,
            cancelled=0,
            good_requests=1,
            p99_client_lag_ms=0.0,
        )

    levels: list[LevelResult] = []
    rate, _ = sweep_position(levels, sweep)
    while rate is not None:
        assert rate <= MAX_REQUEST_RATE
        levels.append(sustained_level(rate))
        rate, best = sweep_position(levels, sweep)
    assert best == MAX_REQUEST_RATE and len(levels) == 5  # 100, 200, 400, 800, 1000
