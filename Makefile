# tandem — every target does its own set-up on a fresh Debian machine.
#   make run    Emacs (-nw -Q) with tandem loaded and M-x tandem run
#   make test   lint, types, pytest, byte-compile, checkdoc, ERT
#   make bench  performance figures as JSON lines (docs/performance.md)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
EMACS ?= emacs
STAMP := $(VENV)/.installed
# Tests and the demo must never touch the user's real state.
TEST_HOME := $(CURDIR)/.cache/test-home
EL_FILES := $(filter-out elisp/tandem-autoloads.el,$(wildcard elisp/*.el))
# Debian's elpa packages are not on the load path under -Q; markdown-mode
# is optional (the view has a fallback) but nicer when there.
ELPA_MD = $(firstword $(wildcard /usr/share/emacs/site-lisp/elpa/markdown-mode-*))

.PHONY: run test bench demo setup venv emacs-deps test-deps lint typecheck pytest elisp-compile checkdoc ert protocol-doc clean

setup: venv emacs-deps

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[dev]'
	touch $@

venv: $(STAMP)

# Emacs and epc.el come from apt. As root we install what is missing; as
# anyone else we print exactly what to install.
emacs-deps:
	@missing=""; \
	command -v $(EMACS) >/dev/null || missing="$$missing emacs-nox"; \
	ls -d /usr/share/emacs/site-lisp/elpa/epc-* >/dev/null 2>&1 || missing="$$missing elpa-epc"; \
	ls -d /usr/share/emacs/site-lisp/elpa/markdown-mode-* >/dev/null 2>&1 || missing="$$missing elpa-markdown-mode"; \
	command -v tmux >/dev/null || missing="$$missing tmux"; \
	command -v git >/dev/null || missing="$$missing git"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "Please install:$$missing  (sudo apt-get install$$missing)"; exit 1; \
	  fi; \
	fi

# Real external programs the integration tests drive, cached outside the
# repository: the Claude Code ACP adapter (npm) and the OpenHands
# agent-server (PyPI, in a Python >= 3.12 venv of its own). A missing
# registry makes those tests skip with a printed reason, not fail.
test-deps: venv
	-$(VPY) tests/acp_adapter.py
	-$(VPY) tests/python/remote/agent_server.py install

run: setup
	$(EMACS) -nw -Q -L elisp $(if $(ELPA_MD),-L $(ELPA_MD)) -l tandem --eval '(tandem)'

lint: venv
	$(VENV)/bin/ruff check python tests/python bench

typecheck: venv
	$(VENV)/bin/mypy

pytest: venv
	mkdir -p $(TEST_HOME)
	$(VENV)/bin/pytest -q tests/python

# Byte-compile with warnings as errors, in a scratch copy so no .elc is
# left beside the sources to shadow them.
elisp-compile: emacs-deps
	@rm -rf .cache/elc && mkdir -p .cache/elc && cp $(EL_FILES) .cache/elc/
	$(EMACS) -Q --batch -L .cache/elc --eval '(setq byte-compile-error-on-warn t)' \
	  -f batch-byte-compile .cache/elc/*.el

checkdoc: emacs-deps
	$(EMACS) -Q --batch -L elisp -l tests/elisp/run-checkdoc.el $(EL_FILES)

ert: setup
	mkdir -p $(TEST_HOME)
	TANDEM_TEST_HOME=$(TEST_HOME) $(EMACS) -Q --batch -L elisp -L tests/elisp \
	  -l tests/elisp/run-tests.el

# docs/protocol.md and the error conditions Emacs defines, from one source.
protocol-doc: venv
	$(VPY) -m tandem.protocol.docs > docs/protocol.md
	$(VPY) -m tandem.protocol.docs --elisp > elisp/tandem-errors.el

test: setup test-deps lint typecheck pytest elisp-compile checkdoc ert

# A scripted local model server: the demo's answers are canned, no API key.
demo: setup
	tests/demo/run-demo.sh

bench: setup
	$(VPY) bench/run.py

clean:
	rm -rf .cache .pytest_cache .mypy_cache .ruff_cache
