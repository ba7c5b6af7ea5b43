"""A persistent cache of YAML text per object, for validate's warm runs.

Serialising ~7,000 documents with PyYAML's representer is most of a warm re-validation; hashing
their JSON (C-accelerated) is a tenth of that. The key is the object's content, so a hit returns
exactly the text `yamlio.dump` would write; entries not used by a run are dropped on save.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from generator import __version__
from generator.values import yamlio
from generator.values.filecache import write_atomically

FORMAT = f"dump-cache-1/{__version__}"
FILE_NAME = "dump-cache.json"  # in validate's cache folder


class DumpCache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, str] = {}
        self.used: set[str] = set()
        self.misses = 0
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict) and data.get("format") == FORMAT:
                self.entries = dict(data.get("entries", {}))

    def dump(self, data: Any) -> str:
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        key = hashlib.sha1(canonical.encode()).hexdigest()
        self.used.add(key)
        text = self.entries.get(key)
        if text is None:
            text = yamlio.dump(data)
            self.entries[key] = text
            self.misses += 1
        return text

    def save(self) -> None:
        unchanged = not self.misses and len(self.used) == len(self.entries)
        if self.path is None or unchanged:
            return
        keep = {k: self.entries[k] for k in sorted(self.used)}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            text = json.dumps({"format": FORMAT, "entries": keep})
            write_atomically(self.path, text.encode("utf-8"))
        except OSError:
            pass  # only costs speed
