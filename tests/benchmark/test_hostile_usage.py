"""Hostile input, numbers from a server: token counts that cannot be true (1e30, negative, not integers,
NaN, more than max_tokens allowed, far fewer than the chunks streamed) make that request a protocol
failure (``bad_response``), never 2e33 tokens/s. Through the real CLI against stand-in servers speaking
the OpenAI SSE and SageMaker event-stream protocols."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from speculative_infra.benchmark.recorder import (
    USAGE_MARGIN_TOKENS,
    StreamRecorder,
    count_problem,
    usage_problem,
)
from speculative_infra.cli.main import main

from .stand_ins.behavior import Behavior
from .stand_ins.server import ServerProcess

OUTPUT = 20  # --output-tokens: the max_tokens each request asks for
FAST = ["--input-tokens", "10", "--output-tokens", str(OUTPUT), "--requests-per-level", "3", "--warmup", "0"]
QUICK = {"ttft_s": 0.005, "chunk_interval_s": 0.001}

HOSTILE: dict[str, dict[str, Any]] = {
    "float_1e30": {"completion_tokens": 1e30},
    "int_1e30": {"completion_tokens": 10**30},
    "negative_prompt": {"prompt_tokens": -5},
    "string": {"completion_tokens": "20"},
    "bool": {"completion_tokens": True},
    "nan": {"completion_tokens": float("nan")},
    "float_count": {"completion_tokens": 20.0},
    "prompt_1e30": {"prompt_tokens": 1e30},
    "over_max_tokens": {"completion_tokens": OUTPUT + USAGE_MARGIN_TOKENS + 1},
    "too_few_for_the_chunks": {"completion_tokens": 1},  # 20 chunks of text streamed
}
SCENARIOS = {
    **{name: Behavior(**QUICK, usage_override=override) for name, override in HOSTILE.items()},
    "within_margin": Behavior(**QUICK, usage_override={"completion_tokens": OUTPUT + USAGE_MARGIN_TOKENS}),
    "honest": Behavior(**QUICK),
    "lmi_1e30": Behavior(**QUICK, usage_override={"generated_tokens": 1e30}),
    "lmi_negative": Behavior(**QUICK, usage_override={"input_length": -1}),
}


@pytest.fixture(scope="module")
def hostile_server() -> Iterator[ServerProcess]:
    with ServerProcess(SCENARIOS) as server:
        yield server


def _bench(argv: list[str], out: Path) -> int:
    try:
        return main([*argv, *FAST, "--concurrency", "1", "--quiet", "--output", str(out)])
    except SystemExit as exc:
        return int(exc.code or 0)


def _levels(out: Path) -> list[dict[str, Any]]:
    levels: list[dict[str, Any]] = json.loads(out.read_text())["levels"]
    return levels


@pytest.mark.parametrize("scenario", sorted(HOSTILE))
def test_implausible_usage_over_http_is_a_protocol_failure(
    hostile_server: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str
) -> None:
    out = tmp_path / "r.json"
    code = _bench(["bench", "--url", f"{hostile_server.base_url}/{scenario}"], out)
    err = capsys.readouterr().err
    # Every measured request failed: nothing was measured at the level (exit 3), and it says why.
    assert code == 3 and "bad_response" in err and "Traceback" not in err
    (level,) = _levels(out)
    assert level["failure_classes"] == {"bad_response": level["failed"]} and level["completed"] == 0
    assert "implausible token counts" in level["failure_examples"]["bad_response"]
    assert level["output_throughput"] is None and level["total_token_throughput"] is None
    records = [json.loads(line) for line in out.with_name("r.requests.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "failed" and r["output_tokens"] is None for r in records)
    assert all(r["prompt_tokens"] is None or 0 <= r["prompt_tokens"] <= 10_000_000 for r in records)


def test_usage_within_the_margin_and_honest_usage_are_measured(
    hostile_server: ServerProcess, tmp_path: Path
) -> None:
    for scenario, tokens in (("within_margin", OUTPUT + USAGE_MARGIN_TOKENS), ("honest", OUTPUT)):
        out = tmp_path / f"{scenario}.json"
        assert _bench(["bench", "--url", f"{hostile_server.base_url}/{scenario}"], out) == 0
        (level,) = _levels(out)
        assert level["failed"] == 0 and level["mean_output_tokens"] == tokens


@pytest.mark.parametrize(
    ("scenario", "field"), [("lmi_1e30", "generated_tokens"), ("lmi_negative", "input_length")]
)
def test_implausible_lmi_details_over_the_sagemaker_event_stream_are_a_protocol_failure(
    hostile_server: ServerProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    aws_env: None,
    scenario: str,
    field: str,
) -> None:
    out = tmp_path / "r.json"
    argv = [
        "bench",
        "--endpoint",
        scenario,
        "--region",
        "us-west-2",
        "--endpoint-url",
        hostile_server.base_url,
    ]
    code = _bench([*argv, "--container", "lmi"], out)
    err = capsys.readouterr().err
    assert code == 3 and "bad_response" in err and "Traceback" not in err
    (level,) = _levels(out)
    assert f"details.{field}" in level["failure_examples"]["bad_response"]
    assert level["output_throughput"] is None


def test_implausible_openai_usage_over_the_sagemaker_event_stream(
    hostile_server: ServerProcess, tmp_path: Path, aws_env: None
) -> None:
    out = tmp_path / "r.json"
    argv = [
        "bench",
        "--endpoint",
        "float_1e30",
        "--region",
        "us-west-2",
        "--endpoint-url",
        hostile_server.base_url,
    ]
    assert _bench(argv, out) == 3
    (level,) = _levels(out)
    assert "usage.completion_tokens is 1e+30" in level["failure_examples"]["bad_response"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (True, "not a token count"),
        (2.0, "not a token count"),
        (float("nan"), "not a token count"),
        ("9" * 1000, "..."),  # a long string is cut in the message
        (-1, "negative"),
        (10**40, "more than one request holds"),
    ],
)
def test_count_problem(value: object, problem: str) -> None:
    message = count_problem(value)
    assert message is not None and problem in message and len(message) < 200


def test_counts_that_can_be_true_pass() -> None:
    assert count_problem(0) is None and count_problem(10_000_000) is None
    rec = StreamRecorder(dispatched_at=0.0)
    rec.content_times = [0.1 * i for i in range(8)]
    rec.usage(12, 8)
    assert usage_problem(rec, max_output_tokens=8) is None
    rec.usage(12, 2)  # 8 chunks for 2 tokens: a proxy splitting 4 characters per token, at most
    assert usage_problem(rec, max_output_tokens=8) is None
    rec.usage(12, 1)
    assert usage_problem(rec, max_output_tokens=8) is not None
