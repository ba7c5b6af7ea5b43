"""What `tools install` builds and how: each tool from a main package of its pinned module, with
the link flags that stamp its version, in chains that reuse compiled packages; the schema steps
stamped like the tools; the control plane built only when a part is missing."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

# crdschemas, fresh, metadata: the modules install.py calls through (patched on the module).
from generator.toolchain import crdschemas, errors, fresh, install, registry
from generator.toolchain import registry as tool_registry

K8S = "v1.36.3"


def test_every_tool_is_a_main_package_of_its_pinned_module() -> None:
    """`go list` in the tool's module folder (offline: the module cache is warm after make
    tools) names each package as a command."""
    go = tool_registry.find("go")
    assert go is not None
    for build in install.builds().values():
        proc = subprocess.run(
            [str(go), "list", "-mod=readonly", "-f", "{{.Name}} {{.ImportPath}}", build.package],
            cwd=registry.GOTOOLS / build.folder,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, (build.tool, proc.stderr)
        assert proc.stdout.split()[0] == "main", (build.tool, proc.stdout)


def test_the_command_lines_stamp_versions_and_keep_upstreams_options() -> None:
    table = install.builds()
    stamp = " ".join(
        f"-X {pkg}.{var}"
        for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
        for var in (
            f"gitVersion={K8S}",
            "gitMajor=1",
            "gitMinor=36",
            "gitTreeState=clean",
            "buildDate=2026-07-22T18:07:38Z",
        )
    )
    assert table["kube-apiserver"].argv == [
        "go",
        "build",
        "-trimpath",
        "-buildvcs=false",
        "-ldflags",
        f"-s -w {stamp}",
        "k8s.io/kubernetes/cmd/kube-apiserver",
    ]
    assert {t for t, b in table.items() if b.ldflags == f"-s -w {stamp}"} == {
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
    }
    assert table["promtool"].argv == [
        "go",
        "build",
        "-trimpath",
        "-buildvcs=false",
        "-tags",
        "remove_all_sd",
        "github.com/prometheus/prometheus/cmd/promtool",
    ]
    # Prometheus with the one service discovery the simulation uses (plugins/plugin_kubernetes.go)
    assert table["prometheus"].argv == [
        "go",
        "build",
        "-trimpath",
        "-buildvcs=false",
        "-tags",
        "remove_all_sd,enable_kubernetes_sd",
        "github.com/prometheus/prometheus/cmd/prometheus",
    ]
    assert table["nfd-master"].ldflags == (
        "-X sigs.k8s.io/node-feature-discovery/pkg/version.version=v0.19.0"
    )
    stripped = {
        *("etcd", "etcd-1.34", "etcd-1.35", "etcd-1.37"),
        *("kwok", "kueue", "jobset", "lws", "trainer", "argocd-redis"),
        *("kube-state-metrics", "prometheus-operator"),
    }
    assert {t for t, b in table.items() if b.ldflags == "-s -w"} == stripped
    # Argo CD's own Makefile stamps its version (LDFLAGS): without it, it says v99.99.99.
    assert table["argocd"].argv == [
        "go",
        "build",
        "-trimpath",
        "-buildvcs=false",
        "-ldflags",
        "-s -w -X github.com/argoproj/argo-cd/v3/common.version=3.2.6",
        "github.com/argoproj/argo-cd/v3/cmd",
    ]
    plain = {"kustomize", "kubeconform", "kbuild", "nfd-rulecheck", "kueuecheck", "schedcheck"}
    plain |= {"workloadcheck", "trainjobcheck", "promrulecheck"}
    plain |= {"helm", "actionlint", "podsecurity"}
    assert {t for t, b in table.items() if not b.ldflags and not b.tags} == plain
    assert table["kustomize"].argv == [
        "go",
        "build",
        "-trimpath",
        "-buildvcs=false",
        "sigs.k8s.io/kustomize/kustomize/v5",
    ]


def test_the_kubernetes_version_comes_from_the_control_planes_go_mod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for other in ("controlplane-1.34", "controlplane-1.35", "controlplane-1.37"):
        (tmp_path / other).mkdir()
        shutil.copy(registry.GOTOOLS / other / "go.mod", tmp_path / other / "go.mod")
    (tmp_path / "controlplane").mkdir()
    (tmp_path / "controlplane" / "go.mod").write_text("require (\n\tk8s.io/kubernetes v1.40.2\n)\n")
    monkeypatch.setattr(install, "GOTOOLS", tmp_path)
    flags = install.builds()["kubectl"].ldflags
    assert "-X k8s.io/client-go/pkg/version.gitVersion=v1.40.2" in flags
    assert "-X k8s.io/component-base/version.gitMinor=40" in flags
    (tmp_path / "controlplane" / "go.mod").write_text("module x\n")
    with pytest.raises(errors.ToolFailed) as info:
        install.builds()
    assert info.value.argv == ("read gotools/controlplane/go.mod",)
    assert (info.value.returncode, info.value.stdout) == (1, b"")
    assert info.value.stderr == b"no k8s.io/kubernetes"


def test_chains_keep_one_module_in_order_and_the_schemas_together() -> None:
    table = install.builds()
    steps = install.resolve(["all"])
    got = install.chains(steps, table)
    assert got["kustomize"] == ["kustomize", "kubeconform", "kbuild"]
    assert got["controlplane"] == [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kubectl",
        "etcd",
    ]
    assert got["nfd"] == ["nfd-rulecheck", "nfd-master"]
    assert got["kueuecheck"] == ["kueuecheck", "trainjobcheck", "kueue", "trainer"]
    assert got["workloads"] == ["workloadcheck", "jobset", "lws"]
    assert got["promoperator"] == ["promrulecheck", "prometheus-operator"]
    assert got["schemas"] == ["schemas-crds", "schemas-k8s"]
    assert sorted(s for chain in got.values() for s in chain) == sorted(steps)


def test_schema_steps_are_stamped_like_the_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema sets are laid out by crdschemas (faked here: the real build is what `make
    tools` and every test of validate run) into <tools dir>/schemas, and not again while the
    lock, crdschemas.py, the controller-gen module (CRDs) and kubernetes-validate's version (the
    built-in kinds) are the same."""
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "tools"))
    made: list[str] = []

    def crds(lock: object, out: Path) -> list[str]:
        assert isinstance(lock, crdschemas.Lock) and lock.modules
        made.append("crds")
        out.mkdir(parents=True)
        (out / "index.json").write_text("{}")
        return []

    def k8s(lock: object, out: Path) -> list[str]:
        assert isinstance(lock, crdschemas.Lock) and lock.modules
        made.append("k8s")
        out.mkdir(parents=True, exist_ok=True)
        return []

    monkeypatch.setattr(crdschemas, "build_crds", crds)
    monkeypatch.setattr(crdschemas, "build_k8s", k8s)
    said: list[str] = []
    assert install.install(["schemas-crds", "schemas-k8s"], say=said.append) == [
        "schemas-crds",
        "schemas-k8s",
    ]
    assert made == ["crds", "k8s"]
    assert said == [
        "laying out the crds JSON schemas (schemas.lock.yaml)",
        "laying out the k8s JSON schemas (schemas.lock.yaml)",
    ]
    schemas = tmp_path / "tools" / "schemas"
    assert (schemas / ".crds.sha256").is_file() and (schemas / ".k8s.sha256").is_file()
    assert install.install(["schemas-crds", "schemas-k8s"], jobs=1) == []
    assert made == ["crds", "k8s"]
    # kubernetes-validate's pin is part of the k8s step's stamp
    monkeypatch.setattr(install, "_kubernetes_validate", lambda: "kubernetes-validate==9")
    assert install.install(["schemas-k8s"]) == ["schemas-k8s"] and made[-1] == "k8s"


