"""`accel-gitops tools install`: build the pinned external tools and lay out the offline schemas.

One implementation for every way in: `make tools` in a clone runs it, an installed wheel runs it
into the user's cache, and simulate runs it for the control plane on first use. Every tool is
built with `go build` from a Go module this package ships (``gotools/<folder>/go.mod``, pinned by
go.sum and fetched only from the Go module proxy), and each step is skipped while the SHA-256 of
its inputs' contents, its command line and ``go version`` match its stamp (:mod:`fresh`): a cache
restored with other file times is reused as it is.

Sets: ``validate`` (what render, validate, report, diff and publish run: the default),
``cluster`` (the local control plane behind simulate and validate --dry-run=server) and ``dev``
(what only this repository's own test suite runs).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from generator.toolchain import crdschemas, fresh
from generator.toolchain.errors import ToolFailed, ToolMissing
from generator.toolchain.process import run
from generator.toolchain.registry import (
    ARGOCD_TOOLS,
    ARGOCD_VERSION,
    CONTROL_PLANE,
    CONTROL_PLANE_TARGET,
    DEFAULT_MINOR,
    DEV_TARGET,
    DEV_TOOLS,
    GOTOOLS,
    MONITORING_TOOLS,
    PLANE_TOOLS,
    PLANES,
    Plane,
    find,
    install_for,
    missing,
    plane_target,
    plane_tool,
    tools_dir,
)

VALIDATE_TARGET = "validate"
BUILD_TIMEOUT = 3600.0  # a cold build of the control plane takes minutes on two cores

# NFD leaves its version variable for its own Makefile to stamp; without it `nfd-master -version`
# prints "undefined". Equal to the NFD version in gotools/nfd/go.mod (a test holds it).
NFD_VERSION = "v0.19.0"


@dataclass(frozen=True)
class Build:
    """How one tool is built: `go build` of `package` in gotools/<folder>."""

    tool: str
    folder: str
    package: str
    ldflags: str = ""
    """Fixed values only: they are part of the stamp."""
    tags: str = ""
    """Upstream's own build options (e.g. promtool without service discovery)."""
    chain: str = ""
    """Builds of one chain run one after another, so the second reuses the packages the first
    compiled instead of compiling them beside it; chains run side by side. Default: the folder."""

    @property
    def argv(self) -> list[str]:
        """The `go build` command line, without its output path."""
        argv = ["go", "build", "-trimpath", "-buildvcs=false"]
        if self.tags:
            argv += ["-tags", self.tags]
        if self.ldflags:
            argv += ["-ldflags", self.ldflags]
        return [*argv, self.package]


def _k8s_ldflags(plane: Plane) -> str:
    """Kubernetes' own build stamps these variables (hack/lib/version.sh); kube-apiserver
    --version and /version report them. buildDate is the release time the module proxy records
    for the version (Plane.released), so the command line, and so the stamp, never changes."""
    folder = plane.folder
    gomod = (GOTOOLS / folder / "go.mod").read_text(encoding="utf-8")
    found = re.search(r"^\s*k8s\.io/kubernetes\s+(v\d+\.(\d+)\.\S+)", gomod, re.M)
    if found is None:
        raise ToolFailed([f"read gotools/{folder}/go.mod"], 1, b"", b"no k8s.io/kubernetes")
    version, minor = found.group(1), found.group(2)
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {pkg}.gitVersion={version}",
            f"-X {pkg}.gitMajor=1",
            f"-X {pkg}.gitMinor={minor}",
            f"-X {pkg}.gitTreeState=clean",
            f"-X {pkg}.buildDate={plane.released}",
        ]
    return " ".join(flags)


def _plane_builds(plane: Plane) -> list[Build]:
    """The tools of one minor's control plane, from its own module, under its own names."""
    k8s = _k8s_ldflags(plane)
    return [
        *(
            Build(
                plane_tool(name, plane.minor),
                plane.folder,
                f"k8s.io/kubernetes/cmd/{name}",
                ldflags=k8s,
            )
            for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
        ),
        Build(
            plane_tool("etcd", plane.minor),
            plane.folder,
            "go.etcd.io/etcd/server/v3",
            ldflags="-s -w",
        ),
    ]


