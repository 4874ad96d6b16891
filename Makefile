# Two entry points (README.md): `make synth` and `make test`. Both set everything up on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Node: the `node` package in package.json (a supported LTS) goes first on the PATH, so jsii and the CDK
# CLI run on it whatever Node the machine has (README.md, "Node.js").
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
export CDK_DISABLE_VERSION_CHECK := true

.PHONY: setup synth test lint typecheck unit docs mutation clean

setup: $(VENV)/.installed node_modules/.installed

$(VENV)/.installed: pyproject.toml setup.py constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Synthesize the example app (app.py) offline into cdk.out with the pinned CDK CLI.
synth: setup
	npx --no-install cdk synth --quiet --no-notices --output cdk.out

## The whole suite: lint, type check, generated docs up to date, tests (cfn-lint runs inside them).
test: setup lint typecheck
	$(PY) scripts/generate_rule_docs.py --check
	$(PY) scripts/generate_memory_docs.py --check
	$(PY) scripts/render_dashboard_picture.py --check
	$(PY) scripts/render_planner_plot.py --check
	$(PY) -m pytest -q

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck:
	$(VENV)/bin/mypy

docs: setup
	$(PY) scripts/generate_rule_docs.py
	$(PY) scripts/generate_memory_docs.py
	$(PY) scripts/render_dashboard_picture.py
	$(PY) scripts/render_planner_plot.py

## Mutation testing of the rules, the memory model, the host model, human-readable integers, the rendered
## environment, the cost text and the benchmark engine's metrics, SigV4 and batch projection (not in CI).
## Results: docs/testing.md.
mutation: setup
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[mutation]'
	rm -rf mutants
	$(VENV)/bin/mutmut run --max-children 2
	$(VENV)/bin/mutmut results

clean:
	rm -rf $(VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache mutants
