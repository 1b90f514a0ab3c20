# tandem — every target does its own set-up on a fresh Debian machine.
#   make run    Emacs (-nw) with tandem loaded and M-x tandem run; its own init
#               file (etc/run-init.el) keeps your choices in .cache/run/
#   make test   lint, types, pytest, byte-compile, checkdoc, package-lint,
#               ERT, the manual, and an install of the package from a clone
#   make info   the Info manual (doc/tandem.info, doc/dir)
#   make package  a package.el tarball in .cache/dist/
#   make bench [ONLY=startup,view]  performance figures as JSON lines (docs/performance.md);
#               ONLY: those scripts alone; the monorepo figures (minutes, 100k
#               files) only with ONLY=monorepo or TANDEM_BENCH_MONOREPO=1
#   make soak [SEED=1] [OPS=500]  the seeded soak with injected faults
#               (docs/reliability.md); exits non-zero on a violation
#   make bench-compare BASE=REF [ROUNDS=2] [ONLY=transport,view] [FIGURES=a,b]
#               the benchmarks of REF and of the working tree, alternately in
#               one session; each figure's ratio to REF's, and a non-zero exit
#               when one is worse beyond its spread (docs/performance.md)

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
EMACS ?= emacs
STAMP := $(VENV)/.installed
# Tests never touch the user's home: each test target runs with a HOME, XDG
# directories and TANDEM_HOME of its own under TEST_HOME, made afresh. What
# `make test-deps` installed (and pip's cache) stays reachable by name.
TEST_HOME := $(CURDIR)/.cache/test-home
TEST_CACHE := $(or $(TANDEM_TEST_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tandem-test)
TEST_PIP_CACHE := $(or $(PIP_CACHE_DIR),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/pip)
TEST_DIRS = rm -rf $(TEST_HOME)/$@ && mkdir -p $(addprefix $(TEST_HOME)/$@/,home config state data cache tandem)
TEST_ENV = env TANDEM_TEST_CACHE=$(TEST_CACHE) PIP_CACHE_DIR=$(TEST_PIP_CACHE) \
  HOME=$(TEST_HOME)/$@/home XDG_CONFIG_HOME=$(TEST_HOME)/$@/config \
  XDG_STATE_HOME=$(TEST_HOME)/$@/state XDG_DATA_HOME=$(TEST_HOME)/$@/data \
  XDG_CACHE_HOME=$(TEST_HOME)/$@/cache TANDEM_HOME=$(TEST_HOME)/$@/tandem
# `make test` fails when the run changed the user's own tandem state or config.
GUARD_RECORD := $(TEST_HOME)/guard.json
EL_FILES := $(filter-out elisp/tandem-autoloads.el,$(wildcard elisp/*.el))
# Debian's elpa packages are not on the load path under -Q; markdown-mode
# is optional (the view has a fallback) but nicer when there.
ELPA_MD = $(firstword $(wildcard /usr/share/emacs/site-lisp/elpa/markdown-mode-*))
ELPA_LINT = $(firstword $(wildcard /usr/share/emacs/site-lisp/elpa/package-lint-[0-9]*))
ELPA_LET_ALIST = $(firstword $(wildcard /usr/share/emacs/site-lisp/elpa/let-alist-*))
PKG_VERSION = $(shell sed -n 's/^;; Version: *//p' elisp/tandem.el)
DIST ?= .cache/dist

.PHONY: run test bench soak bench-compare demo setup venv emacs-deps test-deps lint typecheck pytest elisp-compile checkdoc ert protocol-doc architecture-doc clean \
  package-lint autoloads info package package-test

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
	ls -d /usr/share/emacs/site-lisp/elpa/package-lint-[0-9]* >/dev/null 2>&1 || missing="$$missing elpa-package-lint"; \
	command -v makeinfo >/dev/null || missing="$$missing texinfo"; \
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
	-TANDEM_TEST_CACHE=$(TEST_CACHE) $(VPY) tests/acp_adapter.py
	-TANDEM_TEST_CACHE=$(TEST_CACHE) $(VPY) tests/mcp_everything.py
	-TANDEM_TEST_CACHE=$(TEST_CACHE) $(VPY) tests/python/remote/agent_server.py install

# Not -Q: etc/run-init.el is an init file of its own (state in .cache/run/),
# so customizations are kept and Debian's elpa packages load as usual.
run: setup info
	$(EMACS) -nw -q -l etc/run-init.el

lint: venv
	$(VENV)/bin/ruff check python tests/python bench

typecheck: venv
	$(VENV)/bin/mypy

# The soak makes its own temporary HOME, TANDEM_HOME and projects; the
# test directories still keep anything it might touch away from yours.
SEED ?= 1
OPS ?= 500
soak: venv
	$(TEST_DIRS)
	$(TEST_ENV) $(VPY) tests/soak/driver.py --seed $(SEED) --ops $(OPS)

pytest: venv
	$(TEST_DIRS)
	$(TEST_ENV) $(VENV)/bin/pytest -q tests/python

# Byte-compile with warnings as errors, in a scratch copy so no .elc is
# left beside the sources to shadow them.
elisp-compile: emacs-deps
	@rm -rf .cache/elc && mkdir -p .cache/elc && cp $(EL_FILES) .cache/elc/
	$(EMACS) -Q --batch -L .cache/elc --eval '(setq byte-compile-error-on-warn t)' \
	  -f batch-byte-compile .cache/elc/*.el

checkdoc: emacs-deps
	$(EMACS) -Q --batch -L elisp -l tests/elisp/run-checkdoc.el $(EL_FILES)

# XDG_DATA_HOME: a backend the user installed (M-x tandem-install-backend)
# must not stand in for this checkout's.
# info: a test opens the manual as a user would.
ert: setup info
	$(TEST_DIRS)
	$(TEST_ENV) $(EMACS) -Q --batch -L elisp -L tests/elisp -l tests/elisp/run-tests.el

# package-lint on every file, tandem.el (the headers) first.
package-lint: emacs-deps
	$(EMACS) -Q --batch -L $(ELPA_LINT) -L $(ELPA_LET_ALIST) -L elisp \
	  -l tests/elisp/run-package-lint.el elisp/tandem.el $(filter-out elisp/tandem.el,$(EL_FILES))

# docs/protocol.md and the error conditions Emacs defines, from one source.
protocol-doc: venv
	$(VPY) -m tandem.server.protocol_doc > docs/protocol.md
	$(VPY) -m tandem.server.protocol_doc --elisp > elisp/tandem-errors.el

# The package graph and the file map of docs/architecture.md, from the code.
architecture-doc: venv
	$(VPY) tests/python/architecture_doc.py docs/architecture.md

# For a clone on the load-path: (require 'tandem-autoloads) instead of
# loading everything at start-up.  package.el and package-vc make their own.
autoloads: elisp/tandem-autoloads.el
elisp/tandem-autoloads.el: $(EL_FILES)
	$(EMACS) -Q --batch --eval '(progn (require (quote package)) (package-generate-autoloads "tandem" (expand-file-name "elisp")))'

# The manual; warnings are errors.  doc/dir lets C-h i list it.
info: doc/tandem.info doc/dir
doc/tandem.info: doc/tandem.texi
	@command -v makeinfo >/dev/null || $(MAKE) emacs-deps
	@out=$$(makeinfo --no-split -o $@ $< 2>&1); status=$$?; \
	if [ $$status != 0 ] || [ -n "$$out" ]; then echo "$$out"; rm -f $@; exit 1; fi
doc/dir: doc/tandem.info
	rm -f $@ && install-info --dir-file=$@ $<

# A package.el tarball: the elisp at its top, the manual, and the backend's
# sources (pyproject.toml, README.md, python/) for M-x tandem-install-backend.
package: info
	rm -rf $(DIST)/tandem-$(PKG_VERSION) && mkdir -p $(DIST)/tandem-$(PKG_VERSION)
	cp $(EL_FILES) doc/tandem.info doc/dir pyproject.toml README.md $(DIST)/tandem-$(PKG_VERSION)/
	tar -c --exclude=__pycache__ --exclude='*.pyc' python | tar -x -C $(DIST)/tandem-$(PKG_VERSION)
	$(EMACS) -Q --batch --eval '(progn (require (quote package)) (with-temp-buffer (insert-file-contents "elisp/tandem.el") (package-generate-description-file (package-buffer-info) "$(DIST)/tandem-$(PKG_VERSION)/tandem-pkg.el")))'
	tar -C $(DIST) -cf $(DIST)/tandem-$(PKG_VERSION).tar tandem-$(PKG_VERSION)
	@echo "$(DIST)/tandem-$(PKG_VERSION).tar"

# Install the package from a clean clone of HEAD into a fresh
# package-user-dir, the backend into a fresh venv, and chat with the fake.
package-test: emacs-deps
	$(TEST_DIRS)
	$(TEST_ENV) tests/package/run.sh

# info before ert: a test opens the manual the way a user would.
TEST_STEPS := setup test-deps lint typecheck pytest elisp-compile checkdoc package-lint info ert package-test
test:
	@mkdir -p $(TEST_HOME) && $(PYTHON) tests/home_guard.py snapshot $(GUARD_RECORD)
	@status=0; $(MAKE) --no-print-directory $(TEST_STEPS) || status=$$?; \
	$(PYTHON) tests/home_guard.py check $(GUARD_RECORD) || status=1; exit $$status

# A scripted local model server: the demo's answers are canned, no API key.
demo: setup
	tests/demo/run-demo.sh

bench: setup
	$(VPY) bench/run.py $(ONLY)

BASE ?= main
ROUNDS ?= 2
bench-compare: setup
	$(VPY) bench/compare.py --base '$(BASE)' --rounds $(ROUNDS) --only '$(ONLY)' --figures '$(FIGURES)'

clean:
	rm -rf .cache .pytest_cache .mypy_cache .ruff_cache doc/tandem.info doc/dir elisp/tandem-autoloads.el
