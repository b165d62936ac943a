# gpuwork: the two everyday commands are `make app` and `make test` (see README.md).
#
#   make venv          create .venv (python3.11), torch first, then this package with its test extras
#   make app           serve notebooks/app.ipynb with Voila on http://$(HOST):$(PORT) (config: voila.json)
#   make test          the whole pytest suite (installs chromium for browser tests when it can)
#   make lint          ruff check gpuwork tests
#   make browser-deps  apt-get install chromium if /usr/bin/chromium is missing
#
# torch is installed on its own, pinned, BEFORE the package: left to the resolver together with
# everything else, pip may pick another torch build (on Linux PyPI that is a multi-GB CUDA wheel).
# The pin must equal the one in pyproject.toml and environment.yml (tests/test_environment.py checks).

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
# Written after a complete install; rebuilt when pyproject.toml changes.
STAMP := $(VENV)/.gpuwork-installed

.PHONY: help venv app test lint browser-deps

help:
	@sed -n '3,7p' Makefile

venv: $(STAMP)

$(STAMP): pyproject.toml
	@if [ ! -x "$(PY)" ]; then echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv "$(VENV)"; fi
	$(PY) -m pip install $(TORCH_PIP_ARGS) "torch==2.13.0"
	$(PY) -m pip install -e ".[test]"
	@touch "$(STAMP)"

app: venv
	$(VENV)/bin/voila notebooks/app.ipynb --Voila.ip=$(HOST) --port=$(PORT) --no-browser

test: venv
	@$(MAKE) --no-print-directory browser-deps || \
		echo "make test: chromium is not available; tests that need a browser will be skipped"
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check gpuwork tests

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
