"""Each view's laid-out units, kept by the view's digest: a view that did not change is neither
read back nor laid out again.

A unit's files (render/layout.py `_overlay`) are a function of three things: its components,
which are a function of the view (render/buildmemo.py: the view's digest covers every input of
the builders, and the generator's code, the layout's included); the base's components of the
same names (the overlay patches them, and an object the environment leaves as it is keeps the
base's provenance: `_keep_base_provenance`); and its folder, which is the view's key (in the
digest). So an entry per view, named by its layer and holding the view's digest it was laid
out for, holds for each unit the names of its components, the digest of each base component of
those names when it was laid out, its files, the SHA-256 of each file's UTF-8 bytes (what the
writer would write: the writer and the drift comparison compare it with the committed file's,
which the tree index knows, instead of hashing the text each run), and its components as the
builders made them (before the base's provenance). A unit whose base components changed since
is laid out again from its own components, read back from the entry, and no other part of the
view is read: one team's edit changes that team's base component, which the team's unit in
every cluster overlays, so at 20 clusters x 500 teams an edit lays out 21 units of the 19
unchanged clusters instead of 10,000. A view whose digest changed is laid out again, but a
unit whose components (as made) and base components are those of the view's last entry keeps
that entry's files.

The argocd units read every cluster's units (builders/argocd.py): each unit's Shape, which the
entry keeps too, and the views but their teams. An environment's argocd units are kept by a
digest of those (render/layout.py `_argocd_inputs`), with their files' sums: a team's edit that
changes no unit's shape builds none of them (their texts and objects are built when first asked
for). When they are built, each layer's argocd unit's files are kept by a digest of its
components. The base's files are kept by each base component's digest. Each kept file's digest
is kept beside it.

Entries are marshal data, one file per view: a head (each unit's names, deps and sums, where
its body lies and the body's digest; the shapes), then each unit's body (its files and its
components as made). get() reads the head alone: an unchanged view's files are compared by
their sums (render/writer.py) and read only to be written or diffed (render/texts.py), its
components only when a unit is laid out again or its objects are asked for; a body that is not
what the head says (the entry replaced or damaged since) raises Unreadable, and the caller lays
the unit out from the view's build. At 20 clusters x 500 teams the heads are 5 MB of the 145.
A run that may write removes the entries of the views it no longer has. A view whose
components marshal cannot write (a value of another type) is not kept: it is laid out each run
(its units before the one marshal refuses may still take the files of an earlier entry of the
view whose components they equal, render/layout.py `_view`).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.builders.argocd import Shape
from generator.builders.fleet import Build
from generator.policy.memo import Digests
from generator.render import buildmemo, treeindex
from generator.render.treeindex import Sums
from generator.values.filecache import MARSHAL_FORMAT, code_digest, write_atomically
from generator.vocab.units import Component, Tree

FOLDER = "layouts"  # under validate's cache folder
SUFFIX = ".marshal"
VIEW = "view-"  # + a digest of the layer: the view's entry
SINCE = ".since"  # before SUFFIX: the units of a view laid out again since its entry
BASE = "base.marshal"  # the base's files by component
ARGOCD = "argocd-"  # + a digest of the layer: its argocd unit's files, by their components'
# + a digest of the environment: the sums of its argocd units' files, by what the units read
ARGOCD_ENV = "argocd-env-"
FORMAT = "layout-2"  # layout-1: one marshal value, without the files' digests

Deps = tuple[tuple[str, str], ...]  # (component, the digest of the base's of that name or "")
# An environment's argocd units by layer: each one's name and its files' sums, in layout order
ArgoRows = dict[str, list[tuple[str, Sums]]]


class Unreadable(Exception):
    """A unit's files and components are no longer what its entry's head says (the entry was
    replaced or damaged since the head was read): the caller lays the unit out again."""


Where = tuple[Path, int, int, bytes]  # a unit's body: its entry's file, offset, length, digest


class UnitEntry:
    """A unit as laid out: its components' names (in the order the view made them), what its
    files were laid out against (`deps`), each file's digest (`sums`), and its files and its
    components as made (buildmemo.encode), read from `where` when first asked for."""

    __slots__ = ("_kept", "_where", "deps", "members", "sums")

    def __init__(
        self,
        members: tuple[str, ...],
        deps: Deps,
        sums: Sums,
        files: Tree | None = None,
        made: bytes | None = None,
        where: Where | None = None,
    ) -> None:
        self.members = members
        self.deps = deps
        self.sums = sums
        self._kept = (files, made) if files is not None and made is not None else None
        self._where = where

    def _body(self) -> tuple[Tree, bytes]:
        if self._kept is None:
            if self._where is None:
                raise Unreadable("an entry made without its files")
            self._kept = _read_body(*self._where)
        return self._kept

    @property
    def files(self) -> Tree:
        """Raises Unreadable."""
        return self._body()[0]

    @property
    def made(self) -> bytes:
        """Raises Unreadable."""
        return self._body()[1]


@dataclass
class ViewEntry:
    units: dict[str, UnitEntry]  # in the order the view's components name them
    shapes: list[Shape]
    # The units laid out again since the entry was written (their base components changed):
    # kept beside it (SINCE), so that one team's edit does not rewrite every cluster's entry.
    since: set[str] = field(default_factory=set)
    digest: str = ""  # the view's digest it was laid out for
    current: bool = True  # of the view as it is now; else of its last digest


def sums(files: Tree) -> Sums:
    """Each file's digest, of the bytes the writer writes for it."""
    return {rel: treeindex.digest(text.encode("utf-8")) for rel, text in files.items()}


