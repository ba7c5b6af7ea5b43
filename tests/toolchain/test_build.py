"""simulate and validate --dry-run=server build the control plane on first use, saying so; an
installed package without the Makefile says what to run instead of failing on a missing tool."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from generator import toolchain
from generator.toolchain import process
from tests.fixtures import ROOT, cli, tree


def tools_without(tmp_path: Path, absent: set[str]) -> Path:
    """A tools dir with every built tool but `absent` (links to the real ones) and the schemas."""
    real = toolchain.tools_dir()
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
    monkeypatch.setenv(toolchain.ENV_TOOLS_DIR, str(tools_without(tmp_path, set())))
    assert toolchain.missing(toolchain.CONTROL_PLANE) == []
    assert toolchain.build_missing(toolchain.CONTROL_PLANE, "no-such-target") == []


def test_simulate_without_a_control_plane_or_makefile_says_what_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(toolchain.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kwok", "etcd"})))
    monkeypatch.setattr(process, "repo_root", lambda: tmp_path / "installed")  # no Makefile
    values = tree(tmp_path)
    code, out = cli("simulate", "--values", str(values))
    assert code == 2, out
    assert (
        "simulate: building etcd, kwok first (`make tools-cluster`, from the pinned Go modules)"
        in out
    )
    assert "error: etcd, kwok not found; install it with: make tools-cluster in a clone" in out


def test_dry_run_on_a_users_cluster_needs_only_kubectl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(toolchain.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kwok"})))
    monkeypatch.setattr(process, "repo_root", lambda: tmp_path / "installed")
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
    unbuilt = {*toolchain.CONTROL_PLANE, *toolchain.DEV_TOOLS}
    monkeypatch.setenv(toolchain.ENV_TOOLS_DIR, str(tools_without(tmp_path, unbuilt)))
    code, out = cli("doctor")
    assert code == 0, out
    assert re.search(
        r"^kwok +not built +build it with make tools-cluster \(simulate and validate "
        r"--dry-run=server build it on first use\)$",
        out,
        re.M,
    )
    assert re.search(r"^actionlint +not built +build it with make tools-dev ", out, re.M)
    assert re.search(r"^kbuild +ok ", out, re.M)
    assert "some tools are missing" not in out


def test_doctor_fails_when_a_tool_validate_runs_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(toolchain.ENV_TOOLS_DIR, str(tools_without(tmp_path, {"kueuecheck"})))
    code, out = cli("doctor")
    assert code == 2, out
    assert re.search(r"^kueuecheck +MISSING +pinned v0\.17\.0; install: make tools$", out, re.M)
    assert "some tools are missing or not at their pinned version: run `make tools`" in out


def test_make_demo_builds_what_validate_runs_and_nothing_of_the_control_plane() -> None:
    proc = subprocess.run(
        ["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    built = set(re.findall(r"-o \S*/\.tools/bin/([a-z-]+) ", proc.stdout))
    # Every tool a validate stage asks the version of (its cache salt), and kbuild's reference
    # binaries; none of the control plane or the test-only tools.
    assert built == {
        "kustomize",
        "kubeconform",
        "kbuild",
        "promtool",
        "nfd-rulecheck",
        "kueuecheck",
        "schedcheck",
        "helm",
    }
    assert not built & {*toolchain.CONTROL_PLANE, *toolchain.DEV_TOOLS}
    assert "crdschemas.py crds" in proc.stdout and "crdschemas.py k8s" in proc.stdout
