"""Nothing a user can read cites the project's internal notes: every fact names a public source."""

from __future__ import annotations

from tests.conftest import REPO

INTERNAL = "DOMAIN.md"
USER_VISIBLE = ["speculative_infra", "docs", "examples", "README.md", "CHANGELOG.md", "app.py"]


def test_no_user_visible_file_cites_the_internal_notes() -> None:
    files = []
    for name in USER_VISIBLE:
        path = REPO / name
        files += [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
    assert len(files) > 50  # the package, its data and the docs were found
    citing = [
        str(p.relative_to(REPO))
        for p in files
        if "__pycache__" not in p.parts and INTERNAL in p.read_text(encoding="utf-8", errors="ignore")
    ]
    assert citing == [], f"these files cite {INTERNAL}; name the public source instead"
