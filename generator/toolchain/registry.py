"""Which external tools exist, how each is pinned and obtained, and where it is found.

First ``<tools dir>/bin`` (:func:`tools_dir`: ``$ACCEL_GITOPS_TOOLS_DIR``, else ``.tools`` in a
clone of this repository, else the user's cache), then, for the tools that allow it, ``PATH``."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from generator import Program
from generator.toolchain.buildinfo import go_build_info
from generator.toolchain.crdschemas import MANIFESTS
from generator.toolchain.errors import Install, ToolMissing

ENV_TOOLS_DIR = "ACCEL_GITOPS_TOOLS_DIR"
# The Go modules that pin every built tool, and the schema lock: data of this package, so an
# installed wheel builds exactly what a clone does.
GOTOOLS = Path(__file__).resolve().parent / "gotools"


def install_command(program: Program, only: str = "") -> str:
    """What the user runs to build missing tools (``--only`` a set or some tools)."""
    return Install(only).text(program)


@dataclass(frozen=True)
class Tool:
    """How one external tool is pinned, obtained and found."""

    name: str
    pinned: str
    """Pinned version ('' when any version is accepted)."""
    source: str
    """Where the pinned build comes from."""
    search_path: bool
    """Whether PATH is searched after the tools dir."""
    go_module: str | None = None
    """Module whose version the binary's Go build info must report (Go-built tools)."""
    system_hint: str = ""
    """How to install a tool this program does not build (taken from PATH)."""


def _go(
    name: str,
    module: str,
    version: str,
    folder: str,
    *,
    built_from: str = "",
    search_path: bool = False,
) -> Tool:
    """A tool built by `tools install` from a Go module pinned in gotools/<folder>/go.mod; its
    build info must report `module` at `version`."""
    where = f"{module}@{version} (gotools/{folder}/go.mod)"
    return Tool(
        name=name,
        pinned=version,
        source=f"{built_from} on Go module {where}" if built_from else f"Go module {where}",
        search_path=search_path,
        go_module=module,
    )


def _system(name: str, source: str, install_hint: str) -> Tool:
    """A tool taken from PATH at whatever version is installed (how to get it: `install_hint`)."""
    return Tool(name, "", source, search_path=True, system_hint=install_hint)


# The local control plane behind simulate and validate --dry-run=server: `tools install` (and
# `make demo`) does not build it (minutes of compiling Kubernetes); the first command that needs
# it does (`build_missing`), saying so.
CONTROL_PLANE: tuple[str, ...] = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
    "kwok",
    "nfd-master",
    "kueue",
    "jobset",
    "lws",
    "trainer",
)
# Argo CD's application controller and repo-server (one multi-call binary) and the in-memory
# Redis they cache in: simulate syncs the fleet through them (simulate/gitops.py). Built with the
# control plane, on simulate's first use.
ARGOCD_TOOLS: tuple[str, ...] = ("argocd", "argocd-redis")
ARGOCD_MODULE = "github.com/argoproj/argo-cd/v3"
ARGOCD_VERSION = "v3.2.6"
# The monitoring a site runs (controlplane/monitoring.py): simulate proves with them that every
# series the fleet's dashboard and alerts read has data. Built with the control plane.
MONITORING_TOOLS: tuple[str, ...] = ("kube-state-metrics", "prometheus-operator", "prometheus")
PROMETHEUS_OPERATOR_MODULE = "github.com/prometheus-operator/prometheus-operator"
CONTROL_PLANE_TARGET = "cluster"
# What only this repository's test suite runs (`tools install --only dev`).
DEV_TARGET = "dev"
DEV_TOOLS: tuple[str, ...] = ("actionlint", "podsecurity")
# What only a clone of this repository runs (its test suite, its Makefile): doctor leaves them
# out of an installed accel-gitops's report.
CLONE_ONLY: tuple[str, ...] = (*DEV_TOOLS, "make")

_K8S = ("k8s.io/kubernetes", "v1.36.3")


@dataclass(frozen=True)
class Plane:
    """The control plane of one Kubernetes minor: the Go tool module that pins it
    (gotools/<folder>/go.mod), and the versions of Kubernetes and etcd it pins (etcd at the
    version that Kubernetes release's own go.mod requires)."""

    minor: str
    folder: str
    kubernetes: str
    etcd: str
    released: str
    """The time the Go module proxy records for that Kubernetes version (its .info): the build
    date its binaries are stamped with, so that their command line never changes."""
    apiserver_args: tuple[str, ...] = ()
    """kube-apiserver flags this minor needs on loopback beyond the launcher's own (each cited)."""


