# accel-gitops: build, test and demo entry points.
#
#   make venv    Python virtualenv with the package and dev tools (skipped while pyproject.toml's content is unchanged)
#   make tools   every pinned external tool into .tools/bin and JSON Schemas into .tools/schemas (each
#                step skipped while the content of its inputs is unchanged: tools/fresh); in three parts:
#     tools-validate  what render, validate and report run (kbuild, promtool, NFD, Kueue, scheduler
#                     config checks, the schemas): all that `make demo` builds
#     tools-cluster   the local control plane behind simulate and validate --dry-run=server (built on
#                     their first run when missing)
#     tools-dev       what only the test suite runs (actionlint, the Pod Security checker)
#   make browser headless Chromium and its WebDriver from Debian's packages (installed when absent)
#   make demo    render the example fleet, validate it, and write its report (.cache/report/)
#   make test    run the test suite (pytest-xdist)
#   make lint    ruff check, ruff format --check, mypy
#   make mutation  mutation testing with mutmut, shard by shard (SHARDS="render delivery" for some);
#                fails when a module scores below its floor (docs/testing.md; tens of minutes)
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

.PHONY: mutation venv tools tools-validate tools-cluster tools-dev browser go-check go-check-python demo test \
  lint clean distclean schemas-crds schemas-k8s \
  tool-kustomize tool-kubeconform tool-kbuild tool-promtool tool-nfd-rulecheck tool-kueuecheck \
  tool-schedcheck tool-kube-apiserver tool-kube-controller-manager tool-kube-scheduler tool-kubectl tool-etcd \
  tool-kwok tool-nfd-master tool-kueue tool-actionlint tool-podsecurity tool-helm

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
# go_tool(binary, module folder, package[, ldflags[, tags]]): build a Go-pinned tool into
# .tools/bin. ldflags (optional, no single quotes) e.g. stamp a version variable the module leaves
# unset; tags select upstream's own build options. Both are part of the command line, so
# tools/fresh rebuilds when they change: fixed values only.
define go_tool
@$(FRESH) $(TOOLS_BIN)/.$(1).sha256 $(TOOLS_BIN)/$(1) -- $(2) -- \
  bash -c 'cd $(2) && $(GO_BUILD) $(if $(5),-tags $(5)) $(if $(4),-ldflags "$(4)") -o $(ROOT)/$(TOOLS_BIN)/$(1) $(3)'
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

# Each tool is a target of its own, so that `make -j` builds independent modules at once (one's
# module downloads and links overlap another's compiles; a cold build is otherwise mostly
# waiting). Tools of one Go module are chained, so the second reuses the packages the first
# compiled instead of compiling them alongside it. demo, test and tools run their builds with
# -j$(JOBS).
JOBS ?= 4
SUBMAKE = $(MAKE) --no-print-directory -j$(JOBS) --output-sync=target

tools:
	+@$(SUBMAKE) tools-validate tools-cluster tools-dev

# What render, validate and report run: every check `validate` makes. The kustomize and
# kubeconform binaries are the reference the kbuild helper is tested against and what show and
# diff run; they share kbuild's module graph, so they cost seconds.
tools-validate: tool-kustomize tool-kubeconform tool-kbuild tool-promtool tool-nfd-rulecheck \
  tool-kueuecheck tool-schedcheck tool-helm schemas-crds schemas-k8s

tool-kustomize: go-check
	$(call go_tool,kustomize,tools/kustomize,sigs.k8s.io/kustomize/kustomize/v5)
tool-kubeconform: tool-kustomize
	$(call go_tool,kubeconform,tools/kustomize,github.com/yannh/kubeconform/cmd/kubeconform)
# validate's helper: kustomize's krusty API and kubeconform's validator in one process, at the
# versions the two binaries above are built from (tools/kbuild/go.mod; docs/performance.md).
tool-kbuild: tool-kubeconform
	$(call go_tool,kbuild,tools/kbuild,.)
# promtool has its own module: the Prometheus dependency graph is large and must not move
# kustomize's or kubeconform's dependencies. Built with upstream's remove_all_sd tag (prometheus
# plugins/plugin_*.go): `check rules` and `test rules` use no service discovery
# (docs/toolchain.md has the measured difference).
tool-promtool: go-check
	$(call go_tool,promtool,tools/promtool,github.com/prometheus/prometheus/cmd/promtool,,remove_all_sd)
# nfd-rulecheck runs NFD's own rule validation and matching on rendered rules (NFD001). Own
# module: NFD pins k8s v0.35.
tool-nfd-rulecheck: go-check
	$(call go_tool,nfd-rulecheck,tools/nfd,./cmd/nfd-rulecheck)
# kueuecheck: Kueue's own admission webhooks (sigs.k8s.io/kueue v0.17.0 pkg/webhooks) on rendered
# Kueue objects (KUE001). Own module: Kueue pins its own Kubernetes libraries.
tool-kueuecheck: go-check
	$(call go_tool,kueuecheck,tools/kueuecheck,.)
# schedcheck: the kube-scheduler's own config decoding and validation (k8s.io/kubernetes, KSC001).
tool-schedcheck: go-check
	$(call go_tool,schedcheck,tools/schedcheck,.)
