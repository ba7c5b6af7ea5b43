"""Values files parsed and schema-checked once per content.

A values file whose exact bytes parsed and passed their JSON Schema before is not read again:
its data and source map come back from an entry keyed by a SHA-256 of the generator's code
(`code_digest`), the file's kind, its display path (the map's locations name it) and its bytes.
Only clean files have entries: a file with findings is parsed and checked every time, so its
findings are always those of the current code. One edit re-reads one file.

Entries are marshal data (builtins only: nothing in an entry can run code), one file each, so a
run writes only what changed. A run that may write drops the entries it did not use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import marshal
import os
import tempfile
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from generator import __version__
from generator.findings import Location
from generator.values import schema
from generator.values.yamlio import SourceMap

FOLDER = "values"  # under validate's cache folder
# The libraries whose versions decide what a values file parses to and what the checks find:
# the YAML parser, JSON Schema and its ECMA-262 patterns, Grafana's dashboard builders, and the
# Kubernetes schemas the pod checks validate with.
DEPENDENCIES = (
    "pyyaml",
    "jsonschema",
    "referencing",
    "regress",
    "grafana-foundation-sdk",
    "kubernetes-validate",
)
_SUFFIX = ".marshal"
# marshal's format 2: no references between objects (3 added them), so equal data gives equal
# bytes whichever objects happen to be shared
MARSHAL_FORMAT = 2


@functools.cache
def code_digest() -> str:
    """A digest of the generator package's files (its code and its data: the vendor catalog,
    the tools' sources) and the schemas the code builds: any change to how values are read or
    checked starts every cache keyed by it afresh."""
    digest = hashlib.sha256(__version__.encode())
    package = resources.files("generator")
    todo = [package]
    sources = []
    while todo:
        folder = todo.pop()
        for item in folder.iterdir():
            if item.is_dir():
                if item.name != "__pycache__":
                    todo.append(item)
            else:
                sources.append(item)
    for item in sorted(sources, key=lambda t: str(t)):
        digest.update(str(item).encode() + b"\0" + item.read_bytes() + b"\0")
    digest.update(json.dumps(schema.SCHEMAS, sort_keys=True).encode())
    for dist in DEPENDENCIES:
        try:
            digest.update(f"{dist}=={metadata.version(dist)}\0".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{dist} missing\0".encode())
    return digest.hexdigest()


def table(table: dict[Any, Location]) -> list[tuple[Any, int, int]]:
    return [(path, loc.line, loc.column) for path, loc in table.items()]


def _untable(file: str, rows: list[tuple[Any, int, int]]) -> dict[Any, Location]:
    return {path: Location(file, line, column) for path, line, column in rows}


def write_atomically(path: Path, data: bytes) -> None:
    """`data` in `path`, whole or not at all (a temporary file beside it, then renamed): a cache
    entry a killed run half wrote would be read as garbage. OSError when it cannot."""
    fd, tmp = tempfile.mkstemp(dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


class Entries:
    """A folder of marshal data by key, for caches keyed by content: read one entry at a time;
    a run that may `write` saves only its new entries and drops those it did not use. No
    folder: keeps nothing."""

    def __init__(self, folder: Path | None, write: bool) -> None:
        self.folder = folder
        self.write = write
        self.used: set[str] = set()
        self.new: dict[str, bytes] = {}

    def get(self, key: str) -> Any:
        """The entry's data, or None when there is none this code can read."""
        if self.folder is None:
            return None
        self.used.add(key)
        try:
            return marshal.loads((self.folder / (key + _SUFFIX)).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None

    def keep(self, key: str) -> None:
        """Keep the entry of `key` on save though this run did not read it."""
        self.used.add(key)

    def put(self, key: str, data: Any) -> None:
        if self.folder is not None:
            self.used.add(key)
            self.new[key] = marshal.dumps(data)

    def save(self) -> None:
        if self.folder is None or not self.write:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for key, blob in self.new.items():
                write_atomically(self.folder / (key + _SUFFIX), blob)
            for entry in self.folder.iterdir():
                # any other file too: a killed run's temporary file (write_atomically's)
                if not (entry.name.endswith(_SUFFIX) and entry.name[: -len(_SUFFIX)] in self.used):
                    entry.unlink()
        except OSError:
            pass  # a cache that cannot be written only costs speed


class FileCache:
    """Clean values files by content; a no-op without a folder."""

    def __init__(self, folder: Path | None) -> None:
        self.entries = Entries(folder, write=True)  # load() saves only when it may write

    def key(self, kind: str, display: str, raw: bytes) -> str:
        digest = hashlib.sha256(f"{code_digest()}\0{kind}\0{display}\0".encode() + raw)
        return digest.hexdigest()

    def get(self, key: str, display: str) -> tuple[Any, SourceMap] | None:
        """The data and source map a clean file with this key parsed to, or None."""
        entry = self.entries.get(key)
        if entry is None:
            return None
        data, values, keys, plain = entry
        smap = SourceMap(display, _untable(display, values), _untable(display, keys))
        smap.plain = dict(plain)
        return data, smap

    def put(self, key: str, data: Any, smap: SourceMap) -> None:
        """Keep a file that parsed and passed its schema."""
        entry = (data, table(smap.values), table(smap.keys), list(smap.plain.items()))
        self.entries.put(key, entry)

    def save(self) -> None:
        self.entries.save()
