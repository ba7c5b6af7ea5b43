"""`render.py publish`: render and validate the values, then commit the rendered tree to a
branch of the GitOps repository and push it.

- Nothing is pushed unless the values load, every check passes and `validate` (its public
  function: kustomize, kubeconform, promtool, policy) reports no error.
- One commit per publish, its message naming the source commit and the units that changed;
  the same input twice makes no commit (the tree is already there).
- A push rejected because the branch moved is retried on the new head, at most `retries` times:
  the tree is written again and the delete guard runs again against what is there now.
- Delete guard: a unit that would lose more than `max_delete_share` of its objects, or any
  Namespace, is refused unless `allow_delete`.
"""

from __future__ import annotations

import functools
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from generator import CONSOLE, Program, __version__
from generator.delivery import git as gitutil
from generator.delivery.diff import TreeDiff, tree_diff
from generator.errors import FindingsError, GeneratorError, UsageError
from generator.findings import CodeInfo, Finding, Location, Severity
from generator.render.layout import render_tree
from generator.render.stage import load_and_check
from generator.render.writer import read_tree, write_tree
from generator.vocab.labels import SOURCE_ANNOTATION

DEFAULT_IDENTITY = ("accel-gitops", "accel-gitops@localhost")
MAX_UNITS_IN_MESSAGE = 100


@dataclass(frozen=True)
class PublishOptions:
    values_dir: Path
    repo: str  # path or URL of the GitOps repository
    branch: str
    path: str | None = None  # folder in the GitOps repository; default: fleet.yaml git.path
    message: str | None = None  # the commit's subject line
    allow_delete: bool = False
    max_delete_share: float = 0.5
    retries: int = 3
    program: Program = CONSOLE  # how the user runs this program, for the hints that name it


@dataclass
class PublishResult:
    commit: str | None  # the pushed commit; None when the branch already had this render
    source: str  # the source commit
    units: list[str] = field(default_factory=list)  # changed units
    attempts: int = 1
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # warnings


# What publish asks of the tree it is about to push: the findings of a check of that tree laid
# out in a folder (the CLI passes validate's, which checks a tree on disk as Argo CD reads it).
# Passed in rather than imported, so delivery and validate stay independent of each other.
Check = Callable[[Path], list[Finding]]


def publish(opts: PublishOptions, check: Check) -> PublishResult:
    checked = load_and_check(opts.values_dir)  # its errors stop the publish here
    loaded = checked.values
    values_dir = opts.values_dir.resolve()
    source_repo = gitutil.toplevel(values_dir)
    rendered = render_tree(loaded, builds=checked.builds)
    fleet_path = loaded.base.fleet.repo_path.strip("/")
    path = fleet_path if opts.path is None else opts.path.strip("/")
    if path != fleet_path:
        raise UsageError(
            f"--path {opts.path!r} but values/fleet.yaml sets git.path {fleet_path!r}: the Argo "
            "CD Applications would look for the units elsewhere; set git.path instead"
        )
    commit = _source_commit(source_repo, values_dir)
    # validate checks the values again and reports their warnings with its own findings: they are
    # the whole list (adding load_and_check's warnings printed each of them twice).
    findings = _checked(rendered.tree, check)
    notes = []
    if loaded.base.fleet.repo_url not in (opts.repo, opts.repo.removesuffix("/")):
        notes.append(
            f"note: the Argo CD Applications sync from {loaded.base.fleet.repo_url} "
            "(values/fleet.yaml git.repoURL), not from the repository published to"
        )
    # A local path is made absolute: git runs in a temporary folder.
    remote = str(Path(opts.repo).resolve()) if Path(opts.repo).exists() else opts.repo
    with tempfile.TemporaryDirectory(prefix="accel-publish-") as tmp:
        clone = _checkout(remote, opts.branch, Path(tmp) / "gitops")
        for attempt in range(1, opts.retries + 2):
            base = _head(clone)
            target = clone / path if path else clone
            changes = tree_diff(read_tree(target), rendered)
            _guard(changes, opts)
            write_tree(rendered.tree, target)
            gitutil.git(["add", "--all", "--", path or "."], clone)
            if not gitutil.git(["status", "--porcelain"], clone).stdout.strip():
                return PublishResult(None, commit, [], attempt, notes, findings)
            message = _message(opts, source_repo, commit, changes.changed_units)
            gitutil.git(
                [*_identity(clone), "commit", "--quiet", "--file", "-"], clone, input=message
            )
            pushed = gitutil.git(
                ["push", "--porcelain", "origin", f"HEAD:refs/heads/{opts.branch}"],
                clone,
                check=False,
            )
            if pushed.returncode == 0:
                head = gitutil.out(["rev-parse", "HEAD"], clone)
                return PublishResult(head, commit, changes.changed_units, attempt, notes, findings)
            moved = _fetch(clone, opts.branch)
            if moved is None or moved == base:
                raise gitutil.GitError(
                    ["push", "origin", opts.branch],
                    pushed.returncode,
                    pushed.stderr + pushed.stdout,
                )
            notes.append(
                f"the branch {opts.branch} moved to {moved[:12]} during the publish; "
                f"rendering onto it again (attempt {attempt + 1} of {opts.retries + 1})"
            )
            gitutil.git(["reset", "--quiet", "--hard", moved], clone)
            gitutil.git(["clean", "-qfdx"], clone)
    raise GeneratorError(
        f"the branch {opts.branch} of {opts.repo} moved during each of {opts.retries + 1} "
        "attempts; nothing was pushed: publish again"
    )


