"""The tool as a platform team installs it: the built wheel in a fresh virtualenv (no editable
install, no checkout on the path), a fleet repository started by `accel-gitops init`, and the
commands its README and docs/adopting.md give, down to publishing to a bare remote.

The fresh virtualenv gets the wheel alone (`pip install --no-deps --no-index`); its dependencies
are read from the test's own virtualenv through a path file, so the test needs no package index,
and `pip check` proves the wheel's requirements are met. The pinned tools come from the user
cache: the clone's `.tools` linked there, so `tools install` must find every one of them fresh
by content (built elsewhere, from the package's own copy of the Go modules).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from generator.toolchain import install
from tests import repos
from tests.fixtures import ROOT, unpinned

DEV_VENV = Path(sys.executable).parent


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    home: Path
    """XDG_CACHE_HOME, PRE_COMMIT_HOME and the like, inside the test's folder."""

    def env(self) -> dict[str, str]:
        go = shutil.which("go") or "/usr/local/go/bin/go"
        path = [str(self.venv / "bin"), str(Path(go).parent), "/usr/bin", "/bin"]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_GITOPS", "PYTHON"))}
        return {
            **env,
            **repos.IDENTITY,
            "PATH": os.pathsep.join(path),
            "XDG_CACHE_HOME": str(self.home / "cache"),
            "PRE_COMMIT_HOME": str(self.home / "pre-commit"),
        }

    def run(self, *argv: str, cwd: Path, code: int = 0) -> str:
        proc = subprocess.run(
            argv, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=600
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == code, f"{' '.join(argv)} exited {proc.returncode}:\n{out}"
        return out


def _sources(dest: Path) -> Path:
    """The package's files as a clone has them (tracked and new, never ignored ones)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "generator"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for rel in [p.decode() for p in listed if p] + ["pyproject.toml", "README.md"]:
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("installed")
    src = _sources(base / "src")
    dist = base / "dist"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip_wheel, "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = dist.glob("accel_gitops-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The dependencies (not the editable package: a plain path entry runs no .pth of its own).
    (Path(purelib) / "dev-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return Installed(wheel=wheel, venv=venv, home=base / "home")


def test_the_wheel_carries_the_catalog_templates_schemas_lock_and_tool_modules(
    installed: Installed,
) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for folder in {b.folder for b in install.builds().values()} | {"crdgen"}:
        assert f"generator/toolchain/gotools/{folder}/go.mod" in names, folder
        assert f"generator/toolchain/gotools/{folder}/go.sum" in names, folder
    for rel in (
        "generator/toolchain/gotools/schemas.lock.yaml",
        "generator/toolchain/gotools/kbuild/main.go",
        "generator/values/catalog/nvidia.yaml",
        "generator/delivery/templates/commit.txt.j2",
        "generator/delivery/scaffold/github/workflows/accel-gitops.yaml",
        "generator/delivery/scaffold/gitignore",
        "generator/reporters/templates/diff.md.j2",
    ):
        assert rel in names, rel
    assert not [n for n in names if n.startswith(("tests/", "values/", "base/", "tools/"))]


def test_from_init_to_publish_with_the_installed_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    run = installed.run
    # The package is the installed one, its requirements met, its command on PATH.
    where = run("python", "-c", "import generator; print(generator.__file__)", cwd=tmp_path)
    assert where.startswith(str(installed.venv)), where
    run("python", "-m", "pip", "check", cwd=tmp_path)
    assert run("accel-gitops", "--version", cwd=tmp_path).strip() == "accel-gitops 0.1.0"

    # The pinned tools: the clone's builds linked into the user cache are fresh by content.
    cache = installed.home / "cache" / "accel-gitops" / "tools"
    (cache / "bin").mkdir(parents=True)
    for name in install.resolve(["validate"]):
        if name in install.SCHEMAS:
            continue
        for file in (name, f".{name}.sha256"):
            os.link(ROOT / ".tools/bin" / file, cache / "bin" / file)
    shutil.copytree(ROOT / ".tools/schemas", cache / "schemas", copy_function=os.link)
    out = run("accel-gitops", "tools", "install", cwd=tmp_path)
    assert out.strip() == f"tools: 0 built, 13 already up to date, in {cache}"
    doctor = run("accel-gitops", "doctor", cwd=tmp_path)
    assert re.search(
        rf"^kustomize +ok +v5\.8\.1  in the user cache \(\$XDG_CACHE_HOME or ~/\.cache\): "
        rf"{re.escape(str(cache / 'bin'))}  from ",
        doctor,
        re.M,
    ), doctor
    assert re.search(
        r"^kwok +not built +build it with accel-gitops tools install --only cluster ", doctor, re.M
    )
    # what only a clone of accel-gitops runs has no row here
    rows = {line.split()[0] for line in doctor.splitlines() if line.strip()}
    assert not rows & {"actionlint", "podsecurity", "make"}
    assert {"kustomize", "go", "git", "kwok"} <= rows

    # A fleet repository from init: render, validate, commit.
    fleet = tmp_path / "acme"
    run("accel-gitops", "init", str(fleet), cwd=tmp_path)
    assert run("accel-gitops", "render", cwd=fleet).startswith("rendered 12 bases and 10 units")
    out = run("accel-gitops", "validate", cwd=fleet)
    assert "validate: 0 error(s), 0 warning(s)" in out, out
    run("git", "add", "-A", cwd=fleet)
    run("git", "commit", "-q", "-m", "start the fleet", cwd=fleet)
    assert run("git", "status", "--porcelain", cwd=fleet) == ""  # the caches are ignored

    # pre-commit's own code runs the scaffold's hooks and leaves the repository clean.
    pre_commit = str(DEV_VENV / "pre-commit")
    out = run(pre_commit, "run", "--all-files", "--color", "never", cwd=fleet)
    assert re.search(r"^accel-gitops check \(values\)\.+Passed$", out, re.M), out
    assert re.search(r"^accel-gitops render --check\.+Passed$", out, re.M), out
    assert run("git", "status", "--porcelain", cwd=fleet) == ""

    # An edit: render --check names the command to run, diff shows it field by field.
    team = fleet / "values/teams/team-a.yaml"
    team.write_text(team.read_text().replace("nvidia: 4", "nvidia: 6"))
    out = run("accel-gitops", "render", "--check", cwd=fleet, code=1)
    assert "run `accel-gitops render` and commit the result" in out
    run("accel-gitops", "render", cwd=fleet)
    out = run("accel-gitops", "diff", "--base", "main", cwd=fleet)
    assert '-     spec.hard["requests.nvidia.com/gpu"]: "4"' in out
    assert '+     spec.hard["requests.nvidia.com/gpu"]: "6"' in out
    run("git", "commit", "-q", "-am", "team-a: 6 GPUs", cwd=fleet)

    # publish to a bare remote: the rendered tree, and no local path in the message.
    remote = tmp_path / "gitops.git"
    run("git", "init", "-q", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    run("accel-gitops", "publish", "--repo", str(remote), "--branch", "main", cwd=fleet)
    files = run("git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main", cwd=fleet)
    assert "overlays/prod/team-team-a/kustomization.yaml" in files.splitlines()
    body = run("git", "--git-dir", str(remote), "log", "-1", "--format=%B", "main", cwd=fleet)
    assert "from acme (a local repository) at" in body and str(tmp_path) not in body

    # the scaffold's workflows call only pinned actions
    assert unpinned(*sorted((fleet / ".github/workflows").glob("*.yaml"))) == []
