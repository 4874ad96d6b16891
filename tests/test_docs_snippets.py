"""Code in README.md and docs/ that is marked runnable runs, so the docs cannot drift from the code.

`<!-- runnable -->` before a ```python block: a complete CDK app (it calls app.synth() itself).
`<!-- runnable: in a stack -->`: a fragment; it runs with `app`, `stack` (us-west-2), `my_function` (an
IGrantable) and speculative_infra's public names defined, then the app is synthesized.
"""

from __future__ import annotations

import re
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam

import speculative_infra
from tests.conftest import REPO

BLOCK = re.compile(r"<!-- runnable(?P<fragment>: in a stack)? -->\n```python\n(?P<code>.*?)\n```", re.S)
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SNIPPETS = [
    pytest.param(
        bool(m["fragment"]), m["code"], id=f"{page.relative_to(REPO)}:{text[: m.start()].count(chr(10)) + 1}"
    )
    for page in PAGES
    for text in [page.read_text(encoding="utf-8")]
    for m in BLOCK.finditer(text)
]


def test_the_readme_app_is_marked_runnable():
    assert any("README.md" in p.id for p in SNIPPETS) and len(SNIPPETS) >= 7


@pytest.mark.parametrize(("fragment", "code"), SNIPPETS)
def test_snippet_runs(fragment: bool, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path / "cdk.out"))
    namespace: dict[str, object] = {"__name__": "__snippet__"}
    if fragment:
        app = cdk.App(outdir=str(tmp_path / "cdk.out"))
        stack = cdk.Stack(app, "Docs", env=cdk.Environment(region="us-west-2"))
        my_function = iam.Role(stack, "Caller", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        namespace.update({name: getattr(speculative_infra, name) for name in speculative_infra.__all__})
        namespace.update({"cdk": cdk, "app": app, "stack": stack, "my_function": my_function})
    exec(compile(code, "<snippet>", "exec"), namespace)
    app = namespace["app"]
    assert isinstance(app, cdk.App)
    assembly = app.synth()
    assert assembly.stacks and all(s.template["Resources"] for s in assembly.stacks)