def _source_commit(repo: Path, values_dir: Path) -> str:
    dirty = gitutil.out(["status", "--porcelain", "--", str(values_dir)], repo)
    if dirty:
        raise UsageError(
            f"the values in {values_dir} have uncommitted changes; commit them first (a publish "
            "names the source commit it was rendered from)"
        )
    proc = gitutil.git(["rev-parse", "--verify", "--quiet", "HEAD"], repo, check=False)
    if proc.returncode != 0:
        raise UsageError(f"{repo} has no commit yet; commit the values first")
    return proc.stdout.strip()


def _checked(tree: Mapping[str, str], check: Check) -> list[Finding]:
    """The check's findings on the tree about to be pushed, laid out in a temporary folder; its
    errors stop the publish."""
    with tempfile.TemporaryDirectory(prefix="accel-publish-validate-") as tmp:
        write_tree(tree, Path(tmp))
        findings = check(Path(tmp))
    if any(f.severity is Severity.ERROR for f in findings):
        raise FindingsError(findings)
    return findings


def _checkout(repo: str, branch: str, dest: Path) -> Path:
    """A clone of `repo` on `branch`, or an empty repository that will create the branch."""
    cwd = dest.parent
    heads = gitutil.git(["ls-remote", "--heads", repo, f"refs/heads/{branch}"], cwd, check=False)
    if heads.returncode != 0:
        raise UsageError(f"cannot read the GitOps repository {repo}: {heads.stderr.strip()}")
    if heads.stdout.strip():
        gitutil.git(
            [
                "clone",
                "--quiet",
                "--no-tags",
                "--single-branch",
                "--depth",
                "1",
                "--branch",
                branch,
                repo,
                str(dest),
            ],
            cwd,
        )
    else:  # a new branch (or an empty repository): the first publish creates it
        dest.mkdir()
        gitutil.git(["init", "--quiet", "--initial-branch", branch], dest)
        gitutil.git(["remote", "add", "origin", repo], dest)
    return dest


def _head(clone: Path) -> str | None:
    proc = gitutil.git(["rev-parse", "--verify", "--quiet", "HEAD"], clone, check=False)
    return proc.stdout.strip() or None


def _fetch(clone: Path, branch: str) -> str | None:
    """The branch's head on the remote now, fetched into the clone (None if it has none)."""
    proc = gitutil.git(["fetch", "--quiet", "--depth", "1", "origin", branch], clone, check=False)
    if proc.returncode != 0:
        return None
    return gitutil.out(["rev-parse", "FETCH_HEAD"], clone)


