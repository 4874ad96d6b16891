"""docs/deploying.md's streaming example runs, unchanged, against the SageMaker stand-in."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from tests.conftest import REPO

from .stand_ins.server import ServerProcess

MARK = "<!-- runnable: against the SageMaker stand-in (tests/benchmark/test_docs_invoke.py) -->"


def _snippet() -> str:
    text = (REPO / "docs" / "deploying.md").read_text(encoding="utf-8")
    match = re.search(re.escape(MARK) + r"\n```python\n(.*?)\n```", text, re.S)
    assert match, "the invoke example lost its marker"
    return match.group(1)


@pytest.mark.usefixtures("aws_env")
def test_streaming_example_prints_the_answer(stand_in: ServerProcess, monkeypatch: pytest.MonkeyPatch):
    # The stand-in splits the stream into 5-byte parts that cut lines and UTF-8 characters apart.
    monkeypatch.setenv("AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME", stand_in.base_url)
    code = _snippet().replace("<endpoint name>", "utf8_parts")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "deploying.md", "exec"), {"__name__": "__docs__"})
    printed = out.getvalue()
    assert printed and "漢" in printed and "🙂" in printed and "data:" not in printed
