# accel-gitops: build, test and demo entry points.
#
#   make venv    Python virtualenv with the package and dev tools (skipped while pyproject.toml's content is unchanged)
#   make tools   pinned external tools into .tools/bin and JSON Schemas into .tools/schemas (each step
#                skipped while the content of its inputs is unchanged: tools/fresh)
#   make browser headless Chromium and its WebDriver from Debian's packages (installed when absent)
#   make demo    render the example fleet, validate it, and write its report (.cache/report/)
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
TOOLS_BIN := .tools/bin
SCHEMAS := .tools/schemas

# Go from PATH, else the usual install location.
GO ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go),go)
# Same flags every time so Go's build cache ($HOME/.cache/go-build) is reused across runs and clones.
GO_BUILD := CGO_ENABLED=0 GOFLAGS=-mod=readonly $(GO) build -trimpath -buildvcs=false

# loadgroup: the tests that need the local control plane share one worker (and one plane).
PYTEST_ARGS ?= -n auto --dist loadgroup

# NFD leaves its version variable for its own Makefile to stamp; without it `nfd-master -version`
# prints "undefined". Keep equal to the NFD version in tools/nfd/go.mod.
NFD_VERSION := v0.19.0
NFD_LDFLAGS := -X sigs.k8s.io/node-feature-discovery/pkg/version.version=$(NFD_VERSION)

.PHONY: venv tools browser go-check go-check-python demo test lint clean distclean

# ---------------------------------------------------------------------------------------- Python
# Every build step below runs through tools/fresh: it is skipped while the SHA-256 of its inputs
# (file contents, not file times) matches the stamp of its last successful run, so a cache
# restored in CI, or a fresh clone with new file times, is reused as it is.
FRESH := tools/fresh
export PATH := $(dir $(GO)):$(PATH)

venv: go-check-python
	@$(FRESH) $(VENV)/.installed.sha256 $(PY) -- pyproject.toml -- \
	  bash -c '$(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install --disable-pip-version-check --quiet -e ".[dev]"'

go-check-python:
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "error: $(PYTHON) (Python >= 3.11) is needed" >&2; exit 1; }

# ----------------------------------------------------------------------------------------- tools
# go_tool(binary, module folder, package[, ldflags]): build a Go-pinned tool into .tools/bin.
# ldflags (optional, no single quotes) e.g. stamp a version variable the module leaves unset.
# They are part of the command line, so tools/fresh rebuilds when they change: fixed values only.
define go_tool
@$(FRESH) $(TOOLS_BIN)/.$(1).sha256 $(TOOLS_BIN)/$(1) -- $(2) -- \
  bash -c 'cd $(2) && $(GO_BUILD) $(if $(4),-ldflags "$(4)") -o $(ROOT)/$(TOOLS_BIN)/$(1) $(3)'
endef

# The control plane (tools/controlplane) is stamped with the Kubernetes version it is built from,
# read from its go.mod, the way Kubernetes' own build does (hack/lib/version.sh sets these
# variables); kube-apiserver --version and the /version endpoint report it. buildDate is the
# release time the module proxy records for the version, so the flags never change between runs.
K8S_VERSION := $(shell awk '$$1=="k8s.io/kubernetes"{print $$2}' tools/controlplane/go.mod)
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_BUILD_DATE := 2026-07-22T18:07:38Z
K8S_LDFLAGS := -s -w $(foreach p,k8s.io/component-base/version k8s.io/client-go/pkg/version,\
  -X $(p).gitVersion=$(K8S_VERSION) -X $(p).gitMajor=1 -X $(p).gitMinor=$(K8S_MINOR) \
  -X $(p).gitTreeState=clean -X $(p).buildDate=$(K8S_BUILD_DATE))