def _identity(clone: Path) -> list[str]:
    """`-c user.name=... -c user.email=...` when git has no identity configured (the
    GIT_AUTHOR_* and GIT_COMMITTER_* variables still win)."""
    configured = gitutil.git(["config", "user.email"], clone, check=False).stdout.strip()
    if configured:
        return []
    name, email = DEFAULT_IDENTITY
    return ["-c", f"user.name={name}", "-c", f"user.email={email}"]


def _guard(changes: TreeDiff, opts: PublishOptions) -> None:
    if opts.allow_delete:
        return
    found: list[Finding] = []
    removed: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for obj in changes.objects:
        if obj.status == "removed":
            unit = f"overlays/{obj.env}/{obj.unit}"
            removed.setdefault(unit, []).append(obj.title)
            note = (obj.obj or {}).get("metadata", {}).get("annotations", {}) or {}
            sources.setdefault(unit, str(note.get(SOURCE_ANNOTATION, "")))
    for unit, titles in sorted(removed.items()):
        total = changes.old_counts.get(unit, 0)
        namespaces = [t for t in titles if t.startswith("Namespace ")]
        share = len(titles) / total if total else 0.0
        if not namespaces and share <= opts.max_delete_share:
            continue
        why = (
            f"deletes {', '.join(namespaces)}"
            if namespaces
            else f"deletes {len(titles)} of its {total} objects (more than "
            f"{opts.max_delete_share:.0%})"
        )
        shown = ", ".join(titles[:5]) + (f" and {len(titles) - 5} more" if len(titles) > 5 else "")
        found.append(
            Finding(
                "PUB001",
                f"publishing {unit} {why}: {shown}",
                _where(sources.get(unit, ""), unit),
                hint="if that is intended (a team or vendor removed on purpose), publish again "
                "with --allow-delete; otherwise restore the values. A team: disable it "
                "(enabled: false) before removing its file, or Argo CD leaves its objects "
                "behind (docs/argocd.md)",
            )
        )
    if found:
        raise FindingsError(found)


def _where(source: str, unit: str) -> Location:
    """The values file that made the deleted objects (their provenance annotation)."""
    first = source.split(",")[0].strip()
    return Location(first or unit)


_CREDENTIALS = re.compile(r"(?<=://)[^/@]+@")


# A remote git reaches over a network: scheme://..., or scp-like host:path.
_NETWORK_URL = re.compile(r"^(?!file:)(?:[a-z][a-z0-9+.-]*://|[^/:]+:)", re.I)


def _source_name(repo: Path) -> str:
    """The values repository as the GitOps repository's readers can find it: its origin URL
    without credentials; a repository with no origin, or a local one, by its folder's name (a
    path on the publishing machine means nothing to them, and says more than it should)."""
    proc = gitutil.git(["remote", "get-url", "origin"], repo, check=False)
    url = proc.stdout.strip() if proc.returncode == 0 else ""
    if _NETWORK_URL.match(url):
        return _CREDENTIALS.sub("", url)  # never put a token from a URL into a commit message
    local = Path(url.removeprefix("file://")) if url else repo
    return f"{local.name.removesuffix('.git') or repo.name} (a local repository)"


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("generator.delivery", "templates"),
        autoescape=False,  # a commit message is plain text, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("commit.txt.j2")


def _message(opts: PublishOptions, repo: Path, commit: str, units: list[str]) -> str:
    subject = (opts.message or "").strip()
    subject = subject or f"accel-gitops: render {commit[:12]} ({len(units)} units changed)"
    return _template().render(
        subject=subject,
        version=__version__,
        source=_source_name(repo),
        commit=commit,
        units=units,
        max_units=MAX_UNITS_IN_MESSAGE,
    )


# What `render.py publish` can report.
CODES = (
    CodeInfo(
        "PUB001",
        "publish",
        "error",
        "publishing would delete a unit's objects from the GitOps repository (--allow-delete)",
    ),
)
