"""`tools install` builds what each command needs and no more, content-stamped; simulate and
validate --dry-run=server build the control plane on first use, saying so."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from generator.toolchain import doctor, errors, install, registry
from generator.toolchain import install as tool_install
from generator.toolchain import registry as tool_registry
from tests.fixtures import FLEET, cli, tree


def tools_without(tmp_path: Path, absent: set[str]) -> Path:
    """A tools dir with every built tool but `absent` (links to the real ones) and the schemas."""
    real = tool_registry.tools_dir()
    tools = tmp_path / "tools"
    (tools / "bin").mkdir(parents=True)
    for binary in (real / "bin").iterdir():
        if binary.is_file() and not binary.name.startswith(".") and binary.name not in absent:
            (tools / "bin" / binary.name).symlink_to(binary)
    (tools / "schemas").symlink_to(real / "schemas")
    return tools


def test_nothing_is_built_when_the_control_plane_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tools_without(tmp_path, set())))
    assert tool_registry.missing(tool_registry.CONTROL_PLANE) == []
    assert tool_install.build_missing(tool_registry.CONTROL_PLANE) == []


def test_simulate_builds_a_missing_part_of_the_control_plane_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The build fails here (no Go on PATH), so the test shows what is said and tried, fast.
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kwok", "etcd"})))
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(registry, "_EXTRA_LOCATIONS", {})
    # A cluster of the default minor: its plane is the cluster set's.
    values = tree(
        tmp_path, fleet=FLEET.replace('kubernetesVersion: "1.33"', 'kubernetesVersion: "1.36"')
    )
    code, out = cli("simulate", "--values", str(values))
    assert code == 2, out
    assert (
        "simulate: building etcd, kwok first (`accel-gitops tools install --only cluster`, "
        "from the pinned Go modules)" in out
    )
    assert "error: go not found (looked in PATH); install it with: install Go >= 1.26.7" in out


def test_dry_run_on_a_users_cluster_needs_only_kubectl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kwok"})))
    values = tree(tmp_path)
    assert cli("render", "--values", str(values))[0] == 0
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: []\n", encoding="utf-8")
    code, out = cli(
        "validate", "--values", str(values), "--dry-run=server", "--kubeconfig", str(kubeconfig)
    )
    assert "building" not in out  # kwok is missing, but a user's cluster does not need it
    assert code == 2, out  # the empty kubeconfig names no cluster


def test_doctor_after_make_demo_says_what_is_not_built_yet_and_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What `make demo` leaves: every validate tool, no control plane, no test-only tools.
    unbuilt = {*tool_registry.CONTROL_PLANE, *tool_registry.DEV_TOOLS}
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tools_without(tmp_path, unbuilt)))
    code, out = cli("doctor")
    assert code == 0, out
    assert re.search(
        r"^kwok +not built +build it with accel-gitops tools install --only cluster "
        r"\(simulate and validate --dry-run=server build it on first use\)$",
        out,
        re.M,
    )
    assert re.search(
        r"^actionlint +not built +build it with accel-gitops tools install --only dev ", out, re.M
    )
    assert re.search(r"^kbuild +ok ", out, re.M)
    assert "some tools are missing" not in out


def test_doctor_fails_when_a_tool_validate_runs_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kueuecheck"})))
    code, out = cli("doctor")
    assert code == 2, out
    assert re.search(
        r"^kueuecheck +MISSING +pinned v0\.17\.0; install: accel-gitops tools install$", out, re.M
    )
    assert (
        "some tools are missing or not at their pinned version: run `accel-gitops tools install`"
        in out
    )


def test_the_default_set_is_what_validate_runs_and_nothing_of_the_control_plane() -> None:
    steps = install.resolve(["validate"])
    # Every tool a validate stage asks the version of (its cache salt), and kbuild's reference
    # binaries, and both schema sets; none of the control plane or the test-only tools.
    assert set(steps) == {
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
        "schemas-crds",
        "schemas-k8s",
    }
    assert not set(steps) & {*tool_registry.CONTROL_PLANE, *tool_registry.DEV_TOOLS}
    # every registered Go tool has a build, and every build a registered tool
    go_built = {name for name, tool in tool_registry.TOOLS.items() if tool.go_module}
    assert set(install.builds()) == go_built
    # `all` (make tools) is every tool but the control planes of the other minors.
    other_minors = {t for tools in install.PLANE_SETS.values() for t in tools}
    assert set(install.PLANE_SETS) == {"cluster-1.34", "cluster-1.35", "cluster-1.37"}
    assert set(install.resolve(["all"])) == (go_built - other_minors) | set(install.SCHEMAS)
    assert install.resolve(["kwok", "cluster", "kwok"]).count("kwok") == 1


def test_an_unknown_name_is_refused_with_the_choices(tmp_path: Path) -> None:
    code, out = cli("tools", "install", "--only", "validate,kustomise")
    assert code == 2, out
    assert (
        "error: unknown tool or set 'kustomise'; choose from: validate, cluster, dev, demo, all,"
        in out
    )


def test_a_fresh_tool_is_not_rebuilt_and_a_changed_input_rebuilds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stamp is the content of the module folder, the command line and the Go version; a
    tools dir copied elsewhere (other file times) is still fresh."""
    gotools = tmp_path / "gotools"
    shutil.copytree(registry.GOTOOLS / "podsecurity", gotools / "podsecurity")
    for plane in registry.PLANES.values():  # their ldflags
        shutil.copytree(registry.GOTOOLS / plane.folder, gotools / plane.folder)
    monkeypatch.setattr(install, "GOTOOLS", gotools)
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "tools"))
    said: list[str] = []
    assert install.install(["podsecurity"], say=said.append) == ["podsecurity"]
    assert said == ["building podsecurity (gotools/podsecurity/go.mod)"]
    binary = tmp_path / "tools" / "bin" / "podsecurity"
    assert binary.is_file() and os.access(binary, os.X_OK)
    assert install.install(["podsecurity"], say=said.append) == []
    os.utime(gotools / "podsecurity" / "main.go", (0, 0))  # a new file time is not a change
    assert install.install(["podsecurity"]) == []
    main = gotools / "podsecurity" / "main.go"
    main.write_text(main.read_text() + "\n// changed\n")
    assert install.install(["podsecurity"]) == ["podsecurity"]
    # a failed build leaves no stamp, so the next run builds again
    main.write_text(main.read_text() + "\nnot go\n")
    with pytest.raises(errors.ToolFailed):
        install.install(["podsecurity"])
    assert not (tmp_path / "tools" / "bin" / ".podsecurity.sha256").exists()


def test_an_upstream_tool_on_path_is_used_only_at_its_pin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tool_registry.tools_dir() / "bin"
    monkeypatch.setenv(tool_registry.ENV_TOOLS_DIR, str(tmp_path / "empty"))
    on_path = tmp_path / "path"
    on_path.mkdir()
    monkeypatch.setenv("PATH", str(on_path))
    (on_path / "kustomize").symlink_to(real / "kustomize")  # built from the pinned module
    (on_path / "kubeconform").symlink_to(real / "kustomize")  # another program by that name
    (on_path / "kbuild").symlink_to(real / "kbuild")  # a helper of ours: never from PATH
    assert tool_registry.find("kustomize") == on_path / "kustomize"
    assert tool_registry.find("kubeconform") is None
    assert tool_registry.find("kbuild") is None
    with pytest.raises(errors.ToolMissing, match=r"looked in .*empty/bin, PATH \(at v0\.7\.0\)"):
        tool_registry.require("kubeconform")
    status = {s.name: s for s in doctor.doctor()}["kustomize"]
    assert status.ok and status.found_in == f"PATH: {on_path}"
