"""The committed tree known without reading each file: a stat index, as git's index is.

For each file of `base/` and `overlays/` the index keeps what `stat` says of it (size, mtime and
ctime in nanoseconds, inode, device) and the SHA-256 of its bytes. A later scan trusts the digest
of a file whose `stat` is the same and reads (and digests) every other: at 20 clusters x 500
teams that is 36,000 files, of which one team's edit changes a handful.

A file changed without changing its `stat` would be missed, so an entry is kept only when the
file's ctime is older than the scan that read it by MARGIN_NS: git's "racy" rule (an entry whose
mtime is not older than the index is read again), against the time the scan started rather than
the time the index was written, since a file can change between the two; and on the ctime, not
the mtime, since every change of a file sets its ctime to the present (a write, and `touch -d`
or `os.utime` putting the mtime back), and no user can set it. So a hand edit that keeps the
size and puts the mtime back no longer matches its entry. The margin covers the coarse
timestamps of filesystems (a kernel tick; FAT's 2 s). A network filesystem whose clock runs
behind this machine's is not covered (git's rule has the same limit): `render --check` there is
as good as the clocks.

Files this process writes are left out of the index (their mtime is now): the next scan reads
them once. The index is a cache: a missing or unreadable one only means every file is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from generator.errors import GeneratorError
from generator.render import statwalk
from generator.render.statwalk import Stat
from generator.values.filecache import write_atomically

FOLDER = "tree-index"  # in validate's cache folder
FORMAT = "tree-index-1"
MARGIN_NS = 2_000_000_000
OUTPUT_DIRS = ("base", "overlays")
RENDERED_DIRS = statwalk.RENDERED_DIRS  # OUTPUT_DIRS and traffic/
Sums = dict[str, bytes]  # path -> the digest of the file's bytes (digest())


def now_ns() -> int:
    """The scan's start (a function so that tests can move it)."""
    return time.time_ns()


def digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def index_file(cache_dir: Path | None, root: Path) -> Path | None:
    """Where the index of the tree at `root` is kept in the cache folder (one per output
    folder: a checkout's render and a CI job's `--committed DIR` keep their own)."""
    if cache_dir is None:
        return None
    name = hashlib.sha256(os.fsencode(os.path.abspath(root))).hexdigest()[:24]
    return cache_dir / FOLDER / f"{name}.marshal"


class TreeChanged(GeneratorError):
    """A file the scan listed could not be read when first asked for (exit 2): something
    changed the tree during the run (files are read lazily, after the scan)."""


class Files(Mapping[str, str]):
    """base/ and overlays/ under `root` as found: every file's path, size and digest; a file's
    text read (decoded as UTF-8, or "<binary file>") when first asked for."""

    def __init__(
        self,
        root: Path,
        stats: dict[str, Stat],
        digests: dict[str, bytes],
        started: int = 0,
        known: dict[str, tuple[Stat, bytes]] | None = None,
    ) -> None:
        self.root = root
        self.known = known if known is not None else {}  # the index as the scan read it
        self.started = started  # when the scan began (now_ns): what save() may trust
        self.stats = stats  # sorted by path, as the walk finds them
        self.digests = digests  # known without reading, or read by the scan
        self.texts: dict[str, str] = {}
        self.read: list[str] = []  # the files this scan read (not trusted from the index)
        # The scan found exactly the index's files, each with its stat then (their digests all
        # known from it): what save() would keep is the index.
        self.unchanged = len(digests) == len(stats) == len(self.known)

    def __getitem__(self, rel: str) -> str:
        text = self.texts.get(rel)
        if text is None:
            if rel not in self.stats:
                raise KeyError(rel)
            data = self._bytes(rel)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                text = "<binary file>"
            self.texts[rel] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self.stats)

    def __len__(self) -> int:
        return len(self.stats)

    def __contains__(self, rel: object) -> bool:
        return rel in self.stats

    def size(self, rel: str) -> int:
        return self.stats[rel][0]

    def digest(self, rel: str) -> bytes:
        found = self.digests.get(rel)
        if found is None:
            found = self.digests[rel] = digest(self._bytes(rel))
        return found

    def same(self, rel: str, data: bytes) -> bool:
        """Whether the file holds exactly `data` (by digest: the file is not read when the
        index knows it)."""
        return self.size(rel) == len(data) and self.digest(rel) == digest(data)

    def _bytes(self, rel: str) -> bytes:
        path = os.path.join(self.root, rel)
        try:
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            raise TreeChanged(
                f"cannot read {path}, listed when this run began: {exc.strerror or exc}; "
                "was it changed or removed meanwhile (another render, a checkout)? run again "
                "once nothing else writes there"
            ) from None
        self.read.append(rel)
        self.digests.setdefault(rel, digest(data))
        return data