# The minors a cluster's kubernetesVersion may name for simulate and validate --dry-run=server:
# from the oldest minor sites still commonly run to the newest released, each the newest patch
# the Go module proxy served on 2026-12-05 (`go list -m -versions k8s.io/kubernetes`). Every
# one builds with the Go of the default minor (each release's go.mod `go` line is at most 1.26.0).
DEFAULT_MINOR = "1.36"
PLANES: Mapping[str, Plane] = {
    plane.minor: plane
    for plane in (
        Plane("1.34", "controlplane-1.34", "v1.34.4", "v3.6.4", "2026-02-10T12:53:36Z"),
        Plane("1.35", "controlplane-1.35", "v1.35.4", "v3.6.5", "2026-04-15T18:01:22Z"),
        Plane(DEFAULT_MINOR, "controlplane", _K8S[1], "v3.6.8", "2026-07-22T18:07:38Z"),
        # From 1.37 the lease endpoint reconciler refuses a loopback advertise address (k8s.io/
        # kubernetes v1.37.2 pkg/controlplane/instance.go: "cannot use public IP ... with endpoint
        # reconciler", reconcilers/lease.go ValidateIP; v1.36.3 has no such check). "none"
        # (reconcilers/none.go) leaves the default/kubernetes Service without endpoints, which
        # nothing on the plane reads: every client is given the server's URL.
        Plane(
            "1.37",
            "controlplane-1.37",
            "v1.37.2",
            "v3.7.0",
            "2026-10-27T12:01:04Z",
            apiserver_args=("--endpoint-reconciler-type=none",),
        ),
    )
}
# The tools a plane of each minor has of its own; the rest of CONTROL_PLANE (KWOK, nfd-master,
# the add-on controllers) runs beside any of them.
PLANE_TOOLS: tuple[str, ...] = (
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "etcd",
)


def plane_tool(name: str, minor: str) -> str:
    """The registered name of a plane tool of `minor`: the default minor's under its own name
    (gotools/controlplane, what `make tools` builds), another minor's suffixed with it
    (``kube-apiserver-1.34``), so that no build of one minor ever replaces another's."""
    return name if minor == DEFAULT_MINOR else f"{name}-{minor}"


def plane_target(minor: str) -> str:
    """The `tools install` set that builds the plane of `minor` (``cluster-1.34``); the default
    minor's is the cluster set itself."""
    return CONTROL_PLANE_TARGET if minor == DEFAULT_MINOR else f"{CONTROL_PLANE_TARGET}-{minor}"


def control_plane_tools(minor: str) -> tuple[str, ...]:
    """What a control plane of `minor` runs: its own plane tools and the shared rest."""
    return tuple(plane_tool(t, minor) if t in PLANE_TOOLS else t for t in CONTROL_PLANE)


def _plane_tools(plane: Plane) -> tuple[Tool, ...]:
    k8s = ("k8s.io/kubernetes", plane.kubernetes)
    return (
        *(_go(plane_tool(t, plane.minor), *k8s, plane.folder) for t in PLANE_TOOLS[:-1]),
        _go(plane_tool("etcd", plane.minor), "go.etcd.io/etcd/server/v3", plane.etcd, plane.folder),
    )


# The modules the control plane also reads files from at run time (controlplane/sources.py).
NFD_MODULE = "sigs.k8s.io/node-feature-discovery"
KWOK_MODULE = "sigs.k8s.io/kwok"
_NFD = (NFD_MODULE, "v0.19.0")

