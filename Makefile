# The two commands the README names. Both set everything up from nothing.
#   make demo   - create .venv, install, run the demo on the embedded default (no server, key or network)
#   make test   - create .venv, install with the test extras, run the test suite, then the core
#                 tests again with the other SQLite driver (.ci/other-driver), then the whole suite
#                 on PostgreSQL (a private pgserver, or $OPENKOI_TEST_DATABASE_URL)
#   make test-postgres - only the PostgreSQL run
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,langchain,classic,llama-index,documents,pptx,tokens,postgres,langgraph-postgres

.PHONY: demo test test-postgres install lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed-demo: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

demo: $(VENV)/.installed-demo
	$(BIN)/openkoi-memory demo

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	.ci/other-driver $(BIN)/python
	OPENKOI_TEST_BACKEND=postgres $(BIN)/python -m pytest $(PYTEST_ARGS)

test-postgres: $(VENV)/.installed-test
	OPENKOI_TEST_BACKEND=postgres $(BIN)/python -m pytest $(PYTEST_ARGS)

install: $(VENV)/.installed-test

lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check shared_core langchain_openkoi llama_index_openkoi tests bench

clean:
	rm -rf $(VENV) .venv-stdlib build *.egg-info .pytest_cache .ruff_cache
