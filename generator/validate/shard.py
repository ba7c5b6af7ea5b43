"""Split validate across machines: `--shard K/N` checks a stable 1/N of the committed units.

A unit goes to shard `sha256(key) mod N`, its key being the unit's name without the environment,
so every environment of a unit (and the bases they share) lands in one shard, and a unit stays in
its shard when others come and go. In an environment of several clusters the key is
`<cluster>/<unit>`: a cluster's units spread over the shards as the teams do, and the same
cluster's unit in every environment stays together. Values checks and drift are global and
cheap: every shard runs them, and `report.merge` keeps one copy of each identical finding.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

from generator.errors import UsageError

_SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


def parse(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4); shards count from 1."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise UsageError(f"--shard {text!r}: expected K/N with 1 <= K <= N, e.g. 2/4")
    return int(match.group(1)), int(match.group(2))


def shard_of(unit_name: str, count: int, cluster: str = "") -> int:
    """The shard (1..count) that validates every environment's unit of this name (of this
    cluster, for a cluster of an environment that declares clusters)."""
    key = f"{cluster}/{unit_name}" if cluster else unit_name
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def fingerprint(committed: Mapping[str, str], values_dir: Path) -> str:
    """What the shards of one run must agree on: the committed output and the values."""
    digest = hashlib.sha256()
    for rel, text in sorted(committed.items()):
        digest.update(f"{rel}\0{text}\0".encode())
    for path in sorted(p for p in values_dir.rglob("*") if p.is_file()):
        digest.update(path.relative_to(values_dir).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