_DECLARED: Mapping[str, Tool] = {
    tool.name: tool
    for tool in (
        _go("kustomize", "sigs.k8s.io/kustomize/kustomize/v5", "v5.8.1", "kustomize"),
        _go("kubeconform", "github.com/yannh/kubeconform", "v0.7.0", "kustomize"),
        _go(
            "promtool", "github.com/prometheus/prometheus", "v0.316.0", "promtool", search_path=True
        ),
        # kustomize's build API (kustomize v5.8.1's) and kubeconform v0.7.0 in one process.
        _go(
            "kbuild",
            "sigs.k8s.io/kustomize/api",
            "v0.21.1",
            "kbuild",
            built_from="gotools/kbuild with github.com/yannh/kubeconform@v0.7.0",
        ),
        # The control planes behind `validate --dry-run=server` and `simulate` (controlplane/),
        # one per minor.
        *(tool for plane in PLANES.values() for tool in _plane_tools(plane)),
        _go("kwok", KWOK_MODULE, "v0.8.0", "kwok"),
        # Lints this repository's GitHub workflows (make test); the generator never runs it.
        _go("actionlint", "github.com/rhysd/actionlint", "v1.7.12", "actionlint"),
        # Pod Security Standards as the API server's admission plugin decides them (this
        # repository's tests); the generator never runs it.
        _go(
            "podsecurity",
            "k8s.io/pod-security-admission",
            "v0.36.3",
            "podsecurity",
            built_from="gotools/podsecurity",
        ),
        # Argo CD: v3.2.6 is the newest release that builds from served modules
        # (gotools/argocd/go.mod says why).
        _go("argocd", ARGOCD_MODULE, ARGOCD_VERSION, "argocd"),
        _go(
            "argocd-redis",
            "github.com/alicebob/miniredis/v2",
            "v2.35.0",
            "argocd",
            built_from="gotools/argocd/redis",
        ),
        # The monitoring simulate runs (MONITORING_TOOLS): Prometheus from promtool's module.
        _go("prometheus", "github.com/prometheus/prometheus", "v0.316.0", "promtool"),
        _go("kube-state-metrics", "k8s.io/kube-state-metrics/v2", "v2.20.0", "ksm"),
        _go("prometheus-operator", PROMETHEUS_OPERATOR_MODULE, "v0.85.0", "promoperator"),
        # The Prometheus Operator's own check of a PrometheusRule (operator.ValidateRule: the
        # rule file's size limit, rulefmt) on rendered PrometheusRules (PROM002,
        # generator/validate/stages/promoperator.py).
        _go(
            "promrulecheck",
            PROMETHEUS_OPERATOR_MODULE,
            "v0.85.0",
            "promoperator",
            built_from="gotools/promoperator/promrulecheck",
        ),
        _go("nfd-master", *_NFD, "nfd"),
        _go("nfd-rulecheck", *_NFD, "nfd", built_from="gotools/nfd/cmd/nfd-rulecheck"),
        # Kueue's admission webhooks on rendered Kueue objects (KUE001, generator/validate/kueue).
        _go(
            "kueuecheck",
            "sigs.k8s.io/kueue",
            "v0.17.0",
            "kueuecheck",
            built_from="gotools/kueuecheck",
        ),
        # Kueue's controller manager: simulate runs it when the fleet's backend is kueue.
        _go("kueue", "sigs.k8s.io/kueue", "v0.17.0", "kueuecheck"),
        # JobSet's and LeaderWorkerSet's controller managers, at the versions Kueue v0.17.0's
        # go.mod requires: simulate runs them when the environment applies their objects.
        _go("jobset", "sigs.k8s.io/jobset", "v0.11.1", "workloads"),
        _go("lws", "sigs.k8s.io/lws", "v0.8.0", "workloads"),
        # Kubeflow Trainer's controller manager, at the version Kueue v0.17.0's go.mod
        # requires: simulate runs it when the environment applies TrainJobs.
        _go("trainer", "github.com/kubeflow/trainer/v2", "v2.2.0", "kueuecheck"),
        # JobSet's and LeaderWorkerSet's admission webhooks on rendered JobSets and
        # LeaderWorkerSets (ADM001, generator/validate/stages/workloads.py).
        _go(
            "workloadcheck",
            "sigs.k8s.io/jobset",
            "v0.11.1",
            "workloads",
            built_from="gotools/workloads with sigs.k8s.io/lws@v0.8.0",
        ),
        # Kubeflow Trainer's TrainJob admission check on rendered TrainJobs (ADM001, the same
        # stage).
        _go(
            "trainjobcheck",
            "github.com/kubeflow/trainer/v2",
            "v2.2.0",
            "kueuecheck",
            built_from="gotools/kueuecheck/trainjobcheck",
        ),
        _system(
            "openssl",
            "PATH (Debian package openssl; makes the local control plane's signing key)",
            "apt-get install openssl",
        ),
        _go("schedcheck", *_K8S, "schedcheck"),
        # Renders the charts of the add-ons the fleet renders from the pinned modules that ship
        # them (NFD's), offline (generator/validate/stages/charts.py).
        _go("helm", "helm.sh/helm/v3", "v3.22.0", "helm"),
        _system(
            "go",
            "PATH (Go >= 1.26.7 needed to build the pinned tools)",
            "install Go >= 1.26.7 and put it on PATH",
        ),
        _system("git", "PATH (Debian package git)", "apt-get install git"),
        _system("make", "PATH (Debian package make)", "apt-get install make"),
    )
}

# Tools that not every command needs: `tools install` leaves them unbuilt, doctor says so
# without failing, and their install hint names the set that builds them.
OPTIONAL: Mapping[str, str] = {
    **{name: CONTROL_PLANE_TARGET for name in (*CONTROL_PLANE, *ARGOCD_TOOLS, *MONITORING_TOOLS)},
    **{
        plane_tool(name, minor): plane_target(minor)
        for minor in PLANES
        if minor != DEFAULT_MINOR
        for name in PLANE_TOOLS
    },
    **{name: DEV_TARGET for name in DEV_TOOLS},
}
_OPTIONAL_WHY = {
    CONTROL_PLANE_TARGET: "simulate and validate --dry-run=server build it on first use",
    **{
        plane_target(minor): "simulate and validate --dry-run=server build it on first use for "
        f"a cluster of Kubernetes {minor}"
        for minor in PLANES
        if minor != DEFAULT_MINOR
    },
    DEV_TARGET: "accel-gitops's own test suite runs it",
}
TOOLS: Mapping[str, Tool] = _DECLARED


