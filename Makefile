# `make demo` and `make test` do all set-up on a fresh machine: a virtual environment in .venv,
# torch 2.13.0 (the CPU wheel on this machine's disk) when the venv has no torch, then Stadyn.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.stadyn-installed
TORCH  := torch==2.13.0
PYTEST_ARGS ?=

.PHONY: all setup demo test bench bench-peers clean

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	@$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install -q $(TORCH)
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/stadyn demo

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 $(PYTEST_ARGS)

bench: $(STAMP)
	$(BIN)/stadyn bench

clean:
	rm -rf $(VENV) build src/*.egg-info .pytest_cache
