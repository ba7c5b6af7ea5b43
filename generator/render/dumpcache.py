"""A persistent cache of YAML text per object, for validate's warm runs.

Serialising ~7,000 documents with PyYAML's representer is most of a warm re-validation; hashing
their marshal form is a small part of that. The key is the object's content (marshal format 2:
types, values and key order; format 3 and later would add references to shared objects, so equal
documents could get different keys), so a hit returns exactly the text `yamlio.dump` would write;
entries not used by a run are dropped on save. Marshal rather than sorted JSON: a third of the time
on the 36,000 documents of 20 clusters x 500 teams (0.38 s against 1.16 s).

The entries are kept in 256 files by the key's first hex digits, and a save rewrites only the
shards whose entries changed: at 20 clusters x 500 teams the cache holds 71 MB of text, and one
team's edit changes a handful of entries (rewriting one file cost 0.9 s of each render).
"""

from __future__ import annotations

import hashlib
import json
import marshal
from pathlib import Path
from typing import Any

from generator import __version__
from generator.values import filecache, yamlio
from generator.values.filecache import write_atomically

FORMAT = f"dump-cache-3/{__version__}"  # and the code that dumps: see DumpCache._shard
MARSHAL_FORMAT = 2
FOLDER = "dump-cache"  # in validate's cache folder
SHARD_DIGITS = 2  # 256 shards
LEGACY_FILE = "dump-cache.json"  # the one-file form before shards, removed on save


def _format() -> str:
    return f"{FORMAT}/{filecache.code_digest()}"


class DumpCache:
    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self.shards: dict[str, dict[str, str]] = {}  # read on first use
        self.used: dict[str, set[str]] = {}
        self.changed: set[str] = set()  # shards with an entry added
        self.misses = 0

    def _shard(self, name: str) -> dict[str, str]:
        entries = self.shards.get(name)
        if entries is None:
            entries = {}
            if self.folder is not None:
                try:
                    data = json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    data = {}
                # The text is yamlio.dump's: an entry of other code (a change not yet in a
                # release) is not this code's text.
                if isinstance(data, dict) and data.get("format") == _format():
                    entries = dict(data.get("entries", {}))
            self.shards[name] = entries
            self.used[name] = set()
        return entries

    def dump(self, data: Any) -> str:
        key = hashlib.sha1(marshal.dumps(data, MARSHAL_FORMAT)).hexdigest()
        name = key[:SHARD_DIGITS]
        entries = self._shard(name)
        self.used[name].add(key)
        text = entries.get(key)
        if text is None:
            text = yamlio.dump(data)
            entries[key] = text
            self.changed.add(name)
            self.misses += 1
        return text

    def save(self) -> None:
        """Write each shard whose entries changed (one added, or one this run did not use), and
        remove the shard files this run used nothing of."""
        if self.folder is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for name, entries in sorted(self.shards.items()):
                used = self.used[name]
                if name not in self.changed and len(used) == len(entries):
                    continue
                keep = {k: entries[k] for k in sorted(used)}
                if not keep:
                    (self.folder / f"{name}.json").unlink(missing_ok=True)
                    continue
                text = json.dumps({"format": _format(), "entries": keep})
                write_atomically(self.folder / f"{name}.json", text.encode("utf-8"))
            for path in self.folder.iterdir():
                # any other file too: a killed run's temporary file (write_atomically's)
                if not (path.suffix == ".json" and path.stem in self.shards):
                    path.unlink(missing_ok=True)
            (self.folder.parent / LEGACY_FILE).unlink(missing_ok=True)
        except OSError:
            pass  # only costs speed
