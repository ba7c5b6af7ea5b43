"""Layering of values: maps merge key by key, everything else (lists included) replaces.

A `Doc` carries its data and, for every path, the file, line and column the value came from, so a
finding about a merged value still points at the file that set it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from generator.findings import Location, Place
from generator.values.yamlio import SourceMap, YamlPath, json_path


@dataclass
class Doc:
    data: dict[str, Any]
    values: dict[YamlPath, Location] = field(default_factory=dict)
    keys: dict[YamlPath, Location] = field(default_factory=dict)
    # Files that set anything in this doc, in layering order (catalog entries excluded).
    sources: tuple[str, ...] = ()
    # Where the values of a built-in catalog entry under this doc are located (loader.py
    # _catalog_doc: the vendor file's `catalog:` key or its top); None without one.
    catalog_at: Location | None = None

    @classmethod
    def from_source(
        cls, data: Any, smap: SourceMap, prefix: YamlPath = (), *, record_source: bool = True
    ) -> Doc:
        """The sub-document at `prefix` of a parsed file, with paths rebased to it."""
        n = len(prefix)
        values = {p[n:]: loc for p, loc in smap.values.items() if p[:n] == prefix}
        keys = {p[n:]: loc for p, loc in smap.keys.items() if p[:n] == prefix}
        body: Any = data
        for part in prefix:
            body = body.get(part) if isinstance(body, dict) else None
        body = body if isinstance(body, dict) else {}
        return cls(copy.deepcopy(body), values, keys, (smap.file,) if record_source else ())

    def locate(self, path: YamlPath, *, key: bool = False) -> Location:
        probe = path
        while True:
            if key and probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            if not probe:
                return next(
                    iter(self.values.values()),
                    Location(self.sources[0] if self.sources else "values"),
                )
            probe = probe[:-1]

    def anchor(self, *paths: YamlPath) -> Location:
        """Where a user edits this entity: the first of `paths` that is set, or has a parent set
        (the entity's top excluded), in a values file (not the built-in catalog); else where the
        entity itself is declared (an environment's `vendors: {nvidia: ...}` key); else the top
        of the entity's own file.

        `locate` alone would answer a path nothing sets with the entity's first key, so the
        search would stop at the first path and never reach a later one."""
        for path in [*(p[:n] for p in paths for n in range(len(p), 0, -1)), ()]:
            loc = self.keys.get(path) or self.values.get(path)
            if loc is not None and loc.file in self.sources:
                return loc
        if self.sources:
            return Location(self.sources[0], 1, 1)
        return self.locate(())

    def set_at(self, path: YamlPath) -> Location | None:
        """Where a values file sets `path` itself (not a parent, not the built-in catalog)."""
        loc = self.values.get(path)
        return (
            loc if loc is not None and loc.file in self.sources and loc != self.catalog_at else None
        )

    def place(self, path: YamlPath) -> Place:
        """Where `path` is written, with the last line of its value (a pool written as a block
        spans its lines): a change on any of them is a change to it."""
        where = self.locate(path)
        n = len(path)
        lines = [
            loc.line
            for table in (self.values, self.keys)
            for p, loc in table.items()
            if p[:n] == path and loc.file == where.file
        ]
        return Place(where, json_path(path), max([where.line, *lines]))

    def get(self, *path: str | int, default: Any = None) -> Any:
        node: Any = self.data
        for part in path:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
                continue
            if isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
                continue
            return default
        return node


# Maps that are one value, replaced whole: a label selector. Merged key by key, the catalog's
# `exporter.podLabels` (its own manifest's pod labels) and a vendor file's (the labels of an
# exporter installed another way) would select pods that carry both, which none does.
WHOLE_MAPS = frozenset({"podLabels"})


def merge_data(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            merge = key in base and key not in WHOLE_MAPS
            out[key] = merge_data(base[key], value) if merge else copy.deepcopy(value)
        return out
    return copy.deepcopy(over)


def _replaced_paths(over: Any, path: YamlPath, base: Any) -> list[YamlPath]:
    """Paths where `over` replaces (rather than merges into) `base`."""
    whole = bool(path) and path[-1] in WHOLE_MAPS
    if isinstance(over, dict) and isinstance(base, dict) and not whole:
        out: list[YamlPath] = []
        for key, value in over.items():
            out.extend(_replaced_paths(value, (*path, key), base.get(key)))
        return out
    return [path]


def merge_docs(base: Doc, over: Doc) -> Doc:
    replaced = _replaced_paths(over.data, (), base.data)

    def keep(p: YamlPath) -> bool:
        return not any(p[: len(r)] == r for r in replaced)

    values = {p: loc for p, loc in base.values.items() if keep(p)}
    values.update({p: loc for p, loc in over.values.items() if p})
    keys = {p: loc for p, loc in base.keys.items() if keep(p)}
    keys.update(over.keys)
    if () in base.values:
        values[()] = base.values[()]
    elif () in over.values:
        values[()] = over.values[()]
    sources = base.sources + tuple(s for s in over.sources if s not in base.sources)
    catalog_at = base.catalog_at or over.catalog_at
    return Doc(merge_data(base.data, over.data), values, keys, sources, catalog_at)
