# The two commands the README names. Both set everything up from nothing.
#   make demo   - create .venv, install, run the demo on the embedded default (no server, key or network)
#   make test   - create .venv, install with the test extras, run the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,langchain,classic,llama-index,documents,pptx,tokens,server

.PHONY: demo test install lint bench clean

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

install: $(VENV)/.installed-test

lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check shared_core langchain_openkoi llama_index_openkoi tests bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