def test_a_failed_schema_build_is_a_tool_failure_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "tools"))

    def broken(lock: object, out: Path) -> list[str]:
        raise crdschemas.SchemaBuildError("no schema for expected kinds: x/v1 Y")

    monkeypatch.setattr(crdschemas, "build_crds", broken)
    with pytest.raises(errors.ToolFailed, match="no schema for expected kinds") as info:
        install.install(["schemas-crds"])
    assert info.value.argv == ("schemas-crds",)
    assert (info.value.returncode, info.value.stdout) == (1, b"")
    assert info.value.stderr == b"no schema for expected kinds: x/v1 Y"
    assert not (tmp_path / "tools" / "schemas" / ".crds.sha256").exists()


def test_build_missing_builds_the_set_only_when_a_part_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[list[str], object]] = []
    monkeypatch.setattr(
        install, "install", lambda names, **kw: calls.append((list(names), kw.get("say")))
    )
    monkeypatch.setattr(install, "missing", lambda names: [])
    assert install.build_missing(("kwok",)) == [] and calls == []
    monkeypatch.setattr(install, "missing", lambda names: ["kwok"])
    say = print
    assert install.build_missing(("kwok", "etcd"), say) == ["kwok"]
    assert calls == [(["cluster"], say)]


def test_build_missing_builds_the_plane_of_each_missing_minor_and_leaves_system_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(install, "install", lambda names, **kw: calls.append(list(names)))
    absent = ["kube-apiserver-1.34", "etcd-1.37", "kwok", "openssl", "etcd-1.34"]
    monkeypatch.setattr(install, "missing", lambda names: absent)
    assert install.build_missing(("x",)) == absent
    assert calls == [["cluster", "cluster-1.34", "cluster-1.37"]]


