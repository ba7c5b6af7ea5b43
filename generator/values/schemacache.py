"""Values schema validation cached by content hash.

A values file whose exact bytes passed its JSON Schema before passes again: the key is a SHA-256
of the file's kind and bytes, the schema, and the source of the generator package (so any change
to how values are read or checked starts afresh). Only clean verdicts are kept: a file with
findings is validated every time, so its findings are always those of the current code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from importlib import resources
from pathlib import Path

from generator import __version__
from generator.values import schema

FILE_NAME = "values-schema.json"


@functools.cache
def _code() -> str:
    """A digest of the generator package's Python sources and the schemas they build."""
    digest = hashlib.sha256(__version__.encode())
    package = resources.files("generator")
    todo = [package]
    sources = []
    while todo:
        folder = todo.pop()
        for item in folder.iterdir():
            if item.is_dir():
                todo.append(item)
            elif item.name.endswith(".py"):
                sources.append(item)
    for item in sorted(sources, key=lambda t: str(t)):
        digest.update(str(item).encode() + b"\0" + item.read_bytes() + b"\0")
    digest.update(json.dumps(schema.SCHEMAS, sort_keys=True).encode())
    return digest.hexdigest()


class SchemaCache:
    """Clean schema verdicts by content; a no-op without a file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.clean: set[str] = set()
        self.used: set[str] = set()
        self.loaded: set[str] = set()
        if path is None:
            return
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict) and data.get("code") == _code():
            self.loaded = set(data.get("clean", []))
            self.clean = set(self.loaded)

    def key(self, kind: str, raw: bytes) -> str:
        return hashlib.sha256(kind.encode() + b"\0" + raw).hexdigest()

    def is_clean(self, key: str) -> bool:
        if self.path is None:
            return False
        self.used.add(key)
        return key in self.clean

    def mark_clean(self, key: str) -> None:
        if self.path is not None:
            self.clean.add(key)
            self.used.add(key)

    def save(self) -> None:
        """Keep the verdicts of this run's files only; nothing to write when they are known."""
        keep = self.clean & self.used
        if self.path is None or keep == self.loaded:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"code": _code(), "clean": sorted(keep)}, fh)
            os.replace(tmp, self.path)
        except OSError:
            pass  # a cache that cannot be written only costs speed
