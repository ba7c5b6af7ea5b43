"""pre-commit: the hooks a fleet repository uses (.pre-commit-hooks.yaml) and this repository's
own configuration, checked with pre-commit's own schema code and run by pre-commit itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from pre_commit.clientlib import load_config, load_manifest

from tests import repos
from tests.fixtures import ROOT

VENV_BIN = Path(sys.executable).parent


def test_manifest_and_config_pass_pre_commits_schema() -> None:
    hooks = {h["id"]: h for h in load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))}
    assert sorted(hooks) == ["accel-gitops-render-check", "accel-gitops-values"]
    assert hooks["accel-gitops-values"]["entry"] == "accel-gitops check"
    assert hooks["accel-gitops-render-check"]["entry"] == "accel-gitops render --check"
    assert all(h["language"] == "python" and h["pass_filenames"] is False for h in hooks.values())
    config = load_config(str(ROOT / ".pre-commit-config.yaml"))
    local = [h["id"] for r in config["repos"] for h in r["hooks"]]
    assert local == ["ruff", "ruff-format", "mypy", "actionlint", "render-check"]


def _fleet_repo(values_dir: Path) -> Path:
    """A fleet repository using the exported hooks. pre-commit would install this package in a
    virtualenv of its own for `language: python`; here the hooks run the same console script
    from the test's virtualenv (a local copy of each hook), so no package index is needed."""
    repo = values_dir.parent
    manifest: list[dict[str, Any]] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    hooks = []
    for hook in manifest:
        local = dict(hook, language="unsupported")
        local["entry"] = str(VENV_BIN / hook["entry"])
        hooks.append(local)
    (repo / ".pre-commit-config.yaml").write_text(
        yaml.safe_dump({"repos": [{"repo": "local", "hooks": hooks}]})
    )
    repos.init(repo)
    return repo


def _pre_commit(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **repos.IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env["PATH"] = f"{VENV_BIN}:{env['PATH']}"
    return subprocess.run(
        [str(VENV_BIN / "pre-commit"), "run", "--all-files", "--color", "never"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_fleet_hooks_pass_then_catch_stale_output_and_bad_values(
    values_dir: Path, tmp_path: Path
) -> None:
    repo = _fleet_repo(values_dir)
    subprocess.run(
        [str(VENV_BIN / "accel-gitops"), "render"], cwd=repo, check=True, capture_output=True
    )
    repos.git(repo, "add", "-A")
    proc = _pre_commit(repo, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "accel-gitops check (values)" in proc.stdout and "Passed" in proc.stdout

    # A values edit without a render: the committed output is stale.
    team = values_dir / "teams/ml-team.yaml"
    team.write_text(team.read_text().replace("nvidia: 8", "nvidia: 6"))
    repos.git(repo, "add", "-A")
    proc = _pre_commit(repo, tmp_path)
    assert proc.returncode == 1
    assert "changed: base/teams/ml-team/resourcequota-ml-team-accelerators.yaml" in proc.stdout

    # A values error: both hooks name the file and line.
    team.write_text("quota:\n  nvidia: many\n")
    repos.git(repo, "add", "-A")
    proc = _pre_commit(repo, tmp_path)
    assert proc.returncode == 1
    assert "values/teams/ml-team.yaml:2:11: VAL001" in proc.stdout
