"""Real prompts: ShareGPT, JSON lines and SageMaker data capture, from files (generated here) and S3."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import boto3
import pytest

from speculative_infra.benchmark.config import (
    ConfigError,
    CostConfig,
    DatasetConfig,
    LoadConfig,
    WorkloadConfig,
)
from speculative_infra.benchmark.datasets import load_dataset
from speculative_infra.benchmark.load import run_level
from speculative_infra.benchmark.metrics import summarize_level
from speculative_infra.benchmark.workload import PromptFactory
from speculative_infra.cli.main import main

from .fakes import FakeClock, FakeTransport

SHAREGPT = [
    {
        "id": "a",
        "conversations": [
            {"from": "system", "value": "You are terse."},
            {"from": "human", "value": "Name three rivers of Europe"},
            {"from": "gpt", "value": "Danube Rhine Seine"},
            {"from": "human", "value": "And Asia?"},
        ],
    },
    {"id": "no-human", "conversations": [{"from": "gpt", "value": "hello"}]},
    {"id": "b", "conversations": [{"from": "human", "value": "Write a haiku about the sea"}]},
]


def _capture(body: dict[str, object], encoding: str) -> str:
    raw = json.dumps(body)
    data = base64.b64encode(raw.encode()).decode() if encoding == "BASE64" else raw
    # The layout SageMaker endpoint data capture writes, one record per line.
    return json.dumps(
        {
            "captureData": {
                "endpointInput": {
                    "observedContentType": "application/json",
                    "mode": "INPUT",
                    "data": data,
                    "encoding": encoding,
                },
                "endpointOutput": {
                    "observedContentType": "text/event-stream",
                    "mode": "OUTPUT",
                    "data": "",
                    "encoding": "BASE64",
                },
            },
            "eventMetadata": {"eventId": "e1", "inferenceTime": "2026-11-30T10:00:00Z"},
            "eventVersion": "0",
        }
    )


def test_sharegpt_takes_the_first_exchange_and_the_answers_length(tmp_path: Path) -> None:
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(SHAREGPT))
    first, second = load_dataset(DatasetConfig(path=str(path)))
    assert first.messages == (
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Name three rivers of Europe"},
    )
    assert first.output_tokens == 3 and first.estimated_input_tokens == 3 + 5
    assert second.output_tokens is None and second.messages[-1]["content"].startswith("Write a haiku")


def test_json_lines_of_prompts_and_messages(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        '{"prompt": "Summarise this text", "max_tokens": 64}\n\n'
        '{"messages": [{"role": "user", "content": "Hi there"}]}\n'
        '{"messages": []}\n'
    )
    first, second = load_dataset(DatasetConfig(path=str(path)))
    assert (
        first.messages == ({"role": "user", "content": "Summarise this text"},) and first.output_tokens == 64
    )
    assert second.output_tokens is None


@pytest.mark.parametrize("encoding", ["JSON", "BASE64"])
def test_sagemaker_data_capture_replays_the_captured_requests(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "capture.jsonl"
    chat = {"messages": [{"role": "user", "content": "What is speculative decoding?"}], "max_tokens": 200}
    lmi = {"inputs": "Translate to French: good morning", "parameters": {"max_new_tokens": 32}}
    path.write_text(_capture(chat, encoding) + "\n" + _capture(lmi, encoding) + "\n")
    first, second = load_dataset(DatasetConfig(path=str(path)))
    assert first.messages[0]["content"] == "What is speculative decoding?" and first.output_tokens == 200
    assert second.messages[0]["content"].startswith("Translate") and second.output_tokens == 32


@pytest.mark.parametrize(
    ("content", "fmt", "reason"),
    [
        ("not json\n", "jsonl", "line 1 is not JSON"),
        ('{"a": 1}\n', "datacapture", "line 1 has no captureData.endpointInput.data"),
        ('{"x": 1}', "sharegpt", "line 1 is not a ShareGPT conversation"),
        ('{"messages": []}\n', "jsonl", "at least one request with text"),
    ],
)
def test_bad_datasets_name_the_file_and_the_line(tmp_path: Path, content: str, fmt: str, reason: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_dataset(DatasetConfig(path=str(path), format=fmt))  # type: ignore[arg-type]
    assert info.value.field == "dataset.path" and reason in str(info.value)


def test_a_level_sends_the_dataset_and_counts_each_requests_own_length(tmp_path: Path) -> None:
    path = tmp_path / "prompts.jsonl"
    path.write_text(
        "".join(json.dumps({"prompt": f"question {i} " * 3, "max_tokens": 5 + i}) + "\n" for i in range(4))
    )
    workload = WorkloadConfig(
        output_tokens=50, seed=3, dataset=DatasetConfig(path=str(path), output_length="record")
    )
    dataset = load_dataset(workload.dataset)  # type: ignore[arg-type]
    load = LoadConfig(concurrency_levels=(2,), requests_per_level=4, warmup_requests=0, sustain_load=False)

    def level(report_usage: bool):  # type: ignore[no-untyped-def]
        clock = FakeClock()
        # The fake always generates 5 tokens.
        transport = FakeTransport(clock, WorkloadConfig(output_tokens=5), report_usage=report_usage)
        run_ = asyncio.run(
            clock.drive(run_level(2, transport, PromptFactory(workload, dataset), load, clock))
        )
        return transport, summarize_level(run_, workload, CostConfig(), "usage")[0]

    transport, result = level(report_usage=True)
    bodies = [json.loads(b) for b in transport.bodies]
    assert {b["messages"][0]["content"].split()[1] for b in bodies} == {"0", "1", "2", "3"}
    assert sorted(b["max_tokens"] for b in bodies) == [5, 6, 7, 8]
    assert (
        result.short_outputs == 3
    )  # each request is held to its own length: only the one that asked 5 is full
    _, result = level(report_usage=False)  # no usage block: lengths from max_tokens, prompts estimated
    assert result.output_tokens_source == {"max_tokens": 4} and result.mean_output_tokens == pytest.approx(
        6.5
    )
    assert result.input_tokens_source == {"estimate": 4} and result.mean_input_tokens == pytest.approx(6.0)


def test_a_data_capture_prefix_in_s3(s3_server: str, aws_env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="capture")
    chat = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 9}
    for hour in ("10", "11"):
        s3.put_object(
            Bucket="capture", Key=f"ep/AllTraffic/2026/11/30/{hour}/part.jsonl", Body=_capture(chat, "BASE64")
        )
    s3.put_object(Bucket="capture", Key="other/x.jsonl", Body="not read")
    prompts = load_dataset(DatasetConfig(path="s3://capture/ep/AllTraffic/"))
    assert len(prompts) == 2 and prompts[0].output_tokens == 9


def test_the_cli_refuses_a_missing_dataset_before_sending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "bench",
            "--url",
            "http://127.0.0.1:9",
            "--dataset",
            str(tmp_path / "none.json"),
            "-o",
            str(tmp_path / "r.json"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "argument --dataset:" in err and "none.json" in err and "Traceback" not in err


def test_sharegpt_json_lines_as_the_optimization_job_reads_them(tmp_path):
    """One conversation per line (SageMaker's EAGLE sample data, and what the retraining dataset step
    writes) reads like the JSON-array form, detected by format auto."""
    lines = tmp_path / "dataset.jsonl"
    lines.write_text(
        '{"id": "1", "conversations": [{"from": "human", "value": "Hi there"}, {"from": "gpt", "value": "one two"}]}\n'
        '{"id": "2", "conversations": [{"from": "human", "value": "Count"}, {"from": "gpt", "value": ""}]}\n'
    )
    prompts = load_dataset(DatasetConfig(path=str(lines), format="auto", output_length="record"))
    assert [p.messages for p in prompts] == [
        ({"role": "user", "content": "Hi there"},),
        ({"role": "user", "content": "Count"},),
    ]
    assert [p.output_tokens for p in prompts] == [2, None]
