"""What a report was made from: the values tree's commit and the versions of the tools that made it.

No clock time: the same inputs give the same bytes, so a report can be compared between runs.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from generator.toolchain import errors, gobuild, process

# Python packages that shape the page (the generator itself, its templates and its charts).
PACKAGES = (("accel-gitops", "accel-gitops"), ("Jinja2", "jinja2"), ("Matplotlib", "matplotlib"))


@dataclass(frozen=True)
class Inputs:
    values: str  # the values folder as given
    commit: str  # full hash of HEAD, "" outside a git checkout
    commit_date: str  # committer date, ISO 8601
    dirty: bool  # the values folder differs from that commit
    tools: tuple[tuple[str, str], ...]  # (name, version)

    @property
    def short_commit(self) -> str:
        return self.commit[:12]

    def describe(self) -> str:
        if not self.commit:
            return f"{self.values} (not in a git checkout)"
        state = " with uncommitted changes" if self.dirty else ""
        return f"{self.values} at commit {self.short_commit} ({self.commit_date}){state}"


def _git(values_dir: Path, *args: str) -> str | None:
    try:
        proc = process.run("git", ["-C", str(values_dir), *args], timeout=30, check=False)
    except errors.ToolError:
        return None
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def tool_versions() -> tuple[tuple[str, str], ...]:
    out = [("Python", platform.python_version())]
    for name, dist in PACKAGES:
        try:
            out.append((name, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            out.append((name, "not installed as a package"))
    try:
        out.append(("git", gobuild.version("git")))
    except errors.ToolError:
        out.append(("git", "missing"))
    return tuple(out)


def gather(values_dir: Path) -> Inputs:
    commit = _git(values_dir, "rev-parse", "HEAD") or ""
    if not commit:
        return Inputs(str(values_dir), "", "", False, tool_versions())
    date = _git(values_dir, "log", "-1", "--format=%cI") or ""
    status = _git(values_dir, "status", "--porcelain", "--", ".")
    return Inputs(str(values_dir), commit, date, bool(status), tool_versions())