def builds() -> dict[str, Build]:
    """Every tool this package builds, by name."""
    listed = [
        # validate's helper kbuild links kustomize's API and kubeconform at the versions of the
        # two reference binaries (its go.mod), so it follows them on one chain.
        Build("kustomize", "kustomize", "sigs.k8s.io/kustomize/kustomize/v5"),
        Build("kubeconform", "kustomize", "github.com/yannh/kubeconform/cmd/kubeconform"),
        Build("kbuild", "kbuild", ".", chain="kustomize"),
        # Upstream's remove_all_sd tag: `check rules` and `test rules` use no service discovery.
        Build(
            "promtool",
            "promtool",
            "github.com/prometheus/prometheus/cmd/promtool",
            tags="remove_all_sd",
        ),
        # Prometheus with the one service discovery the simulation uses (upstream's build tags,
        # plugins/plugin_kubernetes.go v0.316.0).
        Build(
            "prometheus",
            "promtool",
            "github.com/prometheus/prometheus/cmd/prometheus",
            tags="remove_all_sd,enable_kubernetes_sd",
        ),
        Build("kube-state-metrics", "ksm", "k8s.io/kube-state-metrics/v2", ldflags="-s -w"),
        Build("promrulecheck", "promoperator", "./promrulecheck"),
        Build(
            "prometheus-operator",
            "promoperator",
            "github.com/prometheus-operator/prometheus-operator/cmd/operator",
            ldflags="-s -w",
        ),
        Build("nfd-rulecheck", "nfd", "./cmd/nfd-rulecheck"),
        Build("kueuecheck", "kueuecheck", "."),
        Build("schedcheck", "schedcheck", "."),
        Build("helm", "helm", "helm.sh/helm/v3/cmd/helm"),
        *(build for plane in PLANES.values() for build in _plane_builds(plane)),
        Build("kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok", ldflags="-s -w"),
        Build(
            "nfd-master",
            "nfd",
            "sigs.k8s.io/node-feature-discovery/cmd/nfd-master",
            ldflags=f"-X sigs.k8s.io/node-feature-discovery/pkg/version.version={NFD_VERSION}",
        ),
        Build("kueue", "kueuecheck", "sigs.k8s.io/kueue/cmd/kueue", ldflags="-s -w"),
        Build(
            "trainer",
            "kueuecheck",
            "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
            ldflags="-s -w",
        ),
        Build("workloadcheck", "workloads", "."),
        Build("trainjobcheck", "kueuecheck", "./trainjobcheck"),
        Build("jobset", "workloads", "sigs.k8s.io/jobset", ldflags="-s -w"),
        Build("lws", "workloads", "sigs.k8s.io/lws/cmd", ldflags="-s -w"),
        # Argo CD's own build stamps its version (argo-cd v3.2.6 Makefile, LDFLAGS; without it
        # it reports v99.99.99). No commit is stamped: the module proxy does not say which, and
        # a guessed one would be a lie; so it reports "v3.2.6+unknown".
        Build(
            "argocd",
            "argocd",
            "github.com/argoproj/argo-cd/v3/cmd",
            ldflags="-s -w -X github.com/argoproj/argo-cd/v3/common.version="
            + ARGOCD_VERSION.removeprefix("v"),
        ),
        Build("argocd-redis", "argocd", "./redis", ldflags="-s -w"),
        Build("actionlint", "actionlint", "github.com/rhysd/actionlint/cmd/actionlint"),
        Build("podsecurity", "podsecurity", "."),
    ]
    return {b.tool: b for b in listed}