def install_for(name: str) -> Install:
    """How to get a missing tool."""
    if _tool(name).system_hint:
        return Install(system=_tool(name).system_hint)
    if name in OPTIONAL:
        group = OPTIONAL[name]
        return Install(group, _OPTIONAL_WHY[group])
    return Install()


def install_hint(name: str, program: Program) -> str:
    """How to get a missing tool, in the command the user runs."""
    return install_for(name).text(program)


# Where go usually lives when it is not on PATH.
_EXTRA_LOCATIONS: Mapping[str, tuple[Path, ...]] = {"go": (Path("/usr/local/go/bin/go"),)}


def repo_root() -> Path:
    """The parent of the ``generator`` package directory: a clone's root, or site-packages."""
    return Path(__file__).resolve().parent.parent.parent


def in_clone() -> bool:
    """Running from a clone of accel-gitops (or its editable install), not an installed wheel."""
    return (repo_root() / "pyproject.toml").is_file() and (repo_root() / "Makefile").is_file()


def user_cache() -> Path:
    """Where an installed accel-gitops keeps the tools it builds: the XDG cache folder."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "accel-gitops" / "tools"


def tools_dir() -> Path:
    """``$ACCEL_GITOPS_TOOLS_DIR`` if set, else ``.tools`` in a clone, else the user's cache."""
    override = os.environ.get(ENV_TOOLS_DIR)
    if override:
        return Path(override)
    return repo_root() / ".tools" if in_clone() else user_cache()


def crd_manifests_dir() -> Path:
    """Where `tools install` keeps each pinned CRD object, one JSON file per CRD (crdschemas.py
    MANIFESTS under the CRD schema set): the API server's CRDs in simulate, the schema defaults
    workloadcheck applies."""
    return tools_dir() / "schemas" / "crds" / MANIFESTS


def tools_dir_origin() -> str:
    """Why the tools dir is where it is, for doctor."""
    if os.environ.get(ENV_TOOLS_DIR):
        return f"${ENV_TOOLS_DIR}"
    return "this clone's .tools" if in_clone() else "the user cache ($XDG_CACHE_HOME or ~/.cache)"


def _tool(name: str) -> Tool:
    try:
        return TOOLS[name]
    except KeyError:
        raise ValueError(f"unknown tool {name!r}; known: {', '.join(sorted(TOOLS))}") from None


def _candidates(tool: Tool) -> tuple[list[Path], list[str]]:
    """(explicit paths to try, descriptions of where we look)."""
    bin_dir = tools_dir() / "bin"
    paths = [bin_dir / tool.name]
    looked = [str(bin_dir)]
    if tool.search_path:
        looked.append("PATH")
    elif tool.name in PATH_AT_PIN:
        looked.append(f"PATH (at {tool.pinned})")
    return paths, looked


# Upstream programs this package pins and builds, which a machine may also have on PATH: one
# there is used when its Go build info reports exactly the pinned module version (a build of
# other code, or of another version, is not). Our own helpers (kbuild, the checkers) are not
# looked for on PATH: a program of that name there is not ours.
PATH_AT_PIN: frozenset[str] = frozenset(
    {"kustomize", "kubeconform", "helm", "actionlint", *CONTROL_PLANE}
)


def _at_pin(path: Path, tool: Tool) -> bool:
    info = go_build_info(path)
    return info is not None and info.modules.get(str(tool.go_module)) == tool.pinned


def find(name: str) -> Path | None:
    """Path of the tool's executable, or None when it is not installed."""
    tool = _tool(name)
    paths, _ = _candidates(tool)
    for p in paths:
        if p.is_file() and os.access(p, os.X_OK):
            return p
    if name in PATH_AT_PIN:
        found = shutil.which(tool.name)
        return Path(found) if found and _at_pin(Path(found), tool) else None
    if tool.search_path:
        found = shutil.which(tool.name)
        if found:
            return Path(found)
        for p in _EXTRA_LOCATIONS.get(tool.name, ()):
            if p.is_file() and os.access(p, os.X_OK):
                return p
    return None


def _require(name: str) -> Path:
    tool = _tool(name)
    path = find(name)
    if path is None:
        raise ToolMissing(name, install_for(name), _candidates(tool)[1])
    return path


def require(tool: str) -> Path:
    """The tool's executable; ToolMissing (with the install command) when it is not installed."""
    return _require(tool)


def missing(names: tuple[str, ...]) -> list[str]:
    """The tools among `names` that are not installed."""
    return [name for name in names if find(name) is None]