def test_each_minor_has_its_own_set_of_its_own_tools_and_all_leaves_them_out() -> None:
    assert install.resolve(["cluster-1.34"]) == [
        "kube-apiserver-1.34",
        "kube-controller-manager-1.34",
        "kube-scheduler-1.34",
        "kubectl-1.34",
        "etcd-1.34",
    ]
    assert not [s for s in install.resolve(["all"]) if s.endswith(("-1.34", "-1.35", "-1.37"))]
    table = install.builds()
    assert (table["kube-apiserver-1.34"].folder, table["etcd-1.37"].folder) == (
        "controlplane-1.34",
        "controlplane-1.37",
    )
    assert table["kube-apiserver-1.34"].package == "k8s.io/kubernetes/cmd/kube-apiserver"
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in table["kubectl-1.34"].ldflags
    assert "-X k8s.io/client-go/pkg/version.buildDate=2026-02-10T12:53:36Z" in (
        table["kube-apiserver-1.34"].ldflags
    )
    assert "-X k8s.io/client-go/pkg/version.gitMinor=37" in table["kubectl-1.37"].ldflags
    assert "gitVersion=v1.36.3" in table["kube-apiserver"].ldflags
    assert table["etcd-1.35"].package == "go.etcd.io/etcd/server/v3"
    with pytest.raises(ValueError, match="cluster-1.34"):
        install.resolve(["cluster-1.33"])


def test_kubernetes_validates_version_is_read_from_its_installed_metadata() -> None:
    assert install._kubernetes_validate() == "kubernetes-validate==1.37.0"