# The schema sets kubeconform validates against: two steps of the validate set.
SCHEMAS = ("schemas-crds", "schemas-k8s")
SETS: dict[str, tuple[str, ...]] = {
    VALIDATE_TARGET: (
        "kustomize",
        "kubeconform",
        "kbuild",
        "promtool",
        "promrulecheck",
        "nfd-rulecheck",
        "kueuecheck",
        "workloadcheck",
        "trainjobcheck",
        "schedcheck",
        "helm",
        *SCHEMAS,
    ),
    CONTROL_PLANE_TARGET: (*CONTROL_PLANE, *ARGOCD_TOOLS, *MONITORING_TOOLS),
    DEV_TARGET: DEV_TOOLS,
}
# What `make demo` builds: the validate set but the checkers of the stages it skips (Makefile
# DEMO_SKIP: charts, kueue, workloads), which take half of a cold build (helm, and the webhooks
# of Kueue, JobSet, LeaderWorkerSet and Trainer, each linking Kubernetes' libraries at versions of
# its own). tests/validate/test_skip.py holds the two equal.
DEMO_TARGET = "demo"
DEMO_LEAVES = ("helm", "kueuecheck", "trainjobcheck", "workloadcheck")
SETS[DEMO_TARGET] = tuple(t for t in SETS[VALIDATE_TARGET] if t not in DEMO_LEAVES)


# The control plane of each minor but the default (its tools only: the rest of the cluster set
# runs beside any plane). Not part of `all` (`make tools`): simulate and validate --dry-run=server
# build the one a cluster's kubernetesVersion names on first use, and each takes minutes.
PLANE_SETS: dict[str, tuple[str, ...]] = {
    plane_target(minor): tuple(plane_tool(t, minor) for t in PLANE_TOOLS)
    for minor in PLANES
    if minor != DEFAULT_MINOR
}


def resolve(names: Iterable[str]) -> list[str]:
    """Tool and set names -> the steps to run, in a stable order; ValueError for an unknown one."""
    known = [*builds(), *SCHEMAS]
    steps: list[str] = []
    for name in names:
        if name == "all":
            wanted: tuple[str, ...] = tuple(s for group in SETS.values() for s in group)
        elif name in SETS:
            wanted = SETS[name]
        elif name in PLANE_SETS:
            wanted = PLANE_SETS[name]
        elif name in known:
            wanted = (name,)
        else:
            choices = ", ".join([*SETS, "all", *PLANE_SETS, *sorted(known)])
            raise ValueError(f"unknown tool or set {name!r}; choose from: {choices}")
        for step in wanted:  # once each, though sets overlap (demo is part of validate)
            if step not in steps:
                steps.append(step)
    return steps


def _go() -> Path:
    go = find("go")
    if go is None:
        raise ToolMissing("go", install_for("go"), ["PATH"])
    return go


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The user's GOFLAGS stay (a CI's -modcacherw, so that its module cache can be removed, or
    # -p=1 on a small machine), and -mod=readonly comes last: the go command applies GOFLAGS in
    # order, so a later value of a flag wins (Go 1.26 cmd/go/internal/base/goflags.go,
    # SetFromGOFLAGS).
    env.update(CGO_ENABLED="0", GOFLAGS=" ".join([*_user_goflags(), "-mod=readonly"]))
    return env


def _user_goflags() -> list[str]:
    return os.environ.get("GOFLAGS", "").split()


def _build_inputs(build: Build) -> list[str]:
    """What a tool's build runs with, for its staleness: the command, and the user's GOFLAGS
    when set (they may change the binary: -tags, -trimpath), so that changing them rebuilds."""
    user = _user_goflags()
    return [*build.argv, *([f"GOFLAGS={' '.join(user)}"] if user else [])]


