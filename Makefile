# Two commands do all set-up on a fresh machine with Python >= 3.11:
#   make example   -- installs the package into .venv (nothing else: the example needs no extra),
#                     then runs the quick-start DAG (train, conditional sweep, report)
#   make test      -- also installs the test and docs extras, then lints (the docs site built
#                     with mkdocs --strict included) and runs the test suite
#   make test-fast -- the edit-run loop: tests/unit without lint and without the tests marked
#                     process/server/cluster/browser/slow (pyproject.toml), on two workers -- under 30 s
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

# Python caches compiled modules, and pytest its assert-rewritten test modules, in __pycache__:
# where the environment turns that off, every test worker recompiles ~500 test files at
# collection and every CLI child the package (measured: a third of a collection's CPU).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-test example test test-fast lint docs bench
.PHONY: lint-types lint-ruff lint-imports lint-architecture lint-docs

# The package alone: what `make example` needs (the quick-start runs on the package's own
# dependencies). The test extras (torch, keras, lightning, playwright...) are most of the
# install's time, so only the targets that run tests or lint install them.
$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(BIN)/.installed-test: $(BIN)/.installed
	$(BIN)/pip install -q -e '.[test,docs]'
	touch $@

setup: $(BIN)/.installed

setup-test: $(BIN)/.installed-test

example: setup
	$(BIN)/polyaxon-prefect check -f examples/quick-start/dag.yaml
	$(BIN)/polyaxon-prefect run -f examples/quick-start/dag.yaml

# The checks run side by side, each tool's output printed whole once it ends (--output-sync):
# a cold mypy (no cache, as in CI) is most of lint's time, and the other checks fit beside it
# on a second core instead of after it.
LINT_JOBS ?= 2
LINT_CHECKS := lint-types lint-ruff lint-imports lint-architecture lint-docs

lint: setup-test
	@$(MAKE) --no-print-directory -j$(LINT_JOBS) --output-sync=target $(LINT_CHECKS)

lint-types: setup-test
	$(BIN)/python -m mypy

lint-ruff: setup-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lint-imports: setup-test
	$(BIN)/lint-imports

lint-architecture: setup-test
	$(BIN)/python scripts/architecture_report.py --strict

lint-docs: setup-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The user guide and reference (docs/, mkdocs.yml) as a site under build/site. (Not --quiet:
# mkdocs 1.6 then stops counting the warnings that --strict fails on.)
docs: setup-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Lint, then the tests in parallel, one test file per worker (its module-scoped servers stay
# shared), the longest files handed out first (tests/conftest.py, `HEAVY_FILES`); the
# tests that assert a wall-clock budget run afterwards with nothing else, two at a time, in
# two lanes (marked `timing`; `TIMING_LANES` in tests/conftest.py). The last line is the
# whole target's wall time.
test: setup-test
	@started=$$(date +%s); status=0; \
	$(MAKE) --no-print-directory lint \
	&& $(BIN)/pytest -q -n 4 --dist loadfile --no-loadscope-reorder -m "not timing" --durations=40 \
	&& $(BIN)/pytest -q -m timing -n 2 --dist loadgroup $$($(BIN)/python -c 'from tests.conftest import timing_files; print(*timing_files())') \
	|| status=$$?; \
	echo "make test: $$(( $$(date +%s) - started )) s wall (lint, the parallel pass, the timing pass)"; \
	exit $$status

FAST := not process and not server and not cluster and not browser and not slow and not container

# Two workers: collecting tests/unit is a third of its CPU, and the two cores do it side by side.
test-fast: setup-test
	$(BIN)/pytest -q -n 2 -m "$(FAST)" tests/unit

bench: setup-test
	$(BIN)/python benchmarks/check_speed.py
	$(BIN)/python benchmarks/job_overhead.py
	$(BIN)/python benchmarks/dag_overhead.py
	$(BIN)/python benchmarks/sweep_overhead.py
	$(BIN)/python benchmarks/fanout_dag.py
	$(BIN)/python benchmarks/hpo_quality.py
	$(BIN)/python benchmarks/lifecycle.py
	$(BIN)/python benchmarks/yaml_speed.py
	$(BIN)/python benchmarks/replicas_startup.py
	$(BIN)/python benchmarks/code_hash.py
	$(BIN)/python benchmarks/thin_client.py
	$(BIN)/python benchmarks/server_start.py