def _walk(root: Path) -> dict[str, Stat]:
    return statwalk.walk(os.fspath(root))


class Walk:
    """The walk of the tree at `root` (statwalk.walk) in a child process, started now, while
    this one goes on: `scan(..., walk=)` takes its stats. Nothing this process does may change
    the tree in between (write_tree's recovery, when it finds something to roll back, walks
    again). A child that cannot start or fails only means the walk is done here instead: a
    tree that cannot be listed raises then, as `scan` always did."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.started = now_ns()  # before the child's first stat: what save() may trust
        self._stats: dict[str, Stat] | None = None
        try:
            self._child: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-I", "-S", statwalk.__file__, os.fspath(root)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            self._child = None

    def stats(self) -> dict[str, Stat]:
        """The child's walk (waited for), or this process's when the child failed; taken
        once (`render --env` scans before writing too, with nothing changed in between)."""
        if self._stats is None:
            found = None
            if self._child is not None:
                out, _ = self._child.communicate()
                if self._child.returncode == 0:
                    with contextlib.suppress(EOFError, ValueError, TypeError):
                        found = marshal.loads(out)
            self._stats = found if isinstance(found, dict) else _walk(self.root)
        return self._stats

    def close(self) -> None:
        """End the child if its walk was never taken (a run that stopped before it)."""
        if self._child is not None and self._child.returncode is None:
            self._child.kill()
            self._child.communicate()

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _load(path: Path | None, root: Path) -> dict[str, tuple[Stat, bytes]]:
    if path is None:
        return {}
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return {}
    if data.get("root") != os.path.abspath(root):
        return {}
    entries: dict[str, tuple[Stat, bytes]] = data["entries"]
    return entries


def scan(root: Path, index: Path | None, walk: Walk | None = None) -> Files:
    """The tree at `root`, each file's digest taken from the index at `index` when its stat is
    the same as when the index read it, the others read; its stats from `walk` when given (the
    same root, walked since it started). Raises OSError when `root` cannot be listed."""
    assert walk is None or walk.root == root, (walk, root)
    started = walk.started if walk is not None else now_ns()
    known = _load(index, root)
    stats = walk.stats() if walk is not None else _walk(root)
    digests: dict[str, bytes] = {}
    for rel, stat in stats.items():
        entry = known.get(rel)
        if entry is not None and tuple(entry[0]) == stat:
            digests[rel] = entry[1]
    return Files(root, stats, digests, started, known)


def save(files: Files, index: Path | None, *, drop: frozenset[str] = frozenset()) -> None:
    """Remember the digests `files` knows for the next scan, but those of `drop` (files written
    since) and those of files changed too recently to be told apart by their stat."""
    if index is None:
        return
    if files.unchanged and not drop:
        # The index's entries were kept by a scan that started earlier, so the racy rule keeps
        # them all again: it would be written as it is (36,000 entries compared at 20 x 500).
        _used(index)
        return
    limit = files.started - MARGIN_NS
    entries = {
        rel: (stat, found)
        for rel, stat in files.stats.items()
        if rel not in drop
        and (found := files.digests.get(rel)) is not None
        and stat[2] < limit  # the ctime: every change sets it, `touch -d` too
    }
    data = {"format": FORMAT, "root": os.path.abspath(files.root), "entries": entries}
    if entries == files.known:
        _used(index)
        return
    try:
        index.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(index, marshal.dumps(data))
        _prune(index)
    except OSError:
        pass  # a cache that cannot be written only costs speed


def _used(index: Path) -> None:
    """An index not rewritten for nothing (36,000 entries at 20 clusters x 500 teams), but
    marked used (its mtime) for _prune."""
    try:
        os.utime(index)
        _prune(index)
    except OSError:
        pass  # a cache that cannot be written only costs speed


KEEP_INDEXES = 4  # a checkout's output, and a few more (`--committed DIR`, copies of the tree)


def _prune(index: Path) -> None:
    """Remove the indexes but the KEEP_INDEXES last saved or used: one per output folder ever
    rendered or validated would grow without end (a CI job's temporary checkouts, tests). Only
    files named as index_file names them: the folder is the caller's."""
    found = [
        (entry.stat().st_mtime_ns, entry)
        for entry in index.parent.iterdir()
        if entry.suffix == ".marshal" and len(entry.stem) == 24
    ]
    found.sort(key=lambda row: row[0], reverse=True)
    for _, entry in found[KEEP_INDEXES:]:  # `index`, just saved or marked used, is not among them
        entry.unlink(missing_ok=True)
