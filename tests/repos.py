"""Real git repositories for the tests: a fleet repository in tmp_path, commits, bare remotes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **IDENTITY},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout.strip()


def init(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    return path


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def bare(path: Path, branch: str = "main") -> Path:
    """A bare repository with one commit on `branch` (a GitOps repository as a remote)."""
    seed = init(path.parent / (path.name + "-seed"), branch)
    (seed / "README.md").write_text("GitOps repository\n")
    commit_all(seed, "initial")
    git(path.parent, "clone", "-q", "--bare", str(seed), str(path))
    return path


def log(repo: Path, ref: str = "HEAD") -> list[str]:
    return git(repo, "log", "--format=%s", ref).splitlines()
