"""Each view's unit findings kept by the units' keys: a unit whose key and view did not change
is answered with one lookup.

A unit's findings (its stages' verdicts read against its view, and the manifest rules on its
built objects) are a function of its results, which its cache key names (the committed files
it reads, a finding's file among them, and the tools), of its view (the values: its rendered
objects and their origins, the pools the rules read), of the program name the hints cite
(`accel-gitops` or `python render.py`), of the stages run and of the code. The rules' memo
(policy/memo.RuleMemo) answers each unit's rules from those, but each unit still cost a context,
a lookup and each stage a reading of its verdicts: 0.15 s for the 10,081 units of 20 clusters x
500 teams after one team's edit, which changes that team's unit in every cluster (their shared
base) and no view but the base layer's. Here a view's entry, marked with the view's digest
(policy/memo.Digests, salted with the code), the stages and the program, holds each unit's key,
findings and object count; a unit of another key is checked as before. One entry per view, by
its layer; an entry of another mark is not used, and the run keeps a new one. Without a folder
it keeps nothing.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from generator.findings import Finding
from generator.policy.memo import finding_of_row, row_of_finding
from generator.values.filecache import MARSHAL_FORMAT, Entries

FOLDER = "unit-findings"  # under validate's cache folder

Done = tuple[list[Finding], int]  # a unit's findings and its built objects' count


def _key(layer: str) -> str:
    return hashlib.sha256(marshal.dumps(("unit findings", layer), MARSHAL_FORMAT)).hexdigest()


def mark(view_digest: str, stages: Iterable[str], program: str) -> str:
    """What a view's units' findings are a function of besides each unit's key: the view's
    digest (salted with the code), the stages run and the program the hints name."""
    data = (view_digest, tuple(stages), program)
    return hashlib.sha256(marshal.dumps(data, MARSHAL_FORMAT)).hexdigest()


class FindingsMemo:
    def __init__(self, folder: Path | None, write: bool) -> None:
        self.entries = Entries(folder, write)

    @property
    def enabled(self) -> bool:
        return self.entries.folder is not None

    def get(self, layer: str, marked: str) -> dict[str, tuple[str, list[Any], int]]:
        """Each unit of the view's entry kept with this mark: its key, its findings' rows and
        its objects' count (nothing for an entry of another mark, or none)."""
        found: Any = self.entries.get(_key(layer))
        if not isinstance(found, dict) or found.get("mark") != marked:
            return {}
        return {path: (key, rows, count) for path, key, rows, count in found["units"]}

    def put(self, layer: str, marked: str, done: dict[str, tuple[str, Done]]) -> None:
        """Keep each unit's (key, (findings, count)) under the view's mark."""
        units = [
            (path, key, [row_of_finding(f) for f in found], n)
            for path, (key, (found, n)) in done.items()
        ]
        self.entries.put(_key(layer), {"mark": marked, "units": units})

    def save(self, layers: Iterable[str]) -> None:
        """Keep this run's entries and those of `layers` (the views the values have now, whether
        or not this run checked them: an `--env` run checks some); drop the others."""
        for layer in layers:
            self.entries.keep(_key(layer))
        self.entries.save()


def done_of(rows: list[Any], count: int) -> Done:
    """A kept unit's findings and count, from its rows."""
    return [finding_of_row(tuple(r)) for r in rows], count
