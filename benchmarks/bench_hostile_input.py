"""How fast is a hostile or careless input refused? Each class of issue 33 through the real CLI.

Each case runs `speculative-infra check` in this process (the same `main` the console script calls)
and prints its exit code and wall time. Target: every refusal exit 2 in well under a second (the slowest
must stay below 1 s on one core), with no traceback.

    .venv/bin/python benchmarks/bench_hostile_input.py [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from speculative_infra.cli.main import main  # noqa: E402

SPEC = (
    "region: us-west-2\ninstance_type: ml.g7e.2xlarge\ncontainer: {framework: vllm, version: '0.15.1'}\n"
    "model: {id: Qwen/Qwen3-32B}\n"
)


def _bomb(under: str) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    return SPEC + f"{under}:\n" + "\n".join("  " + line for line in lines) + "\n"


def _cases(folder: Path) -> dict[str, Callable[[], list[str]]]:
    def spec_text(name: str, text: str) -> Callable[[], list[str]]:
        def make() -> list[str]:
            path = folder / f"{name}.yaml"
            path.write_text(text)
            return ["check", str(path)]

        return make

    def fifo() -> list[str]:
        path = folder / "fifo.yaml"
        if not path.exists():
            os.mkfifo(path)
        return ["check", str(path)]

    def sparse() -> list[str]:
        path = folder / "sparse.yaml"
        with path.open("wb") as handle:
            handle.truncate(8 * 2**30)
        return ["check", str(path)]

    def context(content: bytes) -> Callable[[], list[str]]:
        def make() -> list[str]:
            (folder / "ok.yaml").write_text(SPEC)
            path = folder / "cdk.context.json"
            path.write_bytes(content)
            return ["check", str(folder / "ok.yaml"), "--context", str(path)]

        return make

    return {
        "spec: a FIFO": fifo,
        "spec: /dev/zero": lambda: ["check", "/dev/zero"],
        "spec: a directory": lambda: ["check", str(folder)],
        "spec: 8 GiB sparse file": sparse,
        "spec: alias bomb (10^9 values) at top level": spec_text("bomb0", _bomb("x_bomb")),
        "spec: alias bomb under engine": spec_text("bomb1", _bomb("engine")),
        "spec: alias bomb under environment": spec_text("bomb2", _bomb("environment")),
        "spec: 100,000 nested flow lists": spec_text("deep", SPEC + "engine: " + "[" * 100_000 + "\n"),
        "spec: 5,000-digit integer": spec_text("longint", SPEC + "instance_count: " + "1" * 5000 + "\n"),
        "spec: NaN scaling target": spec_text(
            "nan", SPEC + "scaling: {max_capacity: 2, target_value: .nan}\n"
        ),
        "spec: instance_count 1e30": spec_text(
            "huge", SPEC + "instance_count: 1000000000000000000000000000000\n"
        ),
        "context: 100,000 nested arrays": context(b"[" * 100_000 + b"]" * 100_000),
        "context: NaN": context(b'{"a": NaN}'),
    }


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the slowest is shown")
    args = parser.parse_args(argv)
    worst = 0.0
    failures = 0
    print(f"{'case':52} {'exit':>4} {'slowest s':>10}  message")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in _cases(Path(tmp)).items():
            slowest, code, message = 0.0, 0, ""
            for _ in range(args.repeat):
                argv_ = make()
                err = io.StringIO()
                start = time.perf_counter()
                with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                    code = main(argv_)
                slowest = max(slowest, time.perf_counter() - start)
                message = err.getvalue().strip().splitlines()[-1][:70] if err.getvalue().strip() else ""
                failures += code != 2 or "Traceback" in err.getvalue()
            worst = max(worst, slowest)
            print(f"{name:52} {code:>4} {slowest:>10.3f}  {message.split(': ', 1)[-1]}")
    print(f"\nslowest refusal: {worst:.3f} s (target < 1 s); cases not refused with exit 2: {failures}")
    return 0 if worst < 1.0 and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main_())
