# accel-gitops: build, test and demo entry points.
#
#   make venv    Python virtualenv with the package and dev tools (skipped while pyproject.toml is unchanged)
#   make tools   pinned external tools into .tools/bin and JSON Schemas into .tools/schemas (incremental)
#   make demo    render the example fleet, then validate it
#   make test    run the test suite (pytest-xdist)
#   make lint    ruff check, ruff format --check, mypy
#   make clean   remove .tools and caches (make distclean also removes .venv)
#
# Every external tool is pinned in a Go module under tools/ (Go 1.24+ `tool` directives) and built
# from the Go module proxy; nothing else is downloaded. See docs/toolchain.md.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := test
.DELETE_ON_ERROR:

ROOT := $(abspath .)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed-stamp
TOOLS_BIN := .tools/bin
SCHEMAS := .tools/schemas

# Go from PATH, else the usual install location.
GO ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
# Same flags every time so Go's build cache ($HOME/.cache/go-build) is reused across runs and clones.
GO_BUILD := CGO_ENABLED=0 GOFLAGS=-mod=readonly $(GO) build -trimpath -buildvcs=false

PYTEST_ARGS ?= -n auto

.PHONY: venv tools go-check demo test lint clean distclean

# ---------------------------------------------------------------------------------------- Python
venv: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --disable-pip-version-check --quiet -e '.[dev]'
	touch $@

# ----------------------------------------------------------------------------------------- tools
TOOL_BINS := $(TOOLS_BIN)/kustomize $(TOOLS_BIN)/kubeconform $(TOOLS_BIN)/promtool
SCHEMA_STAMPS := $(SCHEMAS)/crds/index.json $(SCHEMAS)/k8s/.stamp

tools: $(TOOL_BINS) $(SCHEMA_STAMPS)

go-check:
	@if ! command -v $(GO) >/dev/null 2>&1; then \
	  echo "error: the Go toolchain (go >= 1.26.7) is needed to build the pinned tools; install it and re-run 'make tools'" >&2; \
	  exit 1; \
	fi

# A binary is rebuilt only when its module's go.mod/go.sum is newer than it.
$(TOOLS_BIN)/kustomize: tools/kustomize/go.mod tools/kustomize/go.sum | go-check
	@mkdir -p $(TOOLS_BIN)
	cd tools/kustomize && $(GO_BUILD) -o $(ROOT)/$@ sigs.k8s.io/kustomize/kustomize/v5
	@touch $@

$(TOOLS_BIN)/kubeconform: tools/kustomize/go.mod tools/kustomize/go.sum | go-check
	@mkdir -p $(TOOLS_BIN)
	cd tools/kustomize && $(GO_BUILD) -o $(ROOT)/$@ github.com/yannh/kubeconform/cmd/kubeconform
	@touch $@

# promtool has its own module: the Prometheus dependency graph is large and must not move
# kustomize's or kubeconform's dependencies.
$(TOOLS_BIN)/promtool: tools/promtool/go.mod tools/promtool/go.sum | go-check
	@mkdir -p $(TOOLS_BIN)
	cd tools/promtool && $(GO_BUILD) -o $(ROOT)/$@ github.com/prometheus/prometheus/cmd/promtool
	@touch $@

# CRD schemas: pinned modules via `go mod download`, Volcano via controller-gen (tools/crdgen).
$(SCHEMAS)/crds/index.json: tools/schemas.lock.yaml tools/crdschemas.py tools/crdgen/go.mod tools/crdgen/go.sum $(VENV_STAMP) | go-check
	PATH="$(dir $(GO)):$$PATH" $(PY) tools/crdschemas.py crds $(SCHEMAS)/crds

# Built-in Kubernetes schemas from the kubernetes-validate wheel, refs made file-relative.
$(SCHEMAS)/k8s/.stamp: tools/schemas.lock.yaml tools/crdschemas.py $(VENV_STAMP)
	$(PY) tools/crdschemas.py k8s $(SCHEMAS)/k8s
	@touch $@

# ------------------------------------------------------------------------------------ workflows
demo: venv tools
	$(PY) render.py render
	$(PY) render.py validate

test: venv tools
	$(PY) -m pytest $(PYTEST_ARGS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict tools/crdschemas.py

clean:
	rm -rf .tools .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