tools: go-check venv
	$(call go_tool,kustomize,tools/kustomize,sigs.k8s.io/kustomize/kustomize/v5)
	$(call go_tool,kubeconform,tools/kustomize,github.com/yannh/kubeconform/cmd/kubeconform)
	@# promtool has its own module: the Prometheus dependency graph is large and must not move
	@# kustomize's or kubeconform's dependencies.
	$(call go_tool,promtool,tools/promtool,github.com/prometheus/prometheus/cmd/promtool)
	@# validate's helper: kustomize's krusty API and kubeconform's validator in one process, at
	@# the versions the two binaries above are built from (tools/kbuild/go.mod; docs/performance.md).
	$(call go_tool,kbuild,tools/kbuild,.)
	@# actionlint checks .github/workflows in the test suite; its own module, like promtool.
	$(call go_tool,actionlint,tools/actionlint,github.com/rhysd/actionlint/cmd/actionlint)
	@# Pod Security Standards as the API server's admission plugin decides them (tests).
	$(call go_tool,podsecurity,tools/podsecurity,.)
	@# Node Feature Discovery: nfd-master (a local control plane runs it) and nfd-rulecheck (runs
	@# NFD's own rule validation and matching on rendered rules). Own module: NFD pins k8s v0.35.
	$(call go_tool,nfd-master,tools/nfd,sigs.k8s.io/node-feature-discovery/cmd/nfd-master,$(NFD_LDFLAGS))
	$(call go_tool,nfd-rulecheck,tools/nfd,./cmd/nfd-rulecheck)
	@# kueuecheck: Kueue's own admission webhooks (sigs.k8s.io/kueue v0.17.0 pkg/webhooks) on
	@# rendered Kueue objects (KUE001). Own module: Kueue pins its own Kubernetes libraries.
	$(call go_tool,kueuecheck,tools/kueuecheck,.)
	@# The control plane behind validate --dry-run=server and simulate: own modules, because
	@# Kubernetes' dependency graph is the largest of all (a cold build takes minutes).
	$(call go_tool,kube-apiserver,tools/controlplane,k8s.io/kubernetes/cmd/kube-apiserver,$(K8S_LDFLAGS))
	$(call go_tool,kube-controller-manager,tools/controlplane,k8s.io/kubernetes/cmd/kube-controller-manager,$(K8S_LDFLAGS))
	$(call go_tool,kube-scheduler,tools/controlplane,k8s.io/kubernetes/cmd/kube-scheduler,$(K8S_LDFLAGS))
	$(call go_tool,kubectl,tools/controlplane,k8s.io/kubernetes/cmd/kubectl,$(K8S_LDFLAGS))
	$(call go_tool,etcd,tools/controlplane,go.etcd.io/etcd/server/v3,-s -w)
	$(call go_tool,kwok,tools/kwok,sigs.k8s.io/kwok/cmd/kwok,-s -w)
	@# schedcheck: the kube-scheduler's own config decoding and validation (k8s.io/kubernetes).
	$(call go_tool,schedcheck,tools/schedcheck,.)
	@# CRD schemas: pinned modules via `go mod download`, Volcano via controller-gen (tools/crdgen).
	@$(FRESH) $(SCHEMAS)/.crds.sha256 $(SCHEMAS)/crds/index.json -- \
	  tools/schemas.lock.yaml tools/crdschemas.py tools/crdgen -- \
	  $(PY) tools/crdschemas.py crds $(SCHEMAS)/crds
	@# Built-in Kubernetes schemas from the kubernetes-validate wheel, refs made file-relative.
	@# Keyed on that wheel's pin alone, so another dependency's bump does not lay them out again.
	@mkdir -p $(SCHEMAS) && grep -o '"kubernetes-validate==[^"]*"' pyproject.toml > $(SCHEMAS)/.k8s-pin
	@$(FRESH) $(SCHEMAS)/.k8s.sha256 $(SCHEMAS)/k8s -- \
	  tools/schemas.lock.yaml tools/crdschemas.py $(SCHEMAS)/.k8s-pin -- \
	  $(PY) tools/crdschemas.py k8s $(SCHEMAS)/k8s

go-check:
	@if ! command -v $(GO) >/dev/null 2>&1; then \
	  echo "error: the Go toolchain (go >= 1.26.7) is needed to build the pinned tools; install it and re-run 'make tools'" >&2; \
	  exit 1; \
	fi

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
demo: venv tools
	$(PY) render.py render
	$(PY) render.py validate
	$(PY) render.py report --out .cache/report/index.html

test: venv tools browser
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