def component_digest(comp: Component) -> str:
    """What a unit's layout reads of a base component: its objects (in marshal format 2, as the
    YAML text cache keys them: equal documents, equal keys)."""
    return hashlib.sha256(marshal.dumps(comp.objects, MARSHAL_FORMAT)).hexdigest()


def _rows(units: dict[str, UnitEntry]) -> list[Any]:
    return [(u, e.members, e.deps, e.sums, e.files, e.made) for u, e in units.items()]


def _units(rows: list[Any]) -> dict[str, UnitEntry]:
    return {
        unit: UnitEntry(tuple(members), tuple(tuple(d) for d in deps), sums, files, made)
        for unit, members, deps, sums, files, made in rows
    }


HEAD = struct.Struct("<Q")  # the length of an entry's head, which its units' bodies follow


def encode(entry: ViewEntry, digest: str) -> bytes:
    """A view's entry: its head (each unit's names, deps and sums, where its body lies in the
    file and the body's digest; the shapes), then each unit's body (its files, its components
    as made), which get() does not read."""
    bodies, rows, at = [], [], 0
    for unit, e in entry.units.items():
        body = marshal.dumps((e.files, e.made), MARSHAL_FORMAT)
        rows.append((unit, e.members, e.deps, e.sums, at, len(body), _digest(body)))
        bodies.append(body)
        at += len(body)
    shapes = [(s.unit, s.objects, s.namespaces, s.cluster_kinds) for s in entry.shapes]
    head = marshal.dumps((FORMAT, code_digest(), digest, rows, shapes, at), MARSHAL_FORMAT)
    return b"".join((HEAD.pack(len(head)), head, *bodies))


def _digest(body: bytes) -> bytes:
    return hashlib.sha256(body).digest()


