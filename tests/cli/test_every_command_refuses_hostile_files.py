"""Every command that reads a file the user names refuses each class of hostile file with exit 2 and a
message, never a traceback or a hang (issue 33). One table: command x file argument x class."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = str(REPO / "examples/specs/vllm-g7e-2xlarge.yaml")
RESULTS = str(REPO / "examples/report/results.json")
HANG_GUARD_S = 30  # a blocked command fails the test instead of hanging it (not a speed target)

# command line with {path} where the hostile file goes, and a word its message must hold
COMMANDS: dict[str, list[str]] = {
    "check SPEC": ["check", "{path}"],
    "check --context": ["check", SPEC, "--context", "{path}"],
    "check --benchmark-results": ["check", SPEC, "--daily-tokens", "5e7", "--benchmark-results", "{path}"],
    "plan predict SPEC": ["plan", "predict", "{path}", "--input-tokens", "512", "--output-tokens", "256",
                          "--concurrency", "1"],
    "plan predict --context": ["plan", "predict", SPEC, "--input-tokens", "512", "--output-tokens", "256",
                               "--concurrency", "1", "--context", "{path}"],
    "plan calibrate RESULTS": ["plan", "calibrate", "{path}", "--spec", SPEC, "--context", "{tmp}/c.json"],
    "plan calibrate --spec": ["plan", "calibrate", RESULTS, "--spec", "{path}", "--context", "{tmp}/c.json"],
    "preflight SPEC": ["preflight", "{path}", "--region", "us-east-1"],
    "facts fetch --context": ["facts", "fetch", "acme/model", "--from-folder", "{tmp}/model", "--gated", "no",
                              "--context", "{path}"],
    "report RESULTS": ["report", "{path}", "--out", "{tmp}/report"],
    "bench --dataset": ["bench", "--endpoint", "http://127.0.0.1:9/v1", "--dataset", "{path}",
                        "--concurrency", "1", "--requests-per-level", "1", "--output", "{tmp}/r.json"],
}  # fmt: skip


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _sparse(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(8 * 2**30)  # past every limit, without using the disk


MAKERS: dict[str, Callable[[Path], None]] = {
    "a FIFO": _fifo,
    "a directory": lambda path: path.mkdir(),
    "a device": lambda path: path.symlink_to("/dev/zero"),
    "an 8 GiB file": _sparse,
    "not UTF-8": lambda path: path.write_bytes(b"\xff\xfe\x00{"),
    "NaN": lambda path: path.write_text('{"a": NaN}\n'),
    "nested 100,000 deep": lambda path: path.write_text("[" * 100_000 + "]" * 100_000),
    "missing": lambda path: None,
}


def _run(run_cli: Any, argv: list[str]) -> tuple[int, str, str]:
    outcome: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("r", run_cli(*argv)), daemon=True)
    thread.start()
    thread.join(HANG_GUARD_S)
    assert not thread.is_alive(), f"{argv} blocked for {HANG_GUARD_S} s"
    return outcome["r"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", sorted(MAKERS))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_file_argument_refuses_every_hostile_kind(run_cli, tmp_path, monkeypatch, command, kind):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "")  # preflight must never reach AWS here
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(
        '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2, '
        '"num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 256, '
        '"max_position_embeddings": 1024, "vocab_size": 1000, "torch_dtype": "bfloat16"}'
    )
    with (model / "model.safetensors").open("wb") as weights:
        weights.truncate(64 * 2**20)  # 32 million bf16 parameters, sparse
    hostile = tmp_path / "hostile.file"
    MAKERS[kind](hostile)
    argv = [
        part.replace("{path}", str(hostile)).replace("{tmp}", str(tmp_path)) for part in COMMANDS[command]
    ]
    code, out, err = _run(run_cli, argv)
    if kind == "missing" and command in ("check --context", "plan predict --context"):
        assert code in (0, 1)  # an absent cdk.context.json is an empty context, as CDK reads it
        return
    if kind == "missing" and command == "facts fetch --context":
        assert code == 0  # a new context file is written
        return
    assert code == 2, (code, out[-500:], err[-500:])
    assert "Traceback" not in out + err
    assert str(hostile) in err or "hostile.file" in err, err[-500:]
