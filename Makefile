# accel-gitops: build, test and demo entry points.
#
#   make venv    Python virtualenv with the package (venv-dev: and its dev tools; each skipped while pyproject.toml's content is unchanged)
#   make tools   every pinned external tool into .tools/bin and JSON Schemas into .tools/schemas
#                (`accel-gitops tools install --only all`; each step skipped while the content of its
#                inputs is unchanged); in three parts:
#     tools-validate  what render, validate and report run (kbuild, promtool, NFD, Kueue, scheduler
#                     config checks, helm, the schemas); `make demo` builds part of it (the demo
#                     set) and skips the validate stages that need the rest, saying so
#     tools-cluster   the local control plane behind simulate and validate --dry-run=server, and
#                     the Argo CD simulate syncs through and the monitoring it runs (built on
#                     their first run when missing)
#     tools-dev       what only the test suite runs (actionlint, the Pod Security checker)
#   make browser headless Chromium and its WebDriver from Debian's packages (installed when absent)
#   make demo    render the example fleet, validate it (three stages skipped), and write its report (.cache/report/)
#   make test    lint, then the whole test suite (pytest-xdist)
#   make lint    ruff check, ruff format --check, mypy --strict (pyproject.toml [tool.mypy]: generator,
#                render.py, tests, tools, benchmarks), lint-imports (the layers of ARCHITECTURE.md)
#   make test-fast     the tests that need no control plane (a CI job of its own)
#   make test-cluster  the tests that start the local control plane (a CI job of its own)
#   make mutation  mutation testing with mutmut, shard by shard (SHARDS="render delivery" for some);
#                fails when a module scores below its floor (docs/testing.md; tens of minutes)
#   make clean   remove .tools and caches (make distclean also removes .venv)
#
# Every external tool is pinned in a Go module under generator/toolchain/gotools/ (Go 1.24+ `tool`
# directives), shipped in the wheel, and built from the Go module proxy; nothing else is
# downloaded. See docs/toolchain.md.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
.DELETE_ON_ERROR:

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

# Go from PATH, else the usual install location.
GO ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)

# loadgroup: the tests that need the local control plane share one worker (and one plane).
PYTEST_ARGS ?= -n auto --dist loadgroup

.PHONY: mutation venv venv-dev tools tools-validate tools-cluster tools-dev browser go-check-python demo test \
  test-fast test-cluster pytest lint clean distclean

# ---------------------------------------------------------------------------------------- Python
# The virtualenv is rebuilt only when pyproject.toml's content changes (generator/toolchain/fresh.py,
# standard library only: it runs before anything is installed), never on file times.
FRESH := $(PYTHON) generator/toolchain/fresh.py
export PATH := $(dir $(GO)):$(PATH)

# Two steps: the package (what demo and the tools' builds run), then its dev dependencies (what
# lint, the tests and mutation run), so a newcomer's `make demo` installs only the first.
venv: go-check-python
	@$(FRESH) $(VENV)/.installed.sha256 $(PY) -- pyproject.toml -- \
	  bash -c '$(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install --disable-pip-version-check --quiet -e .'

venv-dev: venv
	@$(FRESH) $(VENV)/.installed-dev.sha256 $(VENV)/bin/pytest -- pyproject.toml -- \
	  $(VENV)/bin/pip install --disable-pip-version-check --quiet -e ".[dev]"

go-check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) (Python >= 3.11) is needed" >&2; exit 1; }

# ----------------------------------------------------------------------------------------- tools
# One implementation of the builds, the same an installed wheel runs: `accel-gitops tools install`
# (generator/toolchain/install.py) builds each pinned tool from its Go module in
# generator/toolchain/gotools/ into .tools/bin, and lays out the JSON Schemas in .tools/schemas,
# each step skipped while the SHA-256 of its inputs' content is unchanged. Go modules build side
# by side (JOBS at once); tools of one module one after another, so the second reuses the
# packages the first compiled.
JOBS ?= 4
INSTALL = $(PY) -m generator tools install --jobs $(JOBS) --only

tools: venv
	@$(INSTALL) all

# What render, validate, diff, report and publish run: every check `validate` makes (kustomize,
# kubeconform, the kbuild helper, promtool, the NFD, Kueue and scheduler checkers, helm, schemas).
tools-validate: venv
	@$(INSTALL) validate

# The control plane behind validate --dry-run=server and simulate, and Argo CD's application
# controller and repo-server that simulate syncs through (a cold build takes minutes; those
# commands build it themselves, saying so, when a part is missing).
tools-cluster: venv
	@$(INSTALL) cluster

# What only the test suite runs (actionlint, the Pod Security checker).
tools-dev: venv
	@$(INSTALL) dev

# --------------------------------------------------------------------------------------- browser
# The report's browser test opens the page in Debian's Chromium through Debian's chromedriver
# (tests/fleetreport/test_browser.py); nothing downloads a browser of its own. CI runs as root; a
# developer without root is asked for sudo.
CHROMIUM ?= /usr/bin/chromium
CHROMEDRIVER ?= /usr/bin/chromedriver

browser:
	@if [[ -x $(CHROMIUM) && -x $(CHROMEDRIVER) ]]; then exit 0; fi; \
	  sudo=; [[ $$(id -u) -eq 0 ]] || sudo=sudo; \
	  echo "installing chromium and chromium-driver (Debian packages) for the report's browser test"; \
	  $$sudo apt-get update -qq; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends \
	    chromium chromium-driver fonts-dejavu-core </dev/null

# ------------------------------------------------------------------------------------ workflows
# A newcomer's first minutes: only what render, validate and report need (docs/toolchain.md).
# A newcomer's first minutes: validate without the stages whose checkers take half of a cold
# build (helm's chart rendering, the Kueue, JobSet, LeaderWorkerSet and Trainer webhooks); it
# says so, and `make tools-validate` then `render.py validate` runs them all.
DEMO_SKIP = charts,kueue,workloads
demo: venv
	@echo "demo: building the pinned tools render, validate and report run (the first time: minutes; then cached)"
	@$(INSTALL) demo
	$(PY) render.py render
	$(PY) render.py validate --skip $(DEMO_SKIP)
	$(PY) render.py report --out .cache/report/index.html
	@echo "demo: not run: validate's $(DEMO_SKIP) stages (make tools-validate builds their checkers; then render.py validate runs every stage), and simulate, preflight and validate --dry-run=server (the local control plane: make test, or their first run, builds it)"

# Lint first, as its own step (it fails in seconds; the suite takes minutes), then every test.
test: lint pytest

pytest: venv-dev tools browser
	$(PY) -m pytest $(PYTEST_ARGS)

test-fast: venv-dev tools browser
	$(PY) -m pytest $(PYTEST_ARGS) -m "not control_plane"

test-cluster: venv-dev tools
	$(PY) -m pytest $(PYTEST_ARGS) -m control_plane

# Not part of `make test`: it runs each module's tests once per mutant (docs/testing.md). The
# control plane too: the simulation shard's tests run `simulate` on it.
SHARDS ?=
MUTATION_ARGS ?=
mutation: venv-dev
	@$(INSTALL) validate,cluster
	$(PY) tools/mutation.py run $(MUTATION_ARGS) $(SHARDS)

lint: venv-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

clean:
	rm -rf .tools .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
