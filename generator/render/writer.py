"""All-or-nothing, incremental output and drift detection for the rendered `base/` and `overlays/`.

`write_tree` writes only the files whose bytes change and removes only stale ones, as one change:

1. stage: every new or changed file is written under a staging folder beside the output
   (`.render-XXXX/new/...`), and every file about to be replaced or removed is hard-linked into
   `.render-XXXX/old/...` (a link, not a copy: the old bytes stay reachable after the rename);
2. journal: the list of changes is written to `.render-XXXX/journal.json` atomically (a temporary
   file, fsync, rename) before the first change to the output;
3. apply: renames from `new/` into place (a new folder moved whole), unlinks of stale files,
   removal of emptied folders;
4. commit: the journal is deleted, then the staging folder.

Any exception before the commit rolls the change back from the journal and the links. A process
killed mid-change (SIGKILL, power cut of the process) cannot roll back itself: the next
`write_tree` or `recover` finds the journal and restores the previous tree before anything else.
Staging folders without a journal are an interrupted stage and are simply removed.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from generator.errors import GeneratorError
from generator.render import texts, treeindex
from generator.render.treeindex import Sums
from generator.vocab.units import Tree

OUTPUT_DIRS = treeindex.OUTPUT_DIRS
STAGING_PREFIX = ".render-"
JOURNAL = "journal.json"
JOURNAL_FORMAT = 1

# The steps of one change, in order, for fault injection. Tests set ACCEL_GITOPS_FAULT to
# "STEP[:N]:raise" or "STEP[:N]:kill" to fail at the Nth time a step is reached (default 1st).
STEPS = ("staged", "linked", "journal", "replaced", "removed", "pruned", "created", "committed")
FAULT_ENV = "ACCEL_GITOPS_FAULT"


class OutputError(GeneratorError):
    """The output folder cannot be written (read-only, full, ...); exit code 2."""


@dataclass(frozen=True)
class Written:
    replaced: int = 0
    created: int = 0
    removed: int = 0
    recovered: str = ""  # what an interrupted earlier change needed, if anything


class _Faults:
    """Test-only fault injection (see FAULT_ENV); inert when the variable is unset."""

    def __init__(self) -> None:
        spec = os.environ.get(FAULT_ENV, "")
        parts = spec.split(":") if spec else []
        self.step = parts[0] if parts else ""
        self.nth = int(parts[1]) if len(parts) == 3 else 1
        self.action = parts[-1] if parts else ""
        self.seen: dict[str, int] = {}

    def hit(self, step: str) -> None:
        if step not in STEPS:
            raise ValueError(f"unknown output step {step!r}: add it to output.STEPS")
        self.seen[step] = self.seen.get(step, 0) + 1
        if step != self.step or self.seen[step] != self.nth:
            return
        if self.action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise OSError(errno.EIO, f"injected fault at step {step} #{self.nth}")


def _parents(rel: str) -> Iterable[str]:
    parts = rel.split("/")
    for i in range(1, len(parts)):
        yield "/".join(parts[:i])


def _depth_first(folders: Iterable[str]) -> list[str]:
    return sorted(folders, key=lambda d: (-d.count("/"), d))


def _fail(out: Path, exc: OSError, when: str) -> OutputError:
    what = exc.strerror or str(exc)
    where = f" ({exc.filename})" if exc.filename else ""
    hint = ""
    if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        hint = "; make it writable or render elsewhere with --out DIR"
    elif exc.errno == errno.ENOSPC:
        hint = "; free some space and render again"
    return OutputError(f"cannot write the output in {out}: {what}{where} {when}{hint}")


def write_tree(
    tree: Mapping[str, str],
    out: Path,
    index: Path | None = None,
    sums: Mapping[str, bytes] | None = None,
    walk: treeindex.Walk | None = None,
) -> Written:
    """Make `out`/base and `out`/overlays hold exactly `tree`, changing only what differs.
    `index` (treeindex.index_file): the files whose stat did not change since it was saved are
    not read again, and it is saved for the next run. `sums`: the digests of some of `tree`'s
    files (known_sums), which are then neither encoded nor hashed unless written."""
    sums = sums if sums is not None else {}
    try:
        out.mkdir(parents=True, exist_ok=True)
        recovered = recover(out)
        current = treeindex.scan(out, index, None if recovered else walk)
        replace = sorted(r for r in tree if r in current and not _holds(current, r, tree, sums))
    except OSError as exc:
        raise _fail(out, exc, "before anything was written; nothing was changed") from None
    create = sorted(r for r in tree if r not in current)
    remove = sorted(r for r in current if r not in tree)
    new = {rel: tree[rel].encode("utf-8") for rel in (*replace, *create)}
    written = frozenset((*replace, *create, *remove))
    # The folders a removal may empty, less those the tree keeps (worked out only then: every
    # path's folders, 36,000 at 20 x 500, when one team's edit removes nothing).
    emptied = {d for r in remove for d in _parents(r)}
    keep_dirs = {d for r in tree for d in _parents(r)} if emptied else set()
    rmdirs = _depth_first(emptied - keep_dirs - set(OUTPUT_DIRS))
    needed = {*OUTPUT_DIRS, *(d for r in create for d in _parents(r))}
    mkdirs = sorted(d for d in needed if not (out / d).is_dir())  # parents before children
    if not (replace or create or remove or mkdirs):
        treeindex.save(current, index)
        return Written(recovered=recovered)
    faults = _Faults()
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=out))
    except OSError as exc:
        raise _fail(out, exc, "before anything was written; nothing was changed") from None
    journal = {
        "format": JOURNAL_FORMAT,
        "replace": replace,
        "create": create,
        "remove": remove,
        "mkdirs": mkdirs,
        "rmdirs": rmdirs,
    }
    committed = False
    made: set[Path] = set()  # folders made in the staging folder (one mkdir each, not per file)
    try:
        for rel in (*replace, *create):
            target = staging / "new" / rel
            _mkdir(target.parent, made)
            target.write_bytes(new[rel])
            faults.hit("staged")
        for rel in (*replace, *remove):
            _mkdir((staging / "old" / rel).parent, made)
            _link(out / rel, staging / "old" / rel)
            faults.hit("linked")
        _write_journal(staging, journal)
        faults.hit("journal")
        for rel in replace:
            os.replace(staging / "new" / rel, out / rel)
            faults.hit("replaced")
        for rel in remove:
            os.unlink(out / rel)
            faults.hit("removed")
        for folder in rmdirs:
            os.rmdir(out / folder)
            faults.hit("pruned")
        # A new folder is moved in whole from the staging folder, with all it holds (one rename
        # instead of one per file, and no empty folder tree left to remove: a first render at
        # 20 x 500 spent 2.3 of 15 s making, renaming and removing 36,000 files' folders).
        inside: set[str] = set()  # the new folders moved in, and every folder below them
        for folder in mkdirs:  # parents before children
            if folder.rpartition("/")[0] in inside:
                inside.add(folder)
                continue
            staged = staging / "new" / folder
            if staged.is_dir():
                os.replace(staged, out / folder)
                inside.add(folder)
                faults.hit("created")
            else:  # an output folder nothing is created in
                (out / folder).mkdir(exist_ok=True)
        for rel in create:
            if rel.rpartition("/")[0] not in inside:
                os.replace(staging / "new" / rel, out / rel)
                faults.hit("created")
        os.unlink(staging / JOURNAL)  # the commit point: from here on the new tree stands
        committed = True
        faults.hit("committed")
    except BaseException as exc:
        if not committed:
            _roll_back(out, staging)
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError) and not committed:
            raise _fail(out, exc, "while writing; the previous output is restored") from None
        raise
    shutil.rmtree(staging, ignore_errors=True)
    treeindex.save(current, index, drop=written)
    return Written(len(replace), len(create), len(remove), recovered)


def _mkdir(folder: Path, made: set[Path]) -> None:
    if folder not in made:
        folder.mkdir(parents=True, exist_ok=True)
        made.add(folder)


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK):
            raise
        shutil.copy2(src, dst, follow_symlinks=False)  # a filesystem without hard links


def _write_journal(staging: Path, journal: dict[str, object]) -> None:
    tmp = staging / (JOURNAL + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(journal, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, staging / JOURNAL)
    fd = os.open(staging, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _roll_back(out: Path, staging: Path) -> int:
    """Undo a change from its journal; idempotent, so an interrupted roll-back can run again.

    Returns the number of files put back. Without a journal nothing was changed yet.
    """
    try:
        journal = json.loads((staging / JOURNAL).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0
    restored = 0
    for rel in journal["create"]:
        if (out / rel).is_dir() and not (out / rel).is_symlink():
            continue  # a create only makes files: a folder there is the user's (it made it fail)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(out / rel)
    for folder in _depth_first(journal["mkdirs"]):
        with contextlib.suppress(OSError):  # not empty (never ours) or already gone
            os.rmdir(out / folder)
    for rel in (*journal["replace"], *journal["remove"]):
        backup = staging / "old" / rel
        if os.path.lexists(backup):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(backup, out / rel)
            restored += 1
    os.unlink(staging / JOURNAL)
    return restored


def interrupted(out: Path) -> list[str]:
    """The staging folders an interrupted `write_tree` left with a journal (a change to roll back
    with `recover`); `render --check` reports them instead of touching the tree."""
    if not out.is_dir():
        return []
    return sorted(
        s.name for s in out.glob(STAGING_PREFIX + "*") if s.is_dir() and (s / JOURNAL).is_file()
    )


def recover(out: Path) -> str:
    """Finish what an interrupted `write_tree` left: roll back a journalled change, remove
    staging folders. Returns a sentence for the user, or "" when there was nothing to do."""
    if not out.is_dir():
        return ""
    notes = []
    for staging in sorted(out.glob(STAGING_PREFIX + "*")):
        if not staging.is_dir():
            continue
        if (staging / JOURNAL).is_file():
            restored = _roll_back(out, staging)
            notes.append(
                f"an interrupted render was rolled back ({restored} file(s) restored from "
                f"{staging.name}); the output is as it was before it"
            )
        shutil.rmtree(staging)
    if notes:
        return "; ".join(notes)
    return ""


def read_tree(out: Path) -> Tree:
    """Every file of `out`/base and `out`/overlays, read (treeindex.scan reads only those that
    changed, and only when asked)."""
    files = treeindex.scan(out, None)
    return {rel: files[rel] for rel in sorted(files)}


@dataclass
class Drift:
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # rendered, not committed
    stale: list[str] = field(default_factory=list)  # committed, no longer rendered
    diffs: dict[str, str] = field(default_factory=dict)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.stale)


def known_sums(
    tree: Mapping[str, str], rendered: Mapping[str, str], sums: Mapping[str, bytes]
) -> Sums:
    """The digests of `sums`, which are of `rendered`'s texts, that hold for `tree`: all when it
    is `rendered`, else those of the paths where `tree` holds the rendered text itself (the
    same object, which `rendered` holds read already; `render --env`'s tree holds other
    environments' committed texts, whatever their paths' rendered ones)."""
    if tree is rendered:
        return dict(sums)
    return {
        rel: d
        for rel, d in sums.items()
        # peek: a text `tree` holds unread (render --env's other environments) is not read here
        if (t := texts.peek(tree, rel)) is texts.peek(rendered, rel) and t is not None
    }


def same(actual: Mapping[str, str], rel: str, text: str) -> bool:
    """Whether `actual` holds `text` at `rel`; a scanned tree answers by digest, without reading
    a file its index knows."""
    if isinstance(actual, treeindex.Files):
        return actual.same(rel, text.encode("utf-8"))
    return actual[rel] == text


def _holds(
    actual: Mapping[str, str], rel: str, expected: Mapping[str, str], sums: Mapping[str, bytes]
) -> bool:
    """Whether `actual` holds `expected`'s text at `rel`: when `sums` has its digest, a scanned
    tree answers without the text being read (render/texts.py) or hashed."""
    known = sums.get(rel)
    if known is not None and isinstance(actual, treeindex.Files):
        return actual.digest(rel) == known
    return same(actual, rel, expected[rel])


def compare(
    expected: Mapping[str, str],
    actual: Mapping[str, str],
    context: int = 2,
    only: Callable[[str], bool] | None = None,
    sums: Mapping[str, bytes] | None = None,
) -> Drift:
    """What differs between the trees, of the paths `only` selects (every path without it);
    a file is read only when its digest is unknown or it differs (for its diff). `sums`: the
    digests of some of `expected`'s files (known_sums), not hashed again."""
    sums = sums if sums is not None else {}
    drift = Drift()
    if expected is actual:  # `render --validate`'s: not read to be compared with itself
        return drift
    paths = set(expected) | set(actual)
    for rel in sorted(paths if only is None else filter(only, paths)):
        if rel not in actual:
            drift.missing.append(rel)
        elif rel not in expected:
            drift.stale.append(rel)
        elif not _holds(actual, rel, expected, sums):
            drift.changed.append(rel)
            drift.diffs[rel] = "".join(
                difflib.unified_diff(
                    actual[rel].splitlines(keepends=True),
                    expected[rel].splitlines(keepends=True),
                    f"committed/{rel}",
                    f"rendered/{rel}",
                    n=context,
                )
            )
    return drift
