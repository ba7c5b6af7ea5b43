"""The one `kustomize build` of a tree's units, for show, diff, validate and the cluster commands.

A unit is built from exactly the files it reads (its folder and the bases its kustomization
lists), written into a temporary folder, with the pinned kustomize (`generator.toolchain`), one
process per unit. (validate's default engine, the kbuild helper, runs kustomize's own build API
in one process and is tested byte for byte against this: validate/stages/kustomize.py.)
"""

from __future__ import annotations

import bisect
import hashlib
import os
import posixpath
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from generator.errors import GeneratorError
from generator.findings import CodeInfo, Finding, Location
from generator.render.layout import unit_folder
from generator.toolchain import process
from generator.toolchain.errors import ToolFailed
from generator.vocab.units import Unit

KUSTOMIZE_TIMEOUT = 300.0


def unit_paths(tree: Mapping[str, str]) -> list[str]:
    """The unit folders of a tree (layout.unit_folder), sorted."""
    return sorted({u[2] for rel in tree if (u := unit_folder(rel)) is not None})


def blob_id(text: str) -> str:
    """The id git gives a file with this text (so a tree in git's object store and a fresh
    render compare without reading every committed file)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


KUSTOMIZATION = "/kustomization.yaml"


class FolderIndex(Mapping[str, list[str]]):
    """{folder: files below it, at any depth} for the folders that hold a kustomization, each
    folder's worked out when first asked for (the tree's paths sorted once, then bisected):
    after an edit validate asks for the folders of twenty units of 10,000, and indexing every
    folder of 36,000 files up front was 50 ms of it."""

    def __init__(self, tree: Mapping[str, str]) -> None:
        self.tree = tree
        self._paths: list[str] | None = None
        self._below: dict[str, list[str]] = {}

    def __contains__(self, folder: object) -> bool:
        return isinstance(folder, str) and folder + KUSTOMIZATION in self.tree

    def __getitem__(self, folder: str) -> list[str]:
        found = self._below.get(folder)
        if found is None:
            if folder not in self:
                raise KeyError(folder)
            if self._paths is None:
                self._paths = sorted(self.tree)
            # every path that starts with "folder/" sorts between "folder/" and "folder0"
            start = bisect.bisect_left(self._paths, folder + "/")
            end = bisect.bisect_left(self._paths, folder + "0", start)
            found = self._below[folder] = self._paths[start:end]
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(
            sorted(rel[: -len(KUSTOMIZATION)] for rel in self.tree if rel.endswith(KUSTOMIZATION))
        )

    def __len__(self) -> int:
        return sum(1 for _ in self)


def folder_index(tree: Mapping[str, str]) -> FolderIndex:
    """{folder: files below it, at any depth} for the folders that hold a kustomization."""
    return FolderIndex(tree)


class Inputs:
    """What `kustomize build` of each unit of a tree reads (indexed once per tree).

    `ids` gives a file's git blob id where it is known without reading the file (a tree in git's
    object store); other files' ids are computed from their text.
    """

    def __init__(self, tree: Mapping[str, str], ids: Mapping[str, str] | None = None) -> None:
        self.tree = tree
        self.ids = dict(ids or {})
        self._files = folder_index(tree)

    def paths(self, unit: str) -> list[str]:
        """The unit folder's files and, for each folder its kustomization lists in `resources`,
        that folder's, recursively (only kustomization files are read)."""
        out: list[str] = []
        seen: set[str] = set()
        todo = [unit]
        while todo:
            folder = todo.pop()
            if folder in seen or folder not in self._files:
                continue
            seen.add(folder)
            out += self._files[folder]
            kust = (
                yaml.load(self.tree[folder + "/kustomization.yaml"], Loader=yaml.CSafeLoader) or {}
            )
            for ref in kust.get("resources", []) if isinstance(kust, dict) else []:
                todo.append(posixpath.normpath(posixpath.join(folder, str(ref))))
        return sorted(out)

    def of(self, unit: str) -> dict[str, str]:
        return {rel: self.tree[rel] for rel in self.paths(unit)}

    def digest(self, unit: str) -> str:
        """A hash of the unit's input paths and their contents (by git blob id)."""
        h = hashlib.sha256()
        for rel in self.paths(unit):
            if rel not in self.ids:
                self.ids[rel] = blob_id(self.tree[rel])
            h.update(f"{rel}\0{self.ids[rel]}\0".encode())
        return h.hexdigest()


class BuildError(GeneratorError):
    """kustomize refused a unit: the rendered tree is broken (a hand edit, or a bug)."""


def jobs() -> int:
    """Processes to run at once: twice the CPUs (kustomize waits on file reads)."""
    return max(2, (os.cpu_count() or 2) * 2)


def write_tree(files: Mapping[str, str], root: Path) -> None:
    """Lay files (relative path -> text) out under root, for a kustomize process to read."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def kustomize(
    root: Path,
    unit_paths: Sequence[str],
    workers: int = 0,
    on_unit: Callable[[str], None] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, dict[str, Any]]:
    """{unit_path: {"ok": bool, "output": text, "error": text}}: `kustomize build` of each unit
    folder under root, one process each, in parallel; once `stop` is set the rest are not
    built."""

    def one(path: str) -> tuple[str, dict[str, Any]]:
        if stop is not None and stop.is_set():
            return path, {"ok": False, "output": "", "error": "cancelled"}
        try:
            proc = process.run("kustomize", ["build", str(root / path)], timeout=KUSTOMIZE_TIMEOUT)
        except ToolFailed as exc:
            # cobra prints "Error: " before the message the kbuild helper reports as it is.
            error = exc.stderr.decode("utf-8", "replace").strip().removeprefix("Error: ")
            result = {"ok": False, "output": "", "error": error}
        else:
            result = {"ok": True, "output": proc.stdout.decode("utf-8", "replace"), "error": ""}
        if on_unit is not None:
            on_unit(path)
        return path, result

    if not unit_paths:
        return {}
    with ThreadPoolExecutor(max_workers=min(workers or jobs(), len(unit_paths))) as pool:
        return dict(pool.map(one, unit_paths))


def build(tree: Mapping[str, str], units: Sequence[str], workers: int = 0) -> dict[str, str]:
    """{unit: kustomize build output} for each unit of an in-memory tree; BuildError on the
    first that does not build."""
    if not units:
        return {}
    inputs = Inputs(tree)
    needed: dict[str, str] = {}
    for unit in units:
        needed.update(inputs.of(unit))
    with tempfile.TemporaryDirectory(prefix="accel-build-") as tmp:
        write_tree(needed, Path(tmp))
        built = kustomize(Path(tmp), units, workers)
    for unit in units:
        if not built[unit]["ok"]:
            raise BuildError(f"kustomize build {unit} failed: {built[unit]['error']}")
    return {unit: built[unit]["output"] for unit in units}


KUS001 = CodeInfo(
    "KUS001",
    "manifests (kustomize)",
    "error",
    "kustomize build of a committed unit fails (a hand edit, or a generator bug)",
)


def build_failed(unit: Unit, error: str, fallback: Location) -> Finding:
    """KUS001 for a unit that does not build: at the values of its first object, if known."""
    return Finding(
        KUS001.code,
        f"kustomize build {unit.path} failed: {error}",
        next(iter(unit.origins.values()), fallback),
        hint="a bug in the generator or a hand edit: re-render",
        unit=unit.path,
    )


def objects(text: str) -> list[dict[str, Any]]:
    """The objects of a `kustomize build` output."""
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict)]
