"""The candidate-vs-served measurement, against the SageMaker stand-in with replayed capture lines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from speculative_infra_lambda.retraining_evaluate import handler
from tests.benchmark.conftest import SCENARIOS, aws_env  # noqa: F401 (the fixture)
from tests.benchmark.stand_ins.server import ServerProcess

CAPTURE = Path(__file__).parent / "fixtures" / "datacapture-sample.jsonl"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The cycle's dataset as the dataset step writes it from the capture fixture."""
    from speculative_infra_lambda.retraining_dataset.build import DatasetBuild

    build = DatasetBuild(max_chars=200)
    build.add_lines(CAPTURE.read_text().splitlines())
    path = tmp_path_factory.mktemp("cycle") / "dataset.jsonl"
    path.write_text(build.sharegpt_lines())
    return str(path)


@pytest.fixture(scope="module")
def runtime() -> Iterator[ServerProcess]:
    with ServerProcess(SCENARIOS) as server:
        yield server


# Dummy credentials, no shared config: boto3 signs requests that only reach the stand-in.
pytestmark = pytest.mark.usefixtures("aws_env")


def _event(runtime: ServerProcess, dataset: str, served: str, candidate: str) -> dict[str, Any]:
    return {
        "served": served,
        "candidate": candidate,
        "container": "vllm",
        "dataset_s3_uri": dataset,  # the engine reads a local file as it reads an S3 prefix
        "concurrency": 2,
        "requests": 6,
        "output_tokens": 24,
        "margin": 0.05,
        "request_timeout_s": 10,
        "endpoint_url": runtime.base_url,
        "region": "us-west-2",
    }


def test_a_head_that_accepts_more_measures_faster(runtime: ServerProcess, dataset: str) -> None:
    # "steady": one token per 4 ms chunk; "spec": three tokens per 8 ms chunk (a head accepting two drafts).
    result = handler.evaluate(_event(runtime, dataset, "steady", "spec"), seconds_available=60)
    served, candidate = result["served"], result["candidate"]
    assert served["tokens_per_chunk"] == pytest.approx(1.0)
    assert candidate["tokens_per_chunk"] == pytest.approx(3.0)
    assert candidate["output_throughput"] > result["required_output_throughput"]
    assert result["required_output_throughput"] == pytest.approx(served["output_throughput"] * 1.05, rel=1e-3)


def test_the_reverse_does_not_clear_the_margin(runtime: ServerProcess, dataset: str) -> None:
    result = handler.evaluate(_event(runtime, dataset, "spec", "steady"), seconds_available=60)
    assert result["candidate"]["output_throughput"] < result["required_output_throughput"]


def test_an_endpoint_that_cannot_be_measured_fails_the_cycle(runtime: ServerProcess, dataset: str) -> None:
    with pytest.raises(handler.EvaluationError, match="sm_model_error: nothing measured"):
        handler.evaluate(_event(runtime, dataset, "steady", "sm_model_error"), seconds_available=60)


def test_missing_dataset_is_named() -> None:
    with pytest.raises(ValueError, match="dataset_s3_uri"):
        handler.evaluate({"served": "a", "candidate": "b"}, seconds_available=10)
