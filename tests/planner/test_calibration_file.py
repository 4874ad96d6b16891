"""The fitted constants name exactly the runs they were fitted on, and none the planner is judged on."""

from __future__ import annotations

import json

from scripts.planner_runs import FIT_MODEL, SUITE_FILE, fitting_levels, held_out_levels
from speculative_infra.catalog import load_catalog
from speculative_infra.planner.calibration import load_calibration


def test_fitted_on_lists_exactly_the_fitting_runs():
    listed = {run.id for run in load_calibration().fitted_on}
    assert listed == {lv.id for lv in fitting_levels()}
    assert not listed & {lv.id for lv in held_out_levels()}


def test_the_fitting_runs_are_clean_runs_of_the_fitting_model_with_a_source():
    records = {r["id"]: r for r in json.loads(SUITE_FILE.read_text())["records"]}
    for run in load_calibration().fitted_on:
        record = records[run.id]
        assert record["model_id"] == FIT_MODEL and not record["flags"], run.id
        assert run.source == record["source"] and "@" in run.source  # repository@commit:path


def test_held_out_runs_cover_models_the_planner_never_saw_measured():
    models = {lv.model_id for lv in held_out_levels()}
    assert "openai/gpt-oss-20b" in models and len(held_out_levels()) >= 100


def test_every_acceptance_figure_has_a_public_source():
    facts = load_catalog().acceptance
    for figures in facts.drafts.values():
        for f in figures:
            assert f.source.startswith(("http", "vllm-project/", "same ")), f.source
    for figures in load_calibration().acceptance.values():
        assert all("fitted on" in f.source for f in figures)
