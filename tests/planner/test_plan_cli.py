"""`speculative-infra plan predict|recommend|calibrate` through the CLI's main(): shapes, exit codes, bad input."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from speculative_infra.check import check
from speculative_infra.planner.calibration import CONTEXT_KEY
from tests.conftest import EXAMPLE_SPECS, REPO

G7E = str(EXAMPLE_SPECS / "vllm-g7e-2xlarge.yaml")
WORKLOAD = ["--input-tokens", "1000", "--output-tokens", "560", "--prefix-tokens", "478"]


def test_predict_json_has_every_documented_field(run_cli, tmp_path):
    code, out, _ = run_cli(
        "plan", "predict", G7E, *WORKLOAD, "--concurrency", "1,8,32", "--format", "json",
        "--context", str(tmp_path / "none.json"),
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["ok"] is True and len(data["predictions"]) == 3
    fields = {
        "concurrency", "ttft_ms", "tpot_ms", "e2e_latency_ms", "output_tokens_per_s_per_request",
        "output_tokens_per_s", "requests_per_s", "usd_per_million_output_tokens", "usd_per_million_tokens",
        "bound", "range",
    }  # fmt: skip
    for level in data["predictions"]:
        assert fields <= level.keys()
        low, high = (
            level["range"]["output_tokens_per_s"]["low"],
            level["range"]["output_tokens_per_s"]["high"],
        )
        assert low <= level["output_tokens_per_s"] <= high
        # input and output counted: the in+out figure is the cheaper per token
        assert level["usd_per_million_tokens"] < level["usd_per_million_output_tokens"]
    assert data["assumptions"]["acceptance_length"]["source"]


def test_predict_text_is_a_table_with_the_assumptions(run_cli, tmp_path):
    code, out, _ = run_cli(
        "plan", "predict", G7E, *WORKLOAD, "--concurrency", "4", "--context", str(tmp_path / "x")
    )
    assert code == 0
    assert "tok/s/req" in out and "acceptance_length" in out and "bound" in out


def test_predict_exits_1_with_the_findings_when_check_refuses_the_spec(run_cli, tmp_path):
    code, out, _ = run_cli(
        "plan", "predict", str(EXAMPLE_SPECS / "vllm-g5-12xlarge.yaml"), *WORKLOAD, "--concurrency", "1",
        "--format", "json", "--context", str(tmp_path / "x"),
    )  # fmt: skip
    assert code == 1
    assert json.loads(out)["ok"] is False and any(f["code"] == "SI210" for f in json.loads(out)["findings"])


@pytest.mark.parametrize(
    "args, named",
    [
        (["--input-tokens", "0", "--output-tokens", "10", "--concurrency", "1"], "--input-tokens"),
        (["--input-tokens", "abc", "--output-tokens", "10", "--concurrency", "1"], "--input-tokens"),
        (["--input-tokens", "10", "--output-tokens", "-4", "--concurrency", "1"], "--output-tokens"),
        (["--input-tokens", "10", "--output-tokens", "4", "--concurrency", "0"], "--concurrency"),
        (["--input-tokens", "10", "--output-tokens", "4", "--concurrency", "nan"], "--concurrency"),
        (["--input-tokens", "10", "--output-tokens", "4", "--request-rate", "-1"], "--request-rate"),
        (["--input-tokens", "10", "--output-tokens", "4", "--request-rate", "inf"], "--request-rate"),
        (["--input-tokens", "10", "--output-tokens", "4"], "--concurrency"),
        (["--input-tokens", "4000", "--output-tokens", "400", "--concurrency", "1"], "max_model_len"),
        (
            ["--input-tokens", "10", "--output-tokens", "4", "--prefix-tokens", "11", "--concurrency", "1"],
            "--prefix-tokens",
        ),
        (
            [
                "--input-tokens",
                "10",
                "--output-tokens",
                "4",
                "--concurrency",
                "1",
                "--acceptance-length",
                "0.5",
            ],
            "--acceptance-length",
        ),
    ],
)
def test_bad_arguments_exit_2_naming_the_argument(run_cli, tmp_path, args, named):
    code, _, err = run_cli("plan", "predict", G7E, *args, "--context", str(tmp_path / "x"))
    assert code == 2
    assert named in err and "Traceback" not in err


def test_recommend_picks_g7e_for_the_reference_workload_and_writes_a_spec_check_accepts(run_cli, tmp_path):
    written = tmp_path / "best.yaml"
    code, out, _ = run_cli(
        "plan", "recommend", "--model", "Qwen/Qwen3-32B", *WORKLOAD, "--text-kind", "document_correction",
        "--concurrency", "32", "--families", "g5,g6e,g7e", "--format", "json", "--write-spec", str(written),
        "--context", str(tmp_path / "x"),
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    best = data["candidates"][0]
    assert best["spec"]["instance_type"] == "ml.g7e.2xlarge"
    costs = [c["prediction"]["usd_per_million_output_tokens"] for c in data["candidates"]]
    assert costs == sorted(costs)
    spec = yaml.safe_load(written.read_text())
    assert spec == best["spec"] and check(spec).ok


def test_recommend_ranks_candidates_meeting_the_slo_first(run_cli, tmp_path):
    code, out, _ = run_cli(
        "plan", "recommend", "--model", "Qwen/Qwen3-8B", "--input-tokens", "500", "--output-tokens", "200",
        "--concurrency", "16", "--slo", "tpot_ms=20", "--families", "g5,g6,g6e", "--format", "json", "--top", "50",
        "--context", str(tmp_path / "x"),
    )  # fmt: skip
    assert code == 0
    flags = [c["meets_slo"] for c in json.loads(out)["candidates"]]
    assert flags == sorted(flags, reverse=True)
    for c in json.loads(out)["candidates"]:
        assert c["meets_slo"] == (c["prediction"]["tpot_ms"] <= 20)


def test_recommend_for_a_model_the_catalog_lacks_gives_the_facts_fetch_hint(run_cli, tmp_path):
    code, _, err = run_cli(
        "plan", "recommend", "--model", "acme/unknown-7b", "--input-tokens", "10", "--output-tokens", "10",
        "--concurrency", "1", "--context", str(tmp_path / "x"),
    )  # fmt: skip
    assert code == 2 and "facts fetch acme/unknown-7b" in err


def test_calibrate_round_trips_a_results_file_through_the_context_file(run_cli, tmp_path):
    results = tmp_path / "results.json"
    shutil.copy(REPO / "tests/benchmark/fixtures/results_v1.json", results)
    context = tmp_path / "cdk.context.json"
    context.write_text(json.dumps({"unrelated": 1}))
    code, _, err = run_cli("plan", "calibrate", str(results), "--spec", G7E, "--context", str(context))
    assert code == 0, err
    stored = json.loads(context.read_text())
    assert stored["unrelated"] == 1
    [(key, entry)] = stored[CONTEXT_KEY].items()
    assert key.startswith("RTX-PRO-6000-Blackwell-Server|vllm 0.15.1|Qwen/Qwen3-32B|")
    code, out, _ = run_cli(
        "plan", "predict", G7E, *WORKLOAD, "--concurrency", "4", "--format", "json", "--context", str(context)
    )
    data = json.loads(out)
    assert data["assumptions"]["measured_factor"]["factor"] == pytest.approx(entry["factor"])
    assert any("measured on your deployment" in n for n in data["notes"])
    base = json.loads(run_cli("plan", "predict", G7E, *WORKLOAD, "--concurrency", "4", "--format", "json",
                              "--context", str(tmp_path / "none"))[1])  # fmt: skip
    scaled = data["predictions"][0]["output_tokens_per_s"] / base["predictions"][0]["output_tokens_per_s"]
    assert scaled == pytest.approx(entry["factor"], rel=0.01)


def test_a_corrupt_calibration_entry_is_exit_2_not_a_traceback(run_cli, tmp_path):
    context = tmp_path / "cdk.context.json"
    context.write_text(json.dumps({CONTEXT_KEY: {"x": {"factor": "fast"}}}))
    code, _, err = run_cli("plan", "predict", G7E, *WORKLOAD, "--concurrency", "4", "--context", str(context))
    assert code == 2 and "factor" in err
