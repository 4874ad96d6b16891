"""Golden table: deployments people actually ran, and what happened, through `check` and the constructs.

The expected verdict of every row is the observed outcome in observations.yaml, with its public
source. Nothing here reads an expected answer from the catalog: where the library and the world
disagree, the library is wrong (or the row explains, in `known_gap`, which issue will close it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk.assertions import Template

from speculative_infra import (
    CompatibilityError,
    InferenceComponentEndpoint,
    LmiInferenceComponent,
    SpeculativeVllmEndpoint,
)
from speculative_infra.check import check

TABLE = yaml.safe_load((Path(__file__).parent / "observations.yaml").read_text())
ROWS: list[dict[str, Any]] = TABLE["rows"]
KNOWN_GAPS: list[dict[str, Any]] = TABLE["known_gaps"]
REGION = "us-east-1"  # every row's instance type and inference components are offered there


def _spec(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "region": REGION,
        "instance_type": row["instance_type"],
        "inference_ami_version": row["host"],
        "container": row["container"],
        "model": row["model"],
        "engine": row.get("engine", {}),
        "speculative": row.get("speculative"),
    }


def _build(row: dict[str, Any]) -> cdk.Stack:
    app = cdk.App()
    stack = cdk.Stack(app, "Golden", env=cdk.Environment(region=REGION))
    model = dict(row["model"])
    model_id = model.pop("id")
    common: dict[str, Any] = {
        "model_id": model_id,
        "model_facts": model or None,
        "speculative": row.get("speculative"),
    }
    engine = dict(row.get("engine", {}))
    if row["container"]["framework"] == "vllm":
        SpeculativeVllmEndpoint(
            stack,
            "Endpoint",
            instance_type=row["instance_type"],
            vllm_version=row["container"]["version"],
            inference_ami_version=row["host"],
            engine=engine,
            **common,
        )
    else:
        endpoint = InferenceComponentEndpoint(
            stack, "Endpoint", instance_type=row["instance_type"], inference_ami_version=row["host"]
        )
        LmiInferenceComponent(
            stack,
            "Component",
            endpoint=endpoint,
            lmi_version=row["container"]["version"],
            tensor_parallel_degree=engine.pop("tensor_parallel_size", None),
            engine=engine,
            **common,
        )
    return stack


# A ratchet, not the goal: the table is asked to reach 25 rows with 10 failures (issue 13). These are
# the rows public sources could back so far; raise the numbers as rows are added, never lower them.
MIN_ROWS = 31
MIN_FAILURES = 12


def test_the_table_is_large_enough_and_sourced() -> None:
    assert len(ROWS) >= MIN_ROWS
    assert sum(r["outcome"] == "fails" for r in ROWS) >= MIN_FAILURES
    assert len({r["id"] for r in ROWS}) == len(ROWS)
    for row in ROWS:
        assert row["source"].strip() and row["confidence"] in ("verified", "reported"), row["id"]
        assert row["outcome"] in ("works", "fails"), row["id"]
        assert row["outcome"] == "works" or row.get("failure"), f"{row['id']}: a failure says what failed"
    for gap in KNOWN_GAPS:  # checked here, outside the expected failure, so a malformed row cannot hide
        assert gap["outcome"] == "fails" and gap["failure"] and gap["gap"] and gap["source"], gap["id"]
        assert gap["confidence"] in ("verified", "reported"), gap["id"]
        check(_spec(gap))  # a valid spec: the expected failure below is the verdict, not a spec error


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_check_agrees_with_what_happened(row: dict[str, Any]) -> None:
    result = check(_spec(row))
    errors = [f"{f.code}: {f.message}" for f in result.errors]
    if row["outcome"] == "works":
        assert result.ok, f"{row['id']} ran ({row['source']}), but check reports {errors}"
    else:
        assert not result.ok, (
            f"{row['id']} failed ({row['failure']}; {row['source']}), but check calls it deployable"
        )
        if row.get("codes"):
            assert set(row["codes"]) <= {f.code for f in result.errors}, errors


@pytest.mark.parametrize(
    "row",
    [pytest.param(r, id=r["id"], marks=pytest.mark.xfail(strict=True, reason=r["gap"])) for r in KNOWN_GAPS],
)
def test_known_gaps_are_still_gaps(row: dict[str, Any]) -> None:
    """Each of these failed in the world and `check` still calls it deployable: when one starts passing,
    strict xfail fails the suite, and the row moves into `rows`."""
    assert not check(_spec(row)).ok


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_constructs_agree_with_what_happened(row: dict[str, Any]) -> None:
    if row["outcome"] == "fails":
        with pytest.raises(CompatibilityError):
            _build(row)
        return
    stack = _build(row)
    variant = Template.from_stack(stack).find_resources("AWS::SageMaker::EndpointConfig")
    (config,) = variant.values()
    emitted = config["Properties"]["ProductionVariants"][0].get("InferenceAmiVersion")
    assert emitted == (None if row["host"] == "default" else row["host"]), row["id"]


@pytest.mark.parametrize(
    "row",
    [pytest.param(r, id=r["id"]) for r in ROWS if r["outcome"] == "works" and r["host"] == "default"],
)
def test_auto_keeps_the_default_host_where_it_was_seen_to_work(row):
    """What ran on SageMaker's default host stays there under `auto`: no needless host image change."""
    result = check({**_spec(row), "inference_ami_version": "auto"})
    assert result.deployment.host is not None
    assert result.deployment.host.inference_ami_version is None, result.deployment.host.reason
