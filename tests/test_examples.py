"""The worked examples stay true: examples/uncatalogued-model's walk-through gives the verdicts its
README shows, and examples/report is what `speculative-infra report` renders from its results.json."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from matplotlib.testing.compare import compare_images

from speculative_infra.cli.main import main
from tests.conftest import REPO

RunCli = Callable[..., tuple[int, str, str]]

UNCATALOGUED = REPO / "examples" / "uncatalogued-model"
MODEL_ID = "Qwen/Qwen2.5-7B"
# bfloat16 bytes of the model's 7,615,616,512 parameters (README.md there shows the sum).
WEIGHTS_BYTES = 15_231_233_024
REPORT = REPO / "examples" / "report"
# Rendering is deterministic on one matplotlib build; the tolerance (RMS of 0-255 pixel values) only
# absorbs anti-aliasing differences between builds. Moving a point by 0.5 ms or adding a character
# to the label gives an RMS above 6.
PIXEL_TOLERANCE = 1.0


def _readme_lines(pattern: str) -> list[str]:
    text = (UNCATALOGUED / "README.md").read_text(encoding="utf-8")
    return re.findall(pattern, text, flags=re.MULTILINE)


def _final_check_lines() -> list[str]:
    """The output lines the README shows of its final check (the console block that runs `check` with the
    fetched context), "..." elisions left out."""
    text = (UNCATALOGUED / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```console\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    checks = [
        b for b in blocks if b.startswith("$ speculative-infra check ") and "--context" in b.split("\n")[0]
    ]
    # The first check fails for want of facts; the one after the fetch is the deployable one.
    [block] = [b for b in checks if b.rstrip().endswith("\nDEPLOYABLE: 0 error(s), 0 warning(s)")]
    lines = block.splitlines()[1:]
    assert all(line.strip() for line in lines), "a blank line in the README's check output"
    return [line for line in lines if line != "..."]


def _verdict(out: str) -> str:
    return out.strip().splitlines()[-1]


def test_uncatalogued_model_walk_through(run_cli: RunCli, tmp_path: Path) -> None:
    context = tmp_path / "cdk.context.json"
    spec = str(UNCATALOGUED / "spec.yaml")
    in_readme = _readme_lines(r"^(?:NOT )?DEPLOYABLE: .*$")
    assert len(in_readme) == 2, in_readme

    code, out, _ = run_cli("check", spec, "--context", str(context))
    assert code == 1 and "SI330" in out
    assert _verdict(out) == in_readme[0]

    # The stand-in folder has no weights, so the fetch cannot size the model...
    code, _, err = run_cli(
        "facts", "fetch", MODEL_ID, "--from-folder", str(UNCATALOGUED / "model"), "--context", str(context)
    )
    assert code == 2 and err.strip() in _readme_lines(r"^speculative-infra facts fetch: .*$")

    # ... until a sparse placeholder of the real size stands beside config.json, as the README does.
    folder = tmp_path / "model"
    shutil.copytree(UNCATALOGUED / "model", folder)
    with (folder / "model.safetensors").open("wb") as placeholder:
        placeholder.truncate(WEIGHTS_BYTES)
    code, out, _ = run_cli(
        "facts", "fetch", MODEL_ID, "--from-folder", str(folder), "--context", str(context)
    )
    assert code == 0
    assert out.strip().replace(str(tmp_path), "$WORK") in _readme_lines(r"^wrote speculative-infra:.*$")

    code, out, _ = run_cli("check", spec, "--context", str(context))
    assert code == 0, out
    assert _verdict(out) == in_readme[1] == "DEPLOYABLE: 0 error(s), 0 warning(s)"
    # Every line the README shows of that output is one the check prints now, word for word and in order.
    shown = [" ".join(line.split()) for line in _final_check_lines()]
    assert len(shown) > 10, shown
    printed = iter(" ".join(line.split()) for line in out.splitlines())
    missing = [line for line in shown if not any(line == p for p in printed)]
    assert missing == []


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    assert main(["report", str(REPORT / "results.json"), "--out", str(out)]) == 0
    return out


def test_example_report_is_what_report_renders(rendered: Path) -> None:
    """If `report` changes, regenerate with `python scripts/make_example_report.py`."""
    committed = sorted(p.name for p in [REPORT / "report.md", *REPORT.glob("*.png")])
    assert sorted(p.name for p in rendered.iterdir()) == committed
    markdown = (rendered / "report.md").read_text(encoding="utf-8")
    assert markdown == (REPORT / "report.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("image", sorted(p.name for p in REPORT.glob("*.png")))
def test_example_report_plots_match(image: str, rendered: Path) -> None:
    difference = compare_images(str(REPORT / image), str(rendered / image), tol=PIXEL_TOLERANCE)
    assert difference is None, f"{difference}\nregenerate with `python scripts/make_example_report.py`"
