# gpuwork: the two everyday commands are `make app` and `make test` (see README.md).
#
#   make venv          create .venv (python3.11), torch first, then this package with all its extras
#   make app           `gpuwork app`: the bundled app notebook with Voila on http://$(HOST):$(PORT)
#   make test          the whole pytest suite (installs chromium for browser tests when it can)
#   make lint          ruff check gpuwork tests scripts benchmarks, then mypy (pyproject.toml's [tool.mypy])
#   make browser-deps  apt-get install chromium if /usr/bin/chromium is missing
#   make check-wheel   build the wheel, install it in fresh virtualenvs outside the checkout, run the CLI
#
# torch is installed on its own, pinned, BEFORE the package: left to the resolver together with
# everything else, pip may pick another torch build (on Linux PyPI that is a multi-GB CUDA wheel).
# constraints.txt holds the pin for both installs; it must equal the pin below and environment.yml's,
# and fall in pyproject.toml's [trial] range (tests/test_environment.py checks).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8866
# Extra pip arguments for the torch install only, e.g. a CPU-only index on a machine without a GPU:
#   make venv TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu"
TORCH_PIP_ARGS ?=
CHROMIUM := /usr/bin/chromium
CONSTRAINTS := constraints.txt
# Written after a complete install; rebuilt when pyproject.toml or the constraints change.
STAMP := $(VENV)/.gpuwork-installed

.PHONY: help venv app test lint browser-deps check-wheel

help:
	@sed -n '3,8p' Makefile

venv: $(STAMP)

$(STAMP): pyproject.toml $(CONSTRAINTS)
	@if [ ! -x "$(PY)" ]; then echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv "$(VENV)"; fi
	$(PY) -m pip install $(TORCH_PIP_ARGS) -c $(CONSTRAINTS) "torch==2.13.0"
	$(PY) -m pip install -c $(CONSTRAINTS) -e ".[test]"
	@touch "$(STAMP)"

app: venv
	$(VENV)/bin/gpuwork app --host $(HOST) --port $(PORT)

test: venv
	@$(MAKE) --no-print-directory browser-deps || \
		echo "make test: chromium is not available; tests that need a browser will be skipped"
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check gpuwork tests scripts benchmarks
	$(VENV)/bin/mypy

check-wheel: venv
	PYTHON=$(PYTHON) scripts/check_wheel.sh

browser-deps:
	@if [ -x "$(CHROMIUM)" ]; then \
		echo "browser-deps: $(CHROMIUM) present"; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
		echo "browser-deps: no apt-get here; install chromium at $(CHROMIUM) by hand" >&2; exit 1; \
	else \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO="sudo -n"; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi
