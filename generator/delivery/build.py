"""`kustomize build` of rendered units, for the commands that show or compare built manifests.

A unit is built from exactly the files it reads (its folder and the bases its kustomization
lists), written into a temporary folder, with the pinned kustomize (`generator.toolchain`).
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from generator import toolchain
from generator.errors import GeneratorError

KUSTOMIZE_TIMEOUT = 300.0


def unit_paths(tree: Mapping[str, str]) -> list[str]:
    """`overlays/<env>/<unit>` folders of a tree, sorted."""
    out = set()
    for rel in tree:
        parts = rel.split("/")
        if len(parts) == 4 and parts[0] == "overlays" and parts[3] == "kustomization.yaml":
            out.add("/".join(parts[:3]))
    return sorted(out)


def blob_id(text: str) -> str:
    """The id git gives a file with this text (so a tree in git's object store and a fresh
    render compare without reading every committed file)."""
    data = text.encode("utf-8")
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Inputs:
    """What `kustomize build` of each unit of a tree reads (indexed once per tree).

    `ids` gives a file's git blob id where it is known without reading the file (a tree in git's
    object store); other files' ids are computed from their text.
    """

    def __init__(self, tree: Mapping[str, str], ids: Mapping[str, str] | None = None) -> None:
        self.tree = tree
        self.ids = dict(ids or {})
        roots = {rel.rsplit("/", 1)[0] for rel in tree if rel.endswith("/kustomization.yaml")}
        self._files: dict[str, list[str]] = {r: [] for r in roots}
        for rel in tree:
            parts = rel.split("/")
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder in self._files:
                    self._files[folder].append(rel)

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


def build(tree: Mapping[str, str], units: Sequence[str], workers: int = 0) -> dict[str, str]:
    """{unit: kustomize build output} for each unit, built in parallel."""
    if not units:
        return {}
    with tempfile.TemporaryDirectory(prefix="accel-build-") as tmp:
        root = Path(tmp)
        needed: dict[str, str] = {}
        inputs = Inputs(tree)
        for unit in units:
            needed.update(inputs.of(unit))
        for rel, text in needed.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")

        def one(unit: str) -> tuple[str, str]:
            proc = toolchain.run(
                "kustomize", ["build", str(root / unit)], timeout=KUSTOMIZE_TIMEOUT, check=False
            )
            if proc.returncode != 0:
                message = proc.stderr.decode("utf-8", "replace").strip()
                raise BuildError(f"kustomize build {unit} failed: {message}")
            return unit, proc.stdout.decode("utf-8")

        jobs = workers or max(2, (os.cpu_count() or 2) * 2)
        with ThreadPoolExecutor(max_workers=min(jobs, len(units))) as pool:
            return dict(pool.map(one, units))


def objects(text: str) -> list[dict[str, Any]]:
    """The objects of a `kustomize build` output."""
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if isinstance(d, dict)]
