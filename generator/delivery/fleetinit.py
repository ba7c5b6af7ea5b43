"""`accel-gitops init DIR`: a fleet repository to start from.

It writes a minimal values tree (one vendor, one team, two environments, each file saying what it
is for), the JSON Schemas editors validate those files with, a ``.gitignore`` for the caches, a
pre-commit configuration, the requirements file that pins accel-gitops, the pull-request and
publish workflows with the reusable workflow they call, and a README; then ``git init`` when the
folder is not in a repository yet. Nothing that exists is overwritten.

The files are this package's data (``scaffold/``): the workflows and configuration are copied as
they are; only human text with a name in it (README, fleet.yaml, the requirements file) is a
jinja2 template.

CI is one forge's: `--ci github` (the default) writes the GitHub workflows, `--ci gitlab` the
GitLab pipeline (`.gitlab-ci.yml`) doing the same jobs. A repository lives on one forge, and a
second forge's file would be a copy nobody runs that drifts from the one that runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import jinja2

from generator import __version__
from generator.delivery.git import git
from generator.errors import UsageError
from generator.values import schema as values_schema

SCAFFOLD = "scaffold"
# Data files are stored without their leading dot (packaging tools skip dotfiles by default).
_DOTTED = {"gitignore": ".gitignore", "pre-commit-config.yaml": ".pre-commit-config.yaml"}
_DOTTED_DIRS = {"github": ".github"}
# GitLab reads its pipeline at the repository's top: the scaffold keeps it in a folder of its own.
_MOVED = {
    "gitlab/gitlab-ci.yml": ".gitlab-ci.yml",
    "gitlab/accel-gitops-validate.yml": ".gitlab/accel-gitops-validate.yml",
}
REQUIREMENTS = "requirements-accel-gitops.txt"
# Each forge's CI files, by the scaffold folder that holds them; `init` writes one forge's.
CI_FOLDERS = {"github": "github/", "gitlab": "gitlab/"}
DEFAULT_CI = "github"


@dataclass(frozen=True)
class Scaffold:
    """What `init` was asked for."""

    dest: Path
    name: str
    repo_url: str
    requirement: str
    ci: str = DEFAULT_CI  # a key of CI_FOLDERS


def default_name(dest: Path) -> str:
    """The fleet's name from the folder's: a DNS label (lowercase, digits, dashes)."""
    name = re.sub(r"[^a-z0-9-]+", "-", dest.resolve().name.lower()).strip("-")[:63].strip("-")
    return name or "fleet"


def _target(rel: str) -> str:
    if rel in _MOVED:
        return _MOVED[rel]
    parts = rel.split("/")
    parts[0] = _DOTTED_DIRS.get(parts[0], parts[0])
    parts[-1] = _DOTTED.get(parts[-1], parts[-1])
    joined = "/".join(parts)
    return joined.removesuffix(".j2")


def _sources() -> dict[str, str]:
    """Relative target path -> file text, for every file of the scaffold (templates rendered
    later)."""
    root = resources.files("generator.delivery").joinpath(SCAFFOLD)
    found: dict[str, str] = {}
    pending = [(root, "")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            rel = f"{prefix}{entry.name}"
            if entry.is_dir():
                pending.append((entry, rel + "/"))
            elif entry.is_file():
                found[rel] = entry.read_text(encoding="utf-8")
    return dict(sorted(found.items()))


def files(spec: Scaffold) -> dict[str, str]:
    """Every file `init` writes, by path relative to the destination."""
    env = jinja2.Environment(
        keep_trailing_newline=True, autoescape=False, undefined=jinja2.StrictUndefined
    )
    if spec.ci not in CI_FOLDERS:
        raise UsageError(f"--ci {spec.ci!r}: choose one of {', '.join(sorted(CI_FOLDERS))}")
    context = {
        "name": spec.name,
        "repo_url": spec.repo_url,
        "requirement": spec.requirement,
        "ci": spec.ci,
    }
    others = tuple(folder for ci, folder in CI_FOLDERS.items() if ci != spec.ci)
    out: dict[str, str] = {}
    for rel, text in _sources().items():
        if rel.startswith(others):
            continue
        out[_target(rel)] = env.from_string(text).render(context) if rel.endswith(".j2") else text
    for kind in values_schema.USER_KINDS:
        out[f"schemas/{kind}.schema.json"] = values_schema.schema_text(kind)
    return dict(sorted(out.items()))


def init(spec: Scaffold) -> list[str]:
    """Write the scaffold into spec.dest; the paths written. UsageError (and nothing written)
    when any of them exists."""
    planned = files(spec)
    clash = [rel for rel in planned if (spec.dest / rel).exists()]
    if clash:
        raise UsageError(
            f"{spec.dest} already has {', '.join(clash[:5])}"
            + (f" and {len(clash) - 5} more" if len(clash) > 5 else "")
            + ": init writes a new fleet repository and overwrites nothing; choose an empty folder"
        )
    for rel, text in planned.items():
        path = spec.dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    inside = git(["rev-parse", "--is-inside-work-tree"], spec.dest, check=False)
    if inside.returncode != 0:
        git(["init", "-q", "-b", "main"], spec.dest)
    return list(planned)


def default_requirement() -> str:
    """This accel-gitops's own version, as a pip requirement."""
    return f"accel-gitops=={__version__}"
