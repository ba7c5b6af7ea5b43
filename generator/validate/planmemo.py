"""Each unit's cache key kept with what it depends on: after an edit, validate works out again
only the keys of the units whose files changed.

A unit's key (cache.unit_key) hashes every committed file its build reads, which
cache.UnitInputs finds by following its kustomizations' references. For the 10,081 units of
20 clusters x 500 teams the two were 0.4 s of every validate, of which one team's edit changes
about twenty units.

The memo keeps the tree as the run that saved it saw it (every path and its digest) and, for each
unit, its key, the digest of the salt the key was made with, and what its inputs depend on
(UnitInputs.reach: each folder the walk reached, and each path a reached kustomization names
outside those folders, there or not). Everything the walk reads lies at or below one of those
paths. A later run finds the paths whose digest changed, that came or that went, and marks each
and every folder above it (`_dirty`): a unit none of whose paths is marked reads the same files
with the same bytes, so with the same salt its key is the memo's. The others are worked out as
before. A memo that cannot be read, or of another format, only means every key is worked out.
"""

from __future__ import annotations

import hashlib
import marshal
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from generator.validate.cache import UnitInputs, load_refs, save_refs, unit_key
from generator.values.filecache import code_digest, write_atomically

FILE = "unit-plans.marshal"  # in validate's cache folder
FORMAT = "unit-plans-1"
CODE = "unit-plans.code"  # the code digest of the generator that saved the memo
SUM = 32  # bytes of a file's digest (treeindex.digest: SHA-256)

Entry = tuple[str, bytes, tuple[str, ...]]  # key, the salt's digest, the paths it depends on


class Reads:
    """Each unit's input files (UnitInputs), worked out when first asked for: a unit whose key
    the memo holds is not walked unless something reads its inputs (a cache miss, a finding's
    file)."""

    def __init__(
        self, tree: Mapping[str, str], digest_of: Callable[[str], bytes], cache_dir: Path | None
    ) -> None:
        self.tree = tree
        self.digest_of = digest_of
        self.cache_dir = cache_dir
        self._walk: UnitInputs | None = None
        self._found: dict[str, tuple[list[str], tuple[str, ...]]] = {}

    def reach(self, unit: str) -> tuple[list[str], tuple[str, ...]]:
        found = self._found.get(unit)
        if found is None:
            if self._walk is None:
                self._walk = UnitInputs(self.tree, self.digest_of, load_refs(self.cache_dir))
            found = self._found[unit] = self._walk.reach(unit)
        return found

    def __getitem__(self, unit: str) -> list[str]:
        return self.reach(unit)[0]

    def save(self) -> None:
        """Remember the kustomizations walked (cache.save_refs), if any were."""
        if self._walk is not None:
            save_refs(self.cache_dir, self._walk)


def kept(cache_dir: Path | None) -> bool:
    """Whether this generator's validate kept its units' keys in this cache folder (and so,
    most likely, their results and the values files parsed: validate/run.py loads the values
    first then). Another version's memo keeps no key (each is salted with the code digest), and
    the values load cold after an upgrade: the tools, with every unit to build, start first."""
    if cache_dir is None:
        return False
    try:
        return (cache_dir / CODE).read_bytes() == code_digest().encode()
    except OSError:
        return False


def unit_keys(
    cache_dir: Path | None,
    tree: Mapping[str, str],
    digest_of: Callable[[str], bytes],
    salts: Mapping[str, str],
    reads: Reads,
    previous: dict[str, str] | None = None,
) -> dict[str, str]:
    """The key of each unit of `salts` (unit path -> the salt of its key): the memo's where none
    of the paths it depends on changed since the memo was saved and its salt is the same, else
    worked out (`reads`). The memo is saved again for the next run when anything differs.
    `previous` gets, for each unit whose key was worked out again, the key it had in the last
    run where its salt was the same (its verdicts were made with the same tools and schemas:
    run.known_valid reuses them per document)."""
    paths = list(tree)
    sums = b"".join(digest_of(rel) for rel in paths)
    joined = "\0".join(paths)
    old = _load(cache_dir)
    dirty = _dirty(old[0], old[1], joined, sums) if old[2] else set()  # none to mark: cold
    # Kept: every unit of the memo that nothing marked, planned by this run or not (a shard's or
    # an environment's run keeps the others' entries for theirs).
    units = {unit: entry for unit, entry in old[2].items() if not any(p in dirty for p in entry[2])}
    salted = {salt: hashlib.sha256(salt.encode()).digest() for salt in set(salts.values())}
    keys: dict[str, str] = {}
    for unit, salt in salts.items():
        entry = units.get(unit)
        if entry is not None and entry[1] == salted[salt]:
            keys[unit] = entry[0]
            continue
        inputs, watched = reads.reach(unit)
        keys[unit] = unit_key(digest_of, unit, salt, inputs)
        units[unit] = (keys[unit], salted[salt], watched)
        was = old[2].get(unit)
        if previous is not None and was is not None and was[1] == salted[salt]:
            previous[unit] = was[0]
    if (joined, sums, units) != old or not kept(cache_dir):
        _save(cache_dir, joined, sums, units)
    return keys


def _dirty(old_joined: str, old_sums: bytes, joined: str, sums: bytes) -> set[str]:
    """Each path whose digest differs between the two trees, that is in one only, and every
    folder above one (and "", above them all: no unit depends on it)."""
    if old_joined == joined:
        changed: Iterable[str] = (
            rel
            for i, rel in enumerate(joined.split("\0"))
            if sums[i * SUM : (i + 1) * SUM] != old_sums[i * SUM : (i + 1) * SUM]
        )
    else:
        old = _by_path(old_joined, old_sums)
        now = _by_path(joined, sums)
        changed = [rel for rel, d in now.items() if old.get(rel) != d]
        changed += [rel for rel in old if rel not in now]
    dirty: set[str] = set()
    for rel in changed:
        while rel not in dirty:
            dirty.add(rel)
            rel = rel.rpartition("/")[0]
    return dirty


def _by_path(joined: str, sums: bytes) -> dict[str, bytes]:
    if not joined:
        return {}
    return {rel: sums[i * SUM : (i + 1) * SUM] for i, rel in enumerate(joined.split("\0"))}


NONE: tuple[str, bytes, dict[str, Entry]] = ("", b"", {})  # no memo: every path is new


def _load(cache_dir: Path | None) -> tuple[str, bytes, dict[str, Entry]]:
    """(the tree's paths joined, their digests, each unit's entry) as the last run saved them."""
    if cache_dir is None:
        return NONE
    try:
        data = marshal.loads((cache_dir / FILE).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return NONE
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return NONE
    return data["paths"], data["sums"], data["units"]


def _save(cache_dir: Path | None, joined: str, sums: bytes, units: dict[str, Entry]) -> None:
    if cache_dir is None:
        return
    blob = marshal.dumps({"format": FORMAT, "paths": joined, "sums": sums, "units": units})
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(cache_dir / FILE, blob)
        write_atomically(cache_dir / CODE, code_digest().encode())  # for kept()
    except OSError:
        pass  # a memo that cannot be written only costs speed