def _build_tool(build: Build, go_version: str, say: Callable[[str], None]) -> bool:
    bin_dir = tools_dir() / "bin"
    folder = GOTOOLS / build.folder
    out = bin_dir / build.tool
    want = fresh.digest([folder], _build_inputs(build), go_version)

    def step() -> None:
        say(f"building {build.tool} (gotools/{build.folder}/go.mod)")  # refresh made bin_dir
        # Built beside its final place and renamed: a killed build never leaves half a binary.
        with tempfile.TemporaryDirectory(dir=bin_dir, prefix=f".{build.tool}.") as tmp:
            partial = Path(tmp) / build.tool
            argv = ["build", "-o", str(partial), *build.argv[2:]]
            run("go", argv, cwd=folder, env=_env(), timeout=BUILD_TIMEOUT)
            os.replace(partial, out)

    return fresh.refresh(bin_dir / f".{build.tool}.sha256", out, want, step)


def _kubernetes_validate() -> str:
    try:
        return f"kubernetes-validate=={metadata.version('kubernetes-validate')}"
    except metadata.PackageNotFoundError:
        return "kubernetes-validate (not installed)"


def _build_schemas(name: str, go_version: str, say: Callable[[str], None]) -> bool:
    schemas = tools_dir() / "schemas"
    lock_path = crdschemas.DEFAULT_LOCK
    inputs = [lock_path, Path(crdschemas.__file__)]
    what = name.removeprefix("schemas-")
    if what == "crds":
        inputs.append(GOTOOLS / "crdgen")
        out, argv = schemas / "crds" / "index.json", ["crds"]
    else:
        # Keyed on that wheel's pin alone, so another dependency's bump does not lay them out again.
        out, argv = schemas / "k8s", ["k8s", _kubernetes_validate()]

    def step() -> None:
        say(f"laying out the {what} JSON schemas ({lock_path.name})")
        lock = crdschemas.load_lock(lock_path)
        try:
            if what == "crds":
                crdschemas.build_crds(lock, schemas / "crds")
            else:
                crdschemas.build_k8s(lock, schemas / "k8s")
        except crdschemas.SchemaBuildError as exc:
            raise ToolFailed([name], 1, b"", str(exc).encode()) from exc

    return fresh.refresh(
        schemas / f".{what}.sha256", out, fresh.digest(inputs, argv, go_version), step
    )


def chains(steps: list[str], table: dict[str, Build]) -> dict[str, list[str]]:
    """The steps grouped into chains, each in the order given: a tool's chain (by default its
    module folder), and one chain for the schema sets."""
    out: dict[str, list[str]] = {}
    for step in steps:
        key = "schemas" if step in SCHEMAS else (table[step].chain or table[step].folder)
        out.setdefault(key, []).append(step)
    return out


def install(
    names: Iterable[str], *, jobs: int = 4, say: Callable[[str], None] = lambda _: None
) -> list[str]:
    """Build the named tools and sets that are not fresh; returns what was built. Chains run side
    by side (`jobs` at once); ToolFailed for the first chain that failed, after all have ended."""
    steps = resolve(names)
    _go()
    go_version = fresh.go_version()
    table = builds()

    def run_chain(chain: list[str]) -> list[str]:
        built: list[str] = []
        for step in chain:
            ran = (
                _build_schemas(step, go_version, say)
                if step in SCHEMAS
                else _build_tool(table[step], go_version, say)
            )
            if ran:
                built.append(step)
        return built

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(run_chain, chain) for chain in chains(steps, table).values()]
    # Every chain has ended (the pool waited for them): the first failure, if any, raises here.
    built = [step for future in futures for step in future.result()]
    return [s for s in steps if s in built]


def build_missing(names: tuple[str, ...], say: Callable[[str], None] = lambda _: None) -> list[str]:
    """Build the sets of whichever of `names` are missing (each tool's set: the cluster set, or
    the plane of one minor); returns what was missing."""
    absent = missing(names)
    # A tool of another installer (openssl) is left for its own ToolMissing when it is run.
    how = [install_for(name) for name in absent]
    targets = sorted({h.only or name for name, h in zip(absent, how, strict=True) if not h.system})
    if targets:
        install(targets, say=say)
    return absent
