"""Each view's laid-out units, kept by the view's digest: a view that did not change is neither
read back nor laid out again.

A unit's files (render/layout.py `_overlay`) are a function of three things: its components,
which are a function of the view (render/buildmemo.py: the view's digest covers every input of
the builders, and the generator's code, the layout's included); the base's components of the
same names (the overlay patches them, and an object the environment leaves as it is keeps the
base's provenance: `_keep_base_provenance`); and its folder, which is the view's key (in the
digest). So an entry per view, keyed by the view's digest, holds for each unit the names of its
components, the digest of each base component of those names when it was laid out, its files,
and its components as the builders made them (before the base's provenance). A unit whose
base components changed since is laid out again from its own components, read back from the
entry, and no other part of the view is read: one team's edit changes that team's base
component, which the team's unit in every cluster overlays, so at 20 clusters x 500 teams an
edit lays out 21 units of the 19 unchanged clusters instead of 10,000.

The argocd units are not kept here: they read every cluster's units (builders/argocd.py), and
are built each run from each unit's Shape, which the entry keeps too.

Entries are marshal data, one file per view; a run that may write removes the entries of the
views it no longer has. A view whose components marshal cannot write (a value of another type)
is simply laid out each run.
"""

from __future__ import annotations

import hashlib
import marshal
from dataclasses import dataclass
from pathlib import Path

from generator.builders.argocd import Shape
from generator.builders.fleet import Build
from generator.render import buildmemo
from generator.values.filecache import MARSHAL_FORMAT, write_atomically
from generator.vocab.units import Component, Tree

FOLDER = "layouts"  # under validate's cache folder
SUFFIX = ".marshal"
FORMAT = "layout-1"

Deps = tuple[tuple[str, str], ...]  # (component, the digest of the base's of that name or "")


@dataclass
class UnitEntry:
    members: tuple[str, ...]  # its components' names, in the order the view made them
    deps: Deps  # what its files were laid out against
    files: Tree  # its files, by path
    made: bytes  # its components as made (buildmemo.encode)


@dataclass
class ViewEntry:
    units: dict[str, UnitEntry]  # in the order the view's components name them
    shapes: list[Shape]


def component_digest(comp: Component) -> str:
    """What a unit's layout reads of a base component: its objects (in marshal format 2, as the
    YAML text cache keys them: equal documents, equal keys)."""
    return hashlib.sha256(marshal.dumps(comp.objects, MARSHAL_FORMAT)).hexdigest()


def encode(entry: ViewEntry) -> bytes:
    units = [(u, e.members, e.deps, e.files, e.made) for u, e in entry.units.items()]
    shapes = [(s.unit, s.objects, s.namespaces, s.cluster_kinds) for s in entry.shapes]
    return marshal.dumps((FORMAT, units, shapes), MARSHAL_FORMAT)


def decode(blob: bytes) -> ViewEntry | None:
    fmt, units, shapes = marshal.loads(blob)
    if fmt != FORMAT:
        return None
    return ViewEntry(
        {
            unit: UnitEntry(tuple(members), tuple(tuple(d) for d in deps), files, made)
            for unit, members, deps, files, made in units
        },
        [
            Shape(unit, objects, tuple(spaces), tuple(tuple(k) for k in kinds))
            for unit, objects, spaces, kinds in shapes
        ],
    )


def members(entry: UnitEntry) -> list[Component]:
    """The unit's components as made, read back from its entry."""
    return list(buildmemo.decode(entry.made))


class LayoutMemo:
    """Laid-out views by digest; without a folder it keeps nothing and every view is laid out."""

    def __init__(self, folder: Path | None, write: bool) -> None:
        self.folder = folder
        self.write = write
        self.seen: set[str] = set()  # the digests of this run's views
        self.recalled: list[str] = []  # the layers whose entry was read back

    def get(self, build: Build) -> ViewEntry | None:
        if self.folder is None or build.digest is None:
            return None
        self.seen.add(build.digest)
        try:
            found = decode((self.folder / (build.digest + SUFFIX)).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        if found is not None:
            self.recalled.append(build.view.key)
        return found

    def put(self, build: Build, entry: ViewEntry) -> None:
        if self.folder is None or build.digest is None or not self.write:
            return
        self.seen.add(build.digest)
        try:
            blob = encode(entry)
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomically(self.folder / (build.digest + SUFFIX), blob)
        except (OSError, ValueError):
            pass  # only costs speed: the view is laid out again next run

    def prune(self) -> None:
        """Remove the entries of views this run did not have."""
        if self.folder is None or not self.write:
            return
        try:
            for path in self.folder.iterdir():
                if path.name.endswith(SUFFIX) and path.name[: -len(SUFFIX)] not in self.seen:
                    path.unlink()
        except OSError:
            pass
