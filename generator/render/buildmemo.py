"""Each view's components, kept by the view's digest: a view that did not change is not built
again.

A view's components are a function of the view and of the generator's code (the builders read
the view alone: builders/fleet.py BUILDERS). The key is policy/memo.Digests.view: every field of
the view, each merged value with its source location, the code digest (the catalog and the
inventories are package data), the builders this process runs and the Kubernetes versions the
tools folder has schemas for. One team's edit in an environment of clusters changes the base
view and the views of the clusters that hold its share: 2 of 21 at 20 clusters x 500 teams; the
others' components are read back instead of built.

What is kept is the components as the builders made them, taken when made and before the
layout reads them (render/layout.py keeps the base's provenance on an environment's objects by
replacing them: that depends on the base, which may change when the view does not). Entries are
marshal data, one file per view: each unit's components encoded apart (`unit_blobs`, the bytes
the layout memo compares a unit by, so a changed view is encoded once, not twice: at 1,000 teams
in one cluster the second encoding was 8 % of a render after one team's edit) and the units of
the components in their order. A run that may write removes the entries of views it no longer
has. A view whose components marshal cannot write (a value of another type) is simply built
each run.
"""

from __future__ import annotations

import functools
import marshal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from generator.builders import fleet
from generator.builders.fleet import Build
from generator.findings import Location
from generator.policy.memo import Digests
from generator.values.filecache import MARSHAL_FORMAT, write_atomically
from generator.vocab.units import Component, UserPatch, by_unit

FOLDER = "components"  # under validate's cache folder
SUFFIX = ".marshal"
CODES = "components"  # what the digest is for: not a check's
FORMAT = "components-2"  # an entry: (FORMAT, each component's unit in order, blobs by unit)


def builders() -> tuple[str, ...]:
    """The builders this process runs, by name (a builder that only wraps another, of_view,
    by the one it wraps): the code digest covers their code, but not a builder added at run
    time (tests feed validate objects the values cannot express so), which changes every view's
    components."""
    names = []
    for fn in fleet.BUILDERS:
        cells = [c.cell_contents for c in fn.__closure__ or () if callable(c.cell_contents)]
        target = cells[0] if cells else fn
        names.append(f"{target.__module__}.{target.__qualname__}")
    return (CODES, *names)


def _where(loc: Location | None) -> tuple[str, int, int] | None:
    return None if loc is None else (loc.file, loc.line, loc.column)


def _location(row: tuple[str, int, int] | None) -> Location | None:
    return None if row is None else Location(*row)


def encode(components: tuple[Component, ...]) -> bytes:
    rows = [
        (
            c.unit,
            c.name,
            c.objects,
            _where(c.origin),
            [(key, _where(loc)) for key, loc in c.origins.items()],
            [(p.target, p.patch) for p in c.patches],
        )
        for c in components
    ]
    return marshal.dumps(rows, MARSHAL_FORMAT)


def decode(blob: bytes) -> tuple[Component, ...]:
    rows: list[Any] = marshal.loads(blob)
    return tuple(
        Component(
            unit,
            name,
            objects,
            _location(origin),
            {tuple(key): loc for key, where in origins if (loc := _location(where)) is not None},
            [UserPatch(target, patch) for target, patch in patches],
        )
        for unit, name, objects, origin, origins, patches in rows
    )


def unit_blobs(build: Build, made: tuple[Component, ...] | None = None) -> dict[str, bytes]:
    """Each unit's components as made (`made`: the build's, when it is making them), encoded
    (ValueError: a value marshal cannot write); encoded once per build, whoever asks first."""
    if build.encoded is None:
        comps = build.as_made if made is None else made
        build.encoded = {u: encode(tuple(ms)) for u, ms in by_unit(comps).items()}
    return build.encoded


def encode_view(build: Build, made: tuple[Component, ...]) -> bytes:
    """A view's entry: its components as made, `made`, as `unit_blobs` encodes them, in their
    order."""
    order = tuple(c.unit for c in made)
    return marshal.dumps((FORMAT, order, unit_blobs(build, made)), MARSHAL_FORMAT)


def decode_view(blob: bytes, build: Build) -> tuple[Component, ...]:
    """The components an entry `encode_view` wrote holds, in the order they were made; the
    build keeps their encoding (the layout compares a unit by it)."""
    fmt, order, blobs = marshal.loads(blob)
    if fmt != FORMAT:
        raise ValueError("an entry of another format")
    units = {unit: iter(decode(found)) for unit, found in blobs.items()}
    made = []
    for unit in order:
        comp = next(units[unit], None)
        if comp is None:
            raise ValueError("an entry naming more components than it holds")
        made.append(comp)
    if any(next(rest, None) is not None for rest in units.values()):
        raise ValueError("an entry holding components it does not place")
    build.encoded = blobs
    return tuple(made)


def _read(path: Path, build: Build) -> tuple[Component, ...] | None:
    try:
        return decode_view(path.read_bytes(), build)
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return None  # built instead


class ComponentMemo:
    """Components per view by digest; without a folder it keeps nothing."""

    def __init__(self, folder: Path | None, write: bool, digests: Digests) -> None:
        self.folder = folder
        self.write = write
        self.digests = digests
        # the layers whose components are kept (read back when first asked for)
        self.recalled: list[str] = []

    def attach(self, builds: dict[str, Build]) -> None:
        """Give each build its remembered components, or a way to remember them once made."""
        if self.folder is None:
            return
        codes = builders()
        keys = {key: self.digests.view(build.view, codes) for key, build in builds.items()}
        for layer, build in builds.items():
            # Read when first asked for: an unchanged view the layout memo lays out
            # (render/layoutmemo.py) is never read back.
            path = self.folder / (keys[layer] + SUFFIX)
            kept = path.is_file()
            build.digest = keys[layer]
            build.recall(
                functools.partial(_read, path, build) if kept else None,
                self._keeper(keys[layer], build),
            )
            if kept:
                self.recalled.append(layer)
        if self.write:
            self._prune(set(keys.values()))

    def _keeper(self, key: str, build: Build) -> Callable[[tuple[Component, ...]], None] | None:
        folder = self.folder
        if folder is None or not self.write:
            return None

        def keep(components: tuple[Component, ...]) -> None:
            try:
                blob = encode_view(build, components)
                folder.mkdir(parents=True, exist_ok=True)
                write_atomically(folder / (key + SUFFIX), blob)
            except (OSError, ValueError):
                pass  # only costs speed: the view is built again next run

        return keep

    def _prune(self, keep: set[str]) -> None:
        assert self.folder is not None
        try:
            for entry in self.folder.iterdir():
                # any other file too: a killed run's temporary file (write_atomically's)
                if not (entry.name.endswith(SUFFIX) and entry.name[: -len(SUFFIX)] in keep):
                    entry.unlink()
        except OSError:
            pass
