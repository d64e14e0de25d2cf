# The two commands a checkout starts with (README.md, "From a checkout"):
#   make run    set up, then answer a sample question with the embedded default model
#   make test   set up, then run the whole test suite (and the type and lint checks)
#   make bench  the core benchmark (the others: docs/benchmarks/index.md)
#   make lock   move the pins: requirements/lock.txt resolved afresh (docs/development.md)

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.toolrouting-setup
QUESTION ?= What does the latch on the storage-room door do?

# llama.cpp threads busy-wait under OpenMP; with two model processes on few cores that
# turns seconds into minutes. Passive waiting costs nothing when one process runs alone.
export OMP_WAIT_POLICY := passive

.PHONY: setup run test check bench clean lock llama-server agent-clis

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup.sh requirements/lock.txt requirements/no-deps.txt
	PYTHON=$(PYTHON) VENV=$(VENV) sh scripts/setup.sh
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/toolrouting run --answer "$(QUESTION)"

check: $(STAMP)
	$(BIN)/ruff check toolrouting tests benchmarks
	$(BIN)/ruff format --check toolrouting tests benchmarks
	$(BIN)/mypy toolrouting tests benchmarks

# llama.cpp's own server, which only the tests and benchmarks of the llama.cpp dialect start:
# built once (about 8 minutes on 2 idle cores), cached outside the venv, skipped when cached.
llama-server: $(STAMP)
	PYTHON=$(BIN)/python sh scripts/build-llama-server.sh

# Claude Code and Codex from npm, pinned, which tests/serve/test_serve_agent_clis.py runs against serve:
# installed once (about 360 MB), cached outside the repository, skipped when cached. Without
# node the tests that run them skip, saying so.
agent-clis:
	@if command -v node >/dev/null 2>&1; then sh scripts/agent-clis.sh >/dev/null; \
	else echo "agent-clis: node is not installed; the Claude Code and Codex tests will skip"; fi

test: check llama-server agent-clis
	$(BIN)/python -m pytest

# The pins every set-up installs at: resolved afresh in a temporary venv (a few minutes), written to
# requirements/lock.txt; the next make run or make test installs them into .venv.
lock:
	PYTHON=$(PYTHON) sh scripts/lock.sh

bench: $(STAMP)
	$(BIN)/python -m benchmarks.speed.core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