def decode(path: Path, digest: str) -> ViewEntry | None:
    """The entry at `path` but its units' bodies, `current` when it is of the view's `digest`;
    None when another code wrote it (the view's digest covers the code, but not a last
    digest's entry) or its length is not what its head says (a truncated file). Raises OSError,
    EOFError, ValueError, TypeError when it cannot be read."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        (length,) = HEAD.unpack(fh.read(HEAD.size))
        if HEAD.size + length > size:  # not this format's, or truncated
            return None
        fmt, code, kept, units, shapes, bodies = marshal.loads(fh.read(length))
    if fmt != FORMAT or code != code_digest():
        return None
    start = HEAD.size + length
    if size != start + bodies:
        return None
    # 500 units a view at 20 clusters x 500 teams: members and deps are tuples as encode wrote
    # them (marshal keeps tuples), not copied again.
    return ViewEntry(
        {
            unit: UnitEntry(members, deps, sums, where=(path, start + at, count, sha))
            for unit, members, deps, sums, at, count, sha in units
        },
        [
            Shape(unit, objects, tuple(spaces), tuple(tuple(k) for k in kinds))
            for unit, objects, spaces, kinds in shapes
        ],
        digest=kept,
        current=kept == digest,
    )


def _read_body(path: Path, at: int, count: int, sha: bytes) -> tuple[Tree, bytes]:
    """A unit's files and components as made, as its entry's head says they are."""
    try:
        with open(path, "rb") as fh:
            fh.seek(at)
            body = fh.read(count)
        if _digest(body) != sha:
            raise Unreadable(f"{path.name} changed since it was read")
        files, made = marshal.loads(body)
    except (OSError, EOFError, ValueError, TypeError) as exc:
        raise Unreadable(f"{path.name}: {exc}") from None
    return files, made


def members(entry: UnitEntry) -> list[Component]:
    """The unit's components as made, read back from its entry."""
    return list(buildmemo.decode(entry.made))


