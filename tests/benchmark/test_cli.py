"""`speculative-infra bench` / `report`: exit codes, one-line errors, result files, Ctrl-C."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from speculative_infra.cli.main import main

from .stand_ins.server import ServerProcess

REPO = Path(__file__).resolve().parents[2]
FAST = [
    "--input-tokens",
    "40",
    "--output-tokens",
    "20",
    "--requests-per-level",
    "4",
    "--warmup",
    "1",
    "--quiet",
]


def test_bench_writes_json_csv_jsonl_and_exits_0(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run" / "results.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/steady", "--concurrency", "1,2", *FAST]
    code = main(
        [*argv, "--price-per-hour", "4.2", "--instance-count", "2", "--seed", "9", "--output", str(out)]
    )
    assert code == 0
    result = json.loads(out.read_text())
    assert result["status"] == "complete"
    assert result["target"] == {
        "kind": "openai_http",
        "base_url": f"{stand_in.base_url}/steady",
        "api": "chat",
        "model": None,
    }
    assert result["workload"]["input_tokens"] == 40 and result["workload"]["seed"] == 9
    assert result["started_at"]
    required = {
        "concurrency",
        "completed",
        "failed",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "mean_ttft_ms",
        "median_ttft_ms",
        "p99_ttft_ms",
        "mean_tpot_ms",
        "median_tpot_ms",
        "median_itl_ms",
        "median_e2el_ms",
        "output_tokens_per_second_per_user",
        "mean_tokens_per_chunk",
        "cost_per_million_output_tokens",
        "p90_ttft_ms",
        "p99_client_lag_ms",
        "failure_classes",
    }
    for level in result["levels"]:
        assert required <= set(level)
        expected_cost = 4.2 * 2 / (3600 * level["output_throughput"]) * 1e6
        assert level["cost_per_million_output_tokens"] == pytest.approx(expected_cost)
    rows = list(csv.DictReader((tmp_path / "run" / "results.csv").open()))
    assert [r["concurrency"] for r in rows] == ["1", "2"]
    lines = [json.loads(line) for line in (tmp_path / "run" / "results.requests.jsonl").open()]
    measured = [line for line in lines if line["phase"] == "measured"]
    assert len(measured) == 8 and all(line["status"] == "ok" for line in measured)
    assert {line["phase"] for line in lines} >= {"warmup", "measured"}
    assert "done: 2 levels" in capsys.readouterr().err


def test_report_renders_plots_and_markdown(stand_in: ServerProcess, tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    base = [
        "bench",
        "--url",
        f"{stand_in.base_url}/spec",
        "--concurrency",
        "1,2",
        *FAST,
        "--price-per-hour",
        "1",
    ]
    assert main([*base, "--label", "eagle", "--output", str(first)]) == 0
    assert main([*base, "--label", "baseline", "--output", str(second)]) == 0
    assert main(["report", str(first), str(second), "--out", str(tmp_path / "report")]) == 0
    pngs = sorted(p.name for p in (tmp_path / "report").glob("*.png"))
    assert pngs == [
        "cost_vs_concurrency.png",
        "latency_vs_concurrency.png",
        "per_user_throughput_vs_concurrency.png",
        "throughput_vs_per_user.png",
    ]
    assert all((tmp_path / "report" / p).read_bytes().startswith(b"\x89PNG") for p in pngs)
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "## eagle" in markdown and "## baseline" in markdown and "![latency_vs_concurrency]" in markdown


def test_report_of_a_missing_or_foreign_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope.json"), "--out", str(tmp_path)]) == 2  # bad input
    (tmp_path / "other.json").write_text('{"hello": 1}')
    assert main(["report", str(tmp_path / "other.json"), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "cannot read" in err and "not a bench results file" in err and "Traceback" not in err


def test_some_failed_requests_exit_1(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/cli_flaky", "--concurrency", "1", *FAST, "--warmup", "0"]
    assert main([*argv, "--output", str(out)]) == 1
    assert "warning: 1 requests failed (1 server_error)" in capsys.readouterr().err
    [level] = json.loads(out.read_text())["levels"]
    assert (level["completed"], level["failed"]) == (3, 1)


def test_a_level_where_everything_fails_exits_3(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    code = main(
        ["bench", "--url", f"{stand_in.base_url}/broken", "--concurrency", "1", *FAST, "--output", str(out)]
    )
    # Every request breaks: the level aborts, nothing can be said about the endpoint.
    assert code == 3
    err = capsys.readouterr().err
    assert "stream_broken" in err and "Traceback" not in err
    assert json.loads(out.read_text())["levels"][0]["failure_classes"] == {"stream_broken": 2}


def test_unreachable_url_is_one_line_and_a_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert (
        main(["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1", *FAST, "--output", str(out)]) == 3
    )
    err_lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert err_lines[-1].startswith("error: concurrency 1:") and "connection_error" in err_lines[-1]
    assert json.loads(out.read_text())["status"] == "aborted"


def test_sagemaker_without_region_is_one_line_and_no_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], aws_env: None
) -> None:
    out = tmp_path / "r.json"
    assert main(["bench", "--endpoint", "my-endpoint", *FAST, "--output", str(out)]) == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "must specify a region" in last and "the run never started, so no results were written" in last
    assert list(tmp_path.iterdir()) == []  # no results, CSV or per-request file


@pytest.mark.parametrize("client", ["boto3", "asyncio"])
def test_a_run_without_aws_credentials_writes_no_results_file(
    stand_in: ServerProcess,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    aws_env: None,
    monkeypatch: pytest.MonkeyPatch,
    client: str,
) -> None:
    # botocore finds no credentials (NoCredentialsError with boto3): nothing is signed, nothing is sent.
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    out = tmp_path / "run" / "r.json"
    argv = ["bench", "--endpoint", "steady", "--region", "us-west-2", "--endpoint-url", stand_in.base_url]
    code = main([*argv, "--sagemaker-client", client, "--concurrency", "1,2", *FAST, "--output", str(out)])
    assert code == 3
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "credentials_error" in last
    assert last.endswith("the run never started, so no results were written")
    assert not out.parent.exists()  # not even the folder


def test_a_run_that_never_started_leaves_an_earlier_results_file(
    stand_in: ServerProcess, tmp_path: Path, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "r.json"
    argv = ["bench", "--endpoint", "steady", "--region", "us-west-2", "--endpoint-url", stand_in.base_url]
    assert main([*argv, "--concurrency", "1", *FAST, "--output", str(out)]) == 0
    earlier = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert set(earlier) == {"r.json", "r.csv", "r.requests.jsonl"}
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    assert main([*argv, "--concurrency", "1", *FAST, "--output", str(out)]) == 3
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == earlier


def test_a_signature_the_endpoint_refuses_writes_no_results_file(
    stand_in: ServerProcess, tmp_path: Path, aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The stand-in checks SigV4 as the runtime does: a wrong secret is refused as a credentials error.
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    out = tmp_path / "r.json"
    argv = ["bench", "--endpoint", "steady", "--region", "us-west-2", "--endpoint-url", stand_in.base_url]
    assert main([*argv, "--concurrency", "1", *FAST, "--output", str(out)]) == 3
    assert not out.exists()


def test_an_unwritable_output_fails_before_any_request(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "taken").write_text("a file where the folder should be")
    out = tmp_path / "taken" / "r.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/steady", "--concurrency", "1", *FAST]
    stand_in.truth(clear=True)
    assert main([*argv, "--output", str(out)]) == 3
    assert "error: cannot write results:" in capsys.readouterr().err
    assert stand_in.truth() == []  # not one request spent


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--url", "localhost:8000"], "--url"),
        (["--url", "http://h:1", "--concurrency", "1,0"], "--concurrency"),
        (["--url", "http://h:1", "--concurrency", "a"], "--concurrency"),
        (["--url", "http://h:1", "--inference-component", "ic"], "--inference-component"),
        (["--endpoint", "e", "--api", "chat"], "--api"),
        (["--url", "http://h:1", "--instance-count", "2"], "--instance-count"),
        (["--url", "http://h:1", "--shared-prefix-tokens", "1000"], "--shared-prefix-tokens"),
        (["--url", "http://h:1", "--timeout", "0"], "--timeout"),
        (["--url", "http://h:1", "--timeout", "inf"], "--timeout"),  # JSON has no infinity
        (["--url", "http://h:1", "--temperature", "nan"], "--temperature"),
        (["--endpoint", "x" * 64], "--endpoint"),
        (["--url", "http://h:1", "--endpoint", "e"], "--endpoint"),
    ],
)
def test_bad_arguments_name_the_argument(
    args: list[str], names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(["bench", *args, "--output", str(tmp_path / "r.json")])
    except SystemExit as exc:  # argparse's own checks exit directly
        code = int(exc.code or 0)
    assert code == 2
    err = capsys.readouterr().err
    assert f"argument {names}" in err and "usage:" in err
    assert not (tmp_path / "r.json").exists()


def test_ctrl_c_keeps_partial_results(stand_in: ServerProcess, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    cmd = [
        sys.executable,
        "-m",
        "speculative_infra.cli.main",
        "bench",
        "--url",
        f"{stand_in.base_url}/slow",
        "--concurrency",
        "1,2",
        "--input-tokens",
        "20",
        "--output-tokens",
        "10",
        "--requests-per-level",
        "50",
        "--warmup",
        "0",
        "--output",
        str(out),
    ]
    proc = subprocess.Popen(
        cmd, cwd=REPO, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    time.sleep(2.5)  # 10 tokens x 50 ms: a few requests complete
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err
    result = json.loads(out.read_text())
    assert result["status"] == "interrupted"
    [level] = result["levels"]
    assert level["stop_reason"] == "interrupted" and level["completed"] >= 1
    assert (tmp_path / "r.requests.jsonl").read_text().count('"phase":"measured"') >= level["completed"]


def test_price_comes_from_the_catalog_for_an_instance_type(stand_in: ServerProcess, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    code = main(
        [
            "bench",
            "--url",
            f"{stand_in.base_url}/steady",
            "--concurrency",
            "1",
            *FAST,
            "--instance-type",
            "ml.g7e.2xlarge",
            "--output",
            str(out),
        ]
    )
    assert code == 0
    result = json.loads(out.read_text())
    [level] = result["levels"]
    expected = 4.2039 / (3600 * level["output_throughput"]) * 1e6
    assert level["cost_per_million_output_tokens"] == pytest.approx(expected, rel=1e-6)


def test_unknown_price_names_the_argument(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "bench",
            "--url",
            "http://127.0.0.1:9",
            "--instance-type",
            "ml.p5en.48xlarge",
            "--output",
            str(tmp_path / "r.json"),
        ]
    )
    assert code == 2
    assert "argument --instance-type" in capsys.readouterr().err


def test_unreachable_with_few_requests_still_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two requests are too few to abort the level, but a level where every request failed measured nothing.
    out = tmp_path / "r.json"
    argv = ["bench", "--url", "http://127.0.0.1:9", "--concurrency", "1", "--requests-per-level", "2"]
    assert main([*argv, "--warmup", "0", "--output", str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("error: every request failed at C=1") and "connection_error" in err


def test_open_loop_with_a_dataset_and_slos_end_to_end(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(f'{{"prompt": "question {i}: what is a draft head?"}}\n' for i in range(8)))
    results = tmp_path / "open.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/spec", "--request-rate", "5,10", "--slo", "ttft_ms=5000"]
    argv += ["--dataset", str(dataset), "--requests-per-level", "4", "--warmup", "1", "--output-tokens", "8"]
    assert main([*argv, "--output", str(results)]) == 0
    err = capsys.readouterr().err
    assert "dataset: 8 requests" in err and "R=5/s" in err and "goodput" in err
    data = json.loads(results.read_text())
    assert [lv["request_rate"] for lv in data["levels"]] == [5.0, 10.0]
    assert all(lv["good_requests"] == 4 for lv in data["levels"]) and data["slo"]["ttft_ms"] == 5000
    assert data["workload"]["dataset"]["path"] == str(dataset)
    assert main(["report", str(results), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "throughput_and_goodput_vs_rate.png").read_bytes().startswith(b"\x89PNG")
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert (
        "| rate (req/s) |" in markdown
        and "- SLOs: ttft_ms <= 5000" in markdown
        and "Prompts: dataset" in markdown
    )


def test_rate_sweep_end_to_end(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "sweep.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/spec", "--rate-sweep", "4", "--rate-sweep-max", "8"]
    argv += ["--slo", "ttft_ms=5000", "--requests-per-level", "4", "--warmup", "1", "--output-tokens", "8"]
    assert main([*argv, "--output", str(results)]) == 0
    assert "highest rate within the SLOs: 8 requests/s" in capsys.readouterr().err
    data = json.loads(results.read_text())
    assert [lv["request_rate"] for lv in data["levels"]] == [4.0, 8.0] and data["max_sustained_rate"] == 8.0


def test_batch_mode_sends_every_record_once_and_projects_the_job(
    stand_in: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # BatchInference's input: OpenAI Batch API lines, each asking for its own length.
    lengths = [12, 12, 12, 12, 12, 12, 12, 24]
    dataset = tmp_path / "requests.jsonl"
    dataset.write_text(
        "".join(
            json.dumps(
                {
                    "custom_id": f"doc-{i}",
                    "method": "POST",
                    "url": "/v1/chat/completions",
                    "body": {
                        "messages": [{"role": "user", "content": f"summarize document {i}"}],
                        "max_tokens": n,
                    },
                }
            )
            + "\n"
            for i, n in enumerate(lengths)
        )
    )
    out = tmp_path / "batch.json"
    argv = ["bench", "--url", f"{stand_in.base_url}/steady", "--mode", "batch", "--dataset", str(dataset)]
    argv += ["--concurrency", "4", "--warmup", "0", "--instance-type", "ml.g6e.xlarge", "--quiet"]
    assert main([*argv, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    level = json.loads(out.read_text())["levels"][0]
    assert level["completed"] == len(lengths) and level["concurrency"] == 4
    records = [json.loads(line) for line in out.with_suffix(".requests.jsonl").read_text().splitlines()]
    measured = [r for r in records if r["phase"] == "measured"]
    assert sorted(r["output_tokens"] for r in measured) == sorted(lengths)  # each record once, its length
    assert not [r for r in records if r["phase"] == "filler"]  # a job has no filler at its end
    assert f"batch: {len(lengths)} records (0 failed) at 4 in flight" in printed
    assert "max_concurrent_transforms=4, instance_count=1" in printed
    assert "answers of up to 24 tokens" in printed and "per million output tokens" in printed


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        ([], "--mode batch: requires --dataset"),
        (["--dataset", "d.jsonl"], "--mode batch: requires one --concurrency"),
        (["--dataset", "d.jsonl", "--concurrency", "4,8"], "--mode batch: requires one --concurrency"),
        (["--dataset", "d.jsonl", "--concurrency", "4", "--requests-per-level", "3"], "--requests-per-level"),
        (["--dataset", "d.jsonl", "--concurrency", "4", "--request-rate", "3"], "--request-rate"),
    ],
)
def test_batch_mode_refuses_what_a_job_does_not_do(
    extra: list[str], names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["bench", "--url", "http://h:1", "--mode", "batch", *extra, "--output", str(tmp_path / "r.json")]
    )
    assert code == 2
    assert f"argument {names}" in capsys.readouterr().err
