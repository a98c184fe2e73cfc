# `make demo` and `make test` do all set-up on a fresh machine: a virtual environment in .venv,
# torch 2.13.0 from PyPI when the venv has no torch (on this project's machines a CPU wheel on
# disk; on another Linux machine PyPI's CUDA build: docs/install.md says how to choose the
# CPU-only or another CUDA build), then Stadyn with the extras the target needs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.stadyn-installed
DEMO_STAMP := $(VENV)/.stadyn-demo-installed
TORCH  := torch==2.13.0
PYTEST_ARGS ?=
# `make bench-peers`: NNabla 1.39 and MXNet 1.9.1 in their own environments (NNabla's wheels stop
# at Python 3.10; MXNet 1.9.1 needs numpy < 1.24), both on a Python 3.10 (PY310=... to choose).
PEERS  := .venv-peers
PY310  ?= $(shell pyenv root 2>/dev/null)/versions/3.10.13/bin/python
NNABLA := nnabla==1.39.0
# (graphviz: nnabla.experimental.viewers, which a harness case's reference runs)
NNABLA_EXTRAS := graphviz==0.21
MXNET  := mxnet==1.9.1 numpy==1.23.5

.PHONY: all setup demo test durations docs bench bench-peers mutants clean

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# `make test`, `make docs`: Stadyn with every extra, the test tools and Sphinx.
$(STAMP): pyproject.toml | $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

# `make demo`, `make bench`: Stadyn with the demo extra (the digits data set, the plots).
$(DEMO_STAMP): pyproject.toml | $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[demo]'
	@touch $(DEMO_STAMP)

setup: $(STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/stadyn demo

test: $(STAMP)
	@# bytecode written once: each test subprocess would otherwise compile Stadyn's modules again
	@# --dist loadfile: whole test modules, longest first by tests/durations.json, so a module's
	@# fixtures are set up once and both workers end together (tests/conftest.py, "Schedule")
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -q -n 2 --dist loadfile $(PYTEST_ARGS)

# `make durations`: `make test` with the peers hidden (what CI runs, tests/peers.py), storing each
# test module's seconds in tests/durations.json (the order of later runs); commit the file when
# modules were added or grew (PYTEST_ARGS=tests/x updates those modules only).
durations: $(STAMP)
	env -u PYTHONDONTWRITEBYTECODE STADYN_NO_PEERS=1 $(BIN)/python -m pytest -q -n 2 \
		--dist loadfile --store-durations $(PYTEST_ARGS)

# `make mutants`: mutation testing of compat/, amp.py, train/, learners/ and solvers/ -- a seeded
# sample of MUTANTS_N mutants per group, each against the tests mapped to its group
# (tools/mutants.py, docs/testing.md); the report is build/mutants/report.md.
MUTANTS_N    ?= 20
MUTANTS_SEED ?= 0
MUTANTS_ARGS ?=
mutants: $(STAMP)
	$(BIN)/python tools/mutants.py --per-group $(MUTANTS_N) --seed $(MUTANTS_SEED) $(MUTANTS_ARGS)

# The API reference (Sphinx, from the docstrings) in build/docs/html; -W: a warning fails it.
docs: $(STAMP)
	$(BIN)/python -m sphinx -W --keep-going -b html -q docs/api build/docs/html
	@echo "open build/docs/html/index.html"

bench: $(DEMO_STAMP)
	$(BIN)/stadyn bench

# The Python 3.10 to build the peer environments from: PY310 if it is one, else python3.10.
FIND_PY310 = py="$(PY310)"; \
	if ! "$$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then \
		py=$$(command -v python3.10 || true); \
		if [ -z "$$py" ] || ! "$$py" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 10))' 2>/dev/null; then \
			echo "bench-peers: no Python 3.10 found (PY310=$(PY310) is not one and python3.10 is not on PATH or does not run); NNabla 1.39's wheels need Python <= 3.10: install one (pyenv install 3.10.13) or run make bench-peers PY310=/path/to/python3.10" >&2; \
			exit 1; \
		fi; \
	fi

$(PEERS)/nnabla/.installed:
	@$(FIND_PY310); echo "creating $(PEERS)/nnabla with $$py"; "$$py" -m venv $(PEERS)/nnabla
	$(PEERS)/nnabla/bin/python -m pip install -q $(NNABLA) $(NNABLA_EXTRAS)
	@touch $@

$(PEERS)/mxnet/.installed:
	@$(FIND_PY310); echo "creating $(PEERS)/mxnet with $$py"; "$$py" -m venv $(PEERS)/mxnet
	$(PEERS)/mxnet/bin/python -m pip install -q $(MXNET)
	@touch $@

bench-peers: $(STAMP) $(PEERS)/nnabla/.installed $(PEERS)/mxnet/.installed
	$(BIN)/stadyn bench --peers

clean:
	rm -rf $(VENV) build docs/api/generated src/*.egg-info .pytest_cache