class LayoutMemo:
    """Laid-out views by digest; without a folder it keeps nothing and every view is laid out."""

    def __init__(self, folder: Path | None, write: bool, digests: Digests | None = None) -> None:
        self.folder = folder
        self.write = write
        # The views' digests (policy/memo.py), which key an environment's argocd units by what
        # they read (render/layout.py `_argocd_inputs`); without, they are built each run.
        self.digests = digests
        self.seen: set[str] = set()  # the entries of this run's layers, by file name
        self.recalled: list[str] = []  # the layers whose entry was read back

    def _name(self, build: Build) -> str:
        """A view's entry is named by its layer: a view whose digest changed finds the entry of
        its last digest, whose units it reuses where their components did not change."""
        name = VIEW + hashlib.sha256(build.view.key.encode()).hexdigest()[:24]
        self.seen.add(name)
        return name

    def get(self, build: Build) -> ViewEntry | None:
        """The view's entry: of its digest (`current`), or of the digest it last had."""
        if self.folder is None or build.digest is None:
            return None
        name = self._name(build)
        try:
            found = decode(self.folder / (name + SUFFIX), build.digest)
        except (OSError, EOFError, ValueError, TypeError, struct.error):
            return None
        if found is None:
            return None
        try:
            fmt, of, rows = marshal.loads((self.folder / (name + SINCE + SUFFIX)).read_bytes())
            since = _units(rows) if (fmt, of) == (FORMAT, found.digest) else {}
        except (OSError, EOFError, ValueError, TypeError):
            since = {}  # none, or unreadable: those units are laid out again (their deps)
        for unit, later in since.items():
            if unit in found.units:
                found.units[unit] = later
                found.since.add(unit)
        if found.current:
            self.recalled.append(build.view.key)
        return found

    def put(self, build: Build, entry: ViewEntry) -> None:
        """Keep a view laid out whole."""
        if self.folder is None or build.digest is None or not self.write:
            return
        name = self._name(build)
        try:
            blob = encode(entry, build.digest)
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / (name + SINCE + SUFFIX)).unlink(missing_ok=True)
            write_atomically(self.folder / (name + SUFFIX), blob)
        except (OSError, ValueError):
            pass  # only costs speed: the view is laid out again next run

    def put_since(self, build: Build, entry: ViewEntry) -> None:
        """Keep the units of a kept view laid out again since it was kept (entry.since)."""
        if self.folder is None or build.digest is None or not self.write:
            return
        rows = _rows({u: entry.units[u] for u in entry.units if u in entry.since})
        try:
            blob = marshal.dumps((FORMAT, build.digest, rows), MARSHAL_FORMAT)
            write_atomically(self.folder / (self._name(build) + SINCE + SUFFIX), blob)
        except (OSError, ValueError):
            pass  # only costs speed: those units are laid out again next run

    def base_files(self) -> dict[str, tuple[str, Tree, Sums]]:
        """The base's files by component: (the component's digest, its files, their sums)."""
        if self.folder is None:
            return {}
        try:
            fmt, code, files = marshal.loads((self.folder / BASE).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        # Not keyed by a view's digest, which covers the code: the layout's code may differ.
        if fmt != FORMAT or code != code_digest():
            return {}
        found: dict[str, tuple[str, Tree, Sums]] = files
        return found

    def argocd_files(
        self, layer: str, comps: list[Component], deps: Deps, lay_out: Callable[[], Tree]
    ) -> tuple[Tree, Sums]:
        """A layer's argocd unit's files, kept by a digest of its components and of the base
        components of their names, `deps` (when the argocd units are built, `argocd_units`
        missing, laying out 500 Applications per cluster at 20 clusters x 500 teams cost their
        YAML text cache's keys again): `lay_out()` when they changed; and their sums (none without a
        folder: nothing would be kept)."""
        if self.folder is None:
            return lay_out(), {}
        name = self._argocd_name(layer) + SUFFIX
        try:
            digest = hashlib.sha256(
                buildmemo.encode(tuple(comps)) + marshal.dumps(deps, MARSHAL_FORMAT)
            ).hexdigest()
        except ValueError:  # a value marshal cannot write
            return lay_out(), {}
        try:
            fmt, code, kept, found, found_sums = marshal.loads((self.folder / name).read_bytes())
            if (fmt, code, kept) == (FORMAT, code_digest(), digest):
                files: Tree = found
                known: Sums = found_sums
                return files, known
        except (OSError, EOFError, ValueError, TypeError):
            pass
        made = lay_out()
        made_sums = sums(made)
        if self.write:
            try:
                data = (FORMAT, code_digest(), digest, made, made_sums)
                blob = marshal.dumps(data, MARSHAL_FORMAT)
                self.folder.mkdir(parents=True, exist_ok=True)
                write_atomically(self.folder / name, blob)
            except (OSError, ValueError):
                pass  # only costs speed
        return made, made_sums

    def _argocd_name(self, layer: str) -> str:
        name = ARGOCD + hashlib.sha256(layer.encode()).hexdigest()[:24]
        self.seen.add(name)
        return name

    def _env_name(self, env: str) -> str:
        name = ARGOCD_ENV + hashlib.sha256(env.encode()).hexdigest()[:24]
        self.seen.add(name)
        return name

    def argocd_units(self, env: str, inputs: bytes | None) -> ArgoRows | None:
        """An environment's argocd units, by layer, each unit's name and its files' sums, when
        they were laid out from the same `inputs` (render/layout.py `_argocd_inputs`) by this
        code; the layers' entries of argocd_files are kept too (for a later change)."""
        if self.folder is None or inputs is None:
            return None
        try:
            fmt, code, kept, rows = marshal.loads(
                (self.folder / (self._env_name(env) + SUFFIX)).read_bytes()
            )
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if (fmt, code, kept) != (FORMAT, code_digest(), inputs):
            return None
        for layer in rows:
            self._argocd_name(layer)
        found: ArgoRows = rows
        return found

    def put_argocd_units(self, env: str, inputs: bytes, rows: ArgoRows) -> None:
        if self.folder is None or not self.write:
            return
        try:
            blob = marshal.dumps((FORMAT, code_digest(), inputs, rows), MARSHAL_FORMAT)
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self.folder / (self._env_name(env) + SUFFIX), blob)
        except (OSError, ValueError):
            pass  # only costs speed: they are built next run

    def put_base_files(self, files: dict[str, tuple[str, Tree, Sums]]) -> None:
        if self.folder is None or not self.write:
            return
        try:
            blob = marshal.dumps((FORMAT, code_digest(), files), MARSHAL_FORMAT)
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self.folder / BASE, blob)
        except (OSError, ValueError):
            pass  # only costs speed

    def prune(self) -> None:
        """Remove the entries of views this run did not have, and any other file (a killed run's
        temporary file: write_atomically's)."""
        if self.folder is None or not self.write:
            return
        try:
            for path in self.folder.iterdir():
                name = path.name.removesuffix(SUFFIX).removesuffix(SINCE)
                ours = path.name.endswith(SUFFIX) and name in self.seen
                if path.name != BASE and not ours:
                    path.unlink()
        except OSError:
            pass
