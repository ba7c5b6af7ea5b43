"""`kustomize build` of rendered units, for the commands that show or compare built manifests.

A unit is built from exactly the files it reads (its folder and the bases its kustomization
lists), written into a temporary folder, with the pinned kustomize (`generator.toolchain`).
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from . import toolchain
from .errors import GeneratorError
from .layout import Tree

KUSTOMIZE_TIMEOUT = 300.0


def unit_paths(tree: Tree) -> list[str]:
    """`overlays/<env>/<unit>` folders of a tree, sorted."""
    out = set()
    for rel in tree:
        parts = rel.split("/")
        if len(parts) == 4 and parts[0] == "overlays" and parts[3] == "kustomization.yaml":
            out.add("/".join(parts[:3]))
    return sorted(out)


class Inputs:
    """What `kustomize build` of each unit of a tree reads (indexed once per tree)."""

    def __init__(self, tree: Tree) -> None:
        self.tree = tree
        roots = {rel.rsplit("/", 1)[0] for rel in tree if rel.endswith("/kustomization.yaml")}
        self._files: dict[str, list[str]] = {r: [] for r in roots}
        for rel in tree:
            parts = rel.split("/")
            for i in range(1, len(parts)):
                folder = "/".join(parts[:i])
                if folder in self._files:
                    self._files[folder].append(rel)

    def of(self, unit: str) -> dict[str, str]:
        """The unit folder's files and, for each folder its kustomization lists in `resources`,
        that folder's, recursively."""
        out: dict[str, str] = {}
        seen: set[str] = set()
        todo = [unit]
        while todo:
            folder = todo.pop()
            if folder in seen or folder not in self._files:
                continue
            seen.add(folder)
            out.update({rel: self.tree[rel] for rel in self._files[folder]})
            kust = (
                yaml.load(self.tree[folder + "/kustomization.yaml"], Loader=yaml.CSafeLoader) or {}
            )
            for ref in kust.get("resources", []) if isinstance(kust, dict) else []:
                todo.append(posixpath.normpath(posixpath.join(folder, str(ref))))
        return out


class BuildError(GeneratorError):
    """kustomize refused a unit: the rendered tree is broken (a hand edit, or a bug)."""


def build(tree: Tree, units: Sequence[str], workers: int = 0) -> dict[str, str]:
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