# helm renders the charts inside the pinned add-on modules (NFD's), offline (CHART001).
tool-helm: go-check
	$(call go_tool,helm,tools/helm,helm.sh/helm/v3/cmd/helm)
# CRD schemas: pinned modules via `go mod download`, Volcano via controller-gen (tools/crdgen).
schemas-crds: go-check venv
	@$(FRESH) $(SCHEMAS)/.crds.sha256 $(SCHEMAS)/crds/index.json -- \
	  tools/schemas.lock.yaml tools/crdschemas.py tools/crdgen -- \
	  $(PY) tools/crdschemas.py crds $(SCHEMAS)/crds
# Built-in Kubernetes schemas from the kubernetes-validate wheel, refs made file-relative. Keyed
# on that wheel's pin alone, so another dependency's bump does not lay them out again.
schemas-k8s: venv
	@mkdir -p $(SCHEMAS) && grep -o '"kubernetes-validate==[^"]*"' pyproject.toml > $(SCHEMAS)/.k8s-pin
	@$(FRESH) $(SCHEMAS)/.k8s.sha256 $(SCHEMAS)/k8s -- \
	  tools/schemas.lock.yaml tools/crdschemas.py $(SCHEMAS)/.k8s-pin -- \
	  $(PY) tools/crdschemas.py k8s $(SCHEMAS)/k8s

# The control plane behind validate --dry-run=server and simulate: own modules, because
# Kubernetes' dependency graph is the largest of all (a cold build takes minutes). simulate and
# --dry-run=server run this target themselves, saying so, when a part is missing. The
# Kubernetes binaries are chained (one module); etcd, kwok and nfd-master build beside them.
tools-cluster: tool-kube-apiserver tool-kube-controller-manager tool-kube-scheduler tool-kubectl \
  tool-etcd tool-kwok tool-nfd-master tool-kueue

tool-kube-apiserver: go-check
	$(call go_tool,kube-apiserver,tools/controlplane,k8s.io/kubernetes/cmd/kube-apiserver,$(K8S_LDFLAGS))
tool-kube-controller-manager: tool-kube-apiserver
	$(call go_tool,kube-controller-manager,tools/controlplane,k8s.io/kubernetes/cmd/kube-controller-manager,$(K8S_LDFLAGS))
tool-kube-scheduler: tool-kube-controller-manager
	$(call go_tool,kube-scheduler,tools/controlplane,k8s.io/kubernetes/cmd/kube-scheduler,$(K8S_LDFLAGS))
tool-kubectl: tool-kube-scheduler
	$(call go_tool,kubectl,tools/controlplane,k8s.io/kubernetes/cmd/kubectl,$(K8S_LDFLAGS))
tool-etcd: tool-kubectl
	$(call go_tool,etcd,tools/controlplane,go.etcd.io/etcd/server/v3,-s -w)
tool-kwok: go-check
	$(call go_tool,kwok,tools/kwok,sigs.k8s.io/kwok/cmd/kwok,-s -w)
# nfd-master runs on the local control plane (simulate labels and taints nodes with it); after
# nfd-rulecheck, its module's other binary.
tool-nfd-master: tool-nfd-rulecheck
	$(call go_tool,nfd-master,tools/nfd,sigs.k8s.io/node-feature-discovery/cmd/nfd-master,$(NFD_LDFLAGS))
# Kueue's controller manager runs on the local control plane when the fleet's scheduling backend
# is kueue (simulate admits Jobs with it); after kueuecheck, its module's other binary.
tool-kueue: tool-kueuecheck
	$(call go_tool,kueue,tools/kueuecheck,sigs.k8s.io/kueue/cmd/kueue,-s -w)

# What only the test suite runs.
tools-dev: tool-actionlint tool-podsecurity

# actionlint checks .github/workflows in the test suite; its own module, like promtool.
tool-actionlint: go-check
	$(call go_tool,actionlint,tools/actionlint,github.com/rhysd/actionlint/cmd/actionlint)
# Pod Security Standards as the API server's admission plugin decides them (tests).
tool-podsecurity: go-check
	$(call go_tool,podsecurity,tools/podsecurity,.)

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
# A newcomer's first minutes: only what render, validate and report need (docs/toolchain.md).
demo: venv
	@echo "demo: the pinned tools render, validate and report run (built on the first run: minutes; then cached)"
	+@$(SUBMAKE) tools-validate
	$(PY) render.py render
	$(PY) render.py validate
	$(PY) render.py report --out .cache/report/index.html

test: venv
	+@$(SUBMAKE) tools browser
	$(PY) -m pytest $(PYTEST_ARGS)

# Not part of `make test`: it runs each module's tests once per mutant (docs/testing.md). The
# control plane too: the simulation shard's tests run `simulate` on it.
SHARDS ?=
MUTATION_ARGS ?=
mutation: venv
	+@$(SUBMAKE) tools-validate tools-cluster
	$(PY) tools/mutation.py run $(MUTATION_ARGS) $(SHARDS)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict tools/crdschemas.py tools/mutation.py

clean:
	rm -rf .tools .pytest_cache .mypy_cache .ruff_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
