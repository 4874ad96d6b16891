"""The retraining dataset builder: capture lines in the documented format (JSON and BASE64 encodings,
chat, completions and LMI requests, streamed and failed answers) -> ShareGPT, against a local S3 (moto)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from speculative_infra_lambda.retraining_dataset import handler
from speculative_infra_lambda.retraining_dataset.build import DatasetBuild
from speculative_infra_lambda.retraining_dataset.capture import Dropped, conversation

SAMPLE = Path(__file__).parent / "fixtures" / "datacapture-sample.jsonl"
BUCKET = "capture-test"
PREFIX = "datacapture/qwen3/AllTraffic/2026/11/20/10/"


def test_each_documented_shape_becomes_a_conversation_or_a_reason():
    build = DatasetBuild(max_chars=200)
    build.add_lines(SAMPLE.read_text().splitlines())
    turns = [conv.turns for conv in build.conversations]
    assert turns == [
        (("system", "Be brief."), ("human", "What is EAGLE?"), ("gpt", "A speculative decoding head.")),
        (("human", "Summarize: the meeting moved to Thursday."), ("gpt", "Meeting on Thursday.")),  # BASE64
        (("human", "Count to three."), ("gpt", "")),  # a streamed answer is not kept: the job fills it
        (("human", "Translate to French: good morning"), ("gpt", "bonjour")),  # LMI
    ]
    assert dict(build.dropped) == {
        "duplicate": 1,
        "failed request": 1,
        "empty request": 1,
        "line not JSON": 1,
        "oversized": 1,
    }
    assert build.lines == 9


def test_sharegpt_output_is_what_the_optimization_job_reads():
    build = DatasetBuild(max_chars=200)
    build.add_lines(SAMPLE.read_text().splitlines())
    first = json.loads(build.sharegpt_lines().splitlines()[0])
    assert first == {
        "id": "e1",
        "conversations": [
            {"from": "system", "value": "Be brief."},
            {"from": "human", "value": "What is EAGLE?"},
            {"from": "gpt", "value": "A speculative decoding head."},
        ],
    }


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (
            '{"captureData": {"endpointInput": {"data": "%%%", "encoding": "BASE64"}}}',
            "request not decodable",
        ),
        ('{"captureData": {"endpointInput": {"data": "{not json", "encoding": "JSON"}}}', "request not JSON"),
        ('{"captureData": {}}', "no request"),
        ('{"something": "else"}', "not a capture record"),
    ],
)
def test_malformed_lines_name_their_reason(line, reason):
    with pytest.raises(Dropped, match=reason):
        conversation(line)


@pytest.fixture
def s3(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1")
    if BUCKET not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
        client.create_bucket(Bucket=BUCKET)
    client.put_object(Bucket=BUCKET, Key=PREFIX + "capture-1.jsonl", Body=SAMPLE.read_bytes())
    return client


def _event(**changes: Any) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "capture_s3_uri": f"s3://{BUCKET}/datacapture/qwen3/",
        "since": (now - timedelta(days=1)).isoformat(),
        "until": (now + timedelta(days=1)).isoformat(),
        "output_s3_uri": f"s3://{BUCKET}/datasets/cycle-1/",
        "min_conversations": 3,
        "max_chars": 200,
        **changes,
    }


def test_handler_writes_the_dataset_and_its_manifest(s3):
    result = handler.handler(_event(), None, s3=s3)
    assert result["skip"] is False and result["conversations"] == 4
    assert result["dataset_s3_uri"] == f"s3://{BUCKET}/datasets/cycle-1/data/"
    dataset = s3.get_object(Bucket=BUCKET, Key="datasets/cycle-1/data/dataset.jsonl")
    assert dataset["ServerSideEncryption"] == "AES256"
    assert len(dataset["Body"].read().decode().splitlines()) == 4
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key="datasets/cycle-1/manifest.json")["Body"].read())
    assert manifest["dropped"]["duplicate"] == 1 and manifest["sources"] == [
        f"s3://{BUCKET}/{PREFIX}capture-1.jsonl"
    ]


def test_below_the_minimum_the_cycle_is_skipped(s3):
    result = handler.handler(
        _event(min_conversations=5, output_s3_uri=f"s3://{BUCKET}/datasets/cycle-2/"), None, s3=s3
    )
    assert result["skip"] is True and result["dataset_s3_uri"] is None
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="datasets/cycle-2/")["Contents"]]
    assert keys == ["datasets/cycle-2/manifest.json"]


def test_objects_outside_the_window_are_not_read(s3):
    past = datetime.now(UTC) - timedelta(days=10)
    result = handler.handler(
        _event(since=(past - timedelta(days=1)).isoformat(), until=past.isoformat(), min_conversations=0),
        None,
        s3=s3,
    )
    assert result["conversations"] == 0


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"capture_s3_uri": "bucket/prefix"}, "capture_s3_uri"),
        ({"since": "yesterday"}, "since: expected an ISO 8601 time"),
        ({"until": "2000-01-01T00:00:00Z"}, "must be after since"),
        ({"min_conversations": "many"}, "must be integers"),
    ],
)
def test_bad_events_name_the_field(s3, changes, message):
    with pytest.raises(handler.DatasetInputError, match=message):
        handler.handler(_event(**changes), None, s3=s3)


def test_the_folder_runs_alone_as_a_lambda_asset(tmp_path: Path) -> None:
    """Copied out as a construct would ship it, it imports with only the standard library and boto3."""
    import shutil
    import subprocess
    import sys

    from speculative_infra_lambda import retraining_dataset

    shutil.copytree(Path(retraining_dataset.__file__).parent, tmp_path / "retraining_dataset")
    blocked = ["speculative_infra", "pydantic", "yaml", "aws_cdk"]
    script = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import retraining_dataset.handler as h\n"
        "assert callable(h.handler)\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, check=True, timeout=60)


def test_the_dataset_folder_reads_as_the_evaluation_and_the_job_read_it(s3, s3_server, monkeypatch):
    """Every object under dataset_s3_uri is read (the engine, the optimization job): only the dataset."""
    from speculative_infra.benchmark.config import DatasetConfig
    from speculative_infra.benchmark.datasets import load_dataset

    result = handler.handler(_event(output_s3_uri=f"s3://{BUCKET}/datasets/cycle-3/"), None, s3=s3)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s3_server)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="datasets/cycle-3/data/")["Contents"]]
    assert keys == ["datasets/cycle-3/data/dataset.jsonl"]
    prompts = load_dataset(DatasetConfig(path=result["dataset_s3_uri"], format="sharegpt"))
    assert len(prompts) == 4
