# The two-command quickstart: `make demo` and `make test`. Both set themselves up.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup demo test torture lint typecheck unit integration compose-check bench sandbox-up sandbox-up-3 sandbox-down sandbox-status airflow-home clean

setup:
	@scripts/setup.sh

# The source mode the demo emulates: raft (default), gossip, v1 or tablets.
MODE ?= raft
# Both run inside cdcgen_dev.left_behind: they fail if they leave a process of this
# checkout running that they started (a sandbox node, a JVM, Airflow).
LEFT_BEHIND := $(BIN)/python -m cdcgen_dev.left_behind --
demo: setup
	$(LEFT_BEHIND) $(BIN)/python -m cdcgen_dev.demo --mode $(MODE)

# Two concurrent pytest sessions, every test in exactly one, and the type check beside
# them (cdcgen_dev.test_sessions).
test: setup lint
	$(LEFT_BEHIND) $(BIN)/python -m cdcgen_dev.test_sessions

# The seeded torture test (tests/integration/test_torture.py) with a larger budget than
# make test's: BUDGET examples of up to STEPS steps each, from seed SEED (a random one,
# printed, unless given). REPRODUCE=<blob> runs again the one example a failure's
# @reproduce_failure line names.
BUDGET ?= 20
STEPS ?= 12
SEED ?= random
REPRODUCE ?=
torture: setup
	CDCGEN_TORTURE_EXAMPLES=$(BUDGET) CDCGEN_TORTURE_STEPS=$(STEPS) CDCGEN_TORTURE_SEED=$(SEED) \
		CDCGEN_TORTURE_REPRODUCE='$(REPRODUCE)' \
		$(LEFT_BEHIND) $(BIN)/pytest -p no:cacheprovider -s tests/integration/test_torture.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy

unit: setup
	$(BIN)/pytest -p no:cacheprovider tests/unit

integration: setup
	$(BIN)/pytest -p no:cacheprovider -m integration

# docker-compose.yaml through compose-go, the loader docker compose uses (needs Go).
compose-check: setup
	$(BIN)/python -m cdcgen_dev.compose_check

# Every benchmark; writes benchmarks/results/latest.json and prints the table of docs/benchmarks.md.
bench: setup
	$(BIN)/python benchmarks/run_all.py

sandbox-up: setup
	$(BIN)/cdcgen sandbox up

sandbox-up-3: setup
	$(BIN)/cdcgen sandbox up --nodes 3

sandbox-down: setup
	$(BIN)/cdcgen sandbox down

sandbox-status: setup
	$(BIN)/cdcgen sandbox status

# The local Airflow home (var/airflow): config, migrated SQLite DB, env.sh to `source`.
airflow-home: setup
	$(BIN)/python -m cdcgen_dev.airflow_home

clean:
	-$(BIN)/cdcgen sandbox down
	rm -rf var lake reports airflow-home .pytest_cache .mypy_cache .ruff_cache