def test_a_tool_is_built_with_its_command_line_beside_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`go build -o <bin>/.<tool>.*/<tool>` then a rename: never half a binary in place; cgo off
    and the module graph read-only, as every Go tool here is built."""
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "tools"))
    bin_dir = tmp_path / "tools" / "bin"
    seen: list[tuple[list[str], dict[str, object]]] = []

    def go(tool: str, argv: list[str], **kw: object) -> None:
        seen.append((argv, kw))
        partial = Path(argv[2])
        assert partial.parent.parent == bin_dir and partial.parent.name.startswith(".kwok.")
        partial.write_text("binary")

    monkeypatch.setattr(install, "run", go)
    assert install.install(["kwok"]) == ["kwok"]
    [(argv, kw)] = seen
    assert argv[:2] == ["build", "-o"]
    assert argv[3:] == [
        "-trimpath",
        "-buildvcs=false",
        "-ldflags",
        "-s -w",
        "sigs.k8s.io/kwok/cmd/kwok",
    ]
    assert kw["cwd"] == registry.GOTOOLS / "kwok"
    assert kw["timeout"] == 3600.0  # an hour: a cold build of the control plane takes minutes
    env = kw["env"]
    assert isinstance(env, dict) and env["CGO_ENABLED"] == "0" and env["GOFLAGS"] == "-mod=readonly"
    assert (bin_dir / "kwok").read_text() == "binary"
    assert sorted(p.name for p in bin_dir.iterdir()) == [".kwok.sha256", "kwok"]


def test_chains_run_side_by_side_up_to_jobs_and_every_result_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workers: list[int] = []
    real = ThreadPoolExecutor

    def pool(max_workers: int) -> object:
        workers.append(max_workers)
        return real(max_workers=max_workers)

    monkeypatch.setattr(install, "ThreadPoolExecutor", pool)
    monkeypatch.setattr(install, "_build_tool", lambda build, go, say: build.tool != "helm")
    assert install.install(["kwok", "helm", "actionlint"]) == ["kwok", "actionlint"]
    install.install(["kwok"], jobs=1)
    install.install(["kwok"], jobs=0)
    assert workers == [4, 1, 1]

    def fails(build: install.Build, go: str, say: object) -> bool:
        if build.tool == "helm":
            raise errors.ToolFailed(["go", "build"], 1, b"", b"broken")
        return True

    monkeypatch.setattr(install, "_build_tool", fails)
    with pytest.raises(errors.ToolFailed, match="broken"):
        install.install(["kwok", "helm", "actionlint"])


def test_an_absent_kubernetes_validate_is_said_in_the_stamp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def absent(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", absent)
    assert install._kubernetes_validate() == "kubernetes-validate (not installed)"


def test_each_schema_step_builds_its_own_set_from_its_own_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Called directly (the pool's threads are not where the inputs are decided): the CRD step
    is keyed on the controller-gen module too, the built-in step on kubernetes-validate."""
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "tools"))
    keyed: list[tuple[list[Path], list[str]]] = []
    real_digest = fresh.digest

    def digest(inputs: list[Path], argv: list[str], go: str) -> str:
        keyed.append((list(inputs), list(argv)))
        return real_digest(inputs, argv, go)

    monkeypatch.setattr(fresh, "digest", digest)
    made: list[tuple[str, Path]] = []
    monkeypatch.setattr(crdschemas, "build_crds", lambda lock, out: made.append(("crds", out)))
    monkeypatch.setattr(crdschemas, "build_k8s", lambda lock, out: made.append(("k8s", out)))
    assert install._build_schemas("schemas-crds", "go1", lambda _: None) is True
    assert install._build_schemas("schemas-k8s", "go1", lambda _: None) is True
    schemas = tmp_path / "tools" / "schemas"
    assert made == [("crds", schemas / "crds"), ("k8s", schemas / "k8s")]
    lock, code = crdschemas.DEFAULT_LOCK, Path(crdschemas.__file__)
    assert keyed == [
        ([lock, code, registry.GOTOOLS / "crdgen"], ["crds"]),
        ([lock, code], ["k8s", "kubernetes-validate==1.37.0"]),
    ]


def test_the_users_goflags_are_kept_before_mod_readonly_and_a_change_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI that sets GOFLAGS=-modcacherw keeps it (its module cache stays removable); the go
    command applies GOFLAGS in order, so the -mod=readonly put last wins. Other flags may change
    the binary: changing them builds again, and no GOFLAGS keeps the stamp it always had."""
    monkeypatch.setenv("ACCEL_GITOPS_TOOLS_DIR", str(tmp_path))
    (tmp_path / "bin").mkdir()
    seen: list[str] = []

    def go(_cmd: str, argv: list[str], **kwargs: Any) -> None:
        seen.append(kwargs["env"]["GOFLAGS"])
        Path(argv[argv.index("-o") + 1]).write_text("binary")

    monkeypatch.setattr(install, "run", go)
    build = install.builds()["kustomize"]
    monkeypatch.setenv("GOFLAGS", "-modcacherw -p=1")
    assert install._build_tool(build, "go1.26.8", print) is True
    assert install._build_tool(build, "go1.26.8", print) is False
    monkeypatch.setenv("GOFLAGS", "-modcacherw")
    assert install._build_tool(build, "go1.26.8", print) is True
    monkeypatch.delenv("GOFLAGS")
    assert install._build_tool(build, "go1.26.8", print) is True
    assert install._build_tool(build, "go1.26.8", print) is False
    assert seen == ["-modcacherw -p=1 -mod=readonly", "-modcacherw -mod=readonly", "-mod=readonly"]
    stamp = (tmp_path / "bin" / ".kustomize.sha256").read_text().strip()
    assert stamp == fresh.digest([registry.GOTOOLS / "kustomize"], build.argv, "go1.26.8")
