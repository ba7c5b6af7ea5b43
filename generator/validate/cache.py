"""Per-unit result cache keyed by a content hash of everything the tools see.

A unit's key covers its own files, the files of every base it references, the versions of the
tools and the schema sets, so a hit can only replay what the same tools said about the same bytes.
Policy rules are not cached: they also depend on values outside the unit (pools, taints).

An entry stays while one of the last KEEP_RUNS runs of its scope used it (`settle`): a run's
scope is what picks its units and keys (`--env`, `--shard K/N`, the engine, `--skip`), so a
shard's run never evicts what another shard's runs, or a whole run, still read. A scope that has
not run in the last FORGET_RUNS runs is forgotten. Everything else in the entries' folders (the
entries of earlier edits, of another code or format, the JSON entries before format 9) is
removed at the end of each run.
"""

from __future__ import annotations

import functools
import hashlib
import marshal
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from generator.kustomize import folder_index
from generator.render import treeindex
from generator.validate.stages import BUILD
from generator.values.filecache import write_atomically
from generator.vocab.objects import Obj

# 7: the charts stage keeps the repository, chart and version an Application names ("named"),
# which CHART002 holds to the view's mirrors; a verdict of 6 has no "named".
# 8: a unit's files enter its key by their SHA-256 (treeindex), not their text.
# 9: an entry is marshal data, the build's objects a marshal blob inside it (Cache).
CACHE_FORMAT = "9"


class UnitInputs:
    """Paths of every file `kustomize build` of a unit reads: the files below each kustomization
    folder it reaches, following every relative reference of its kustomization.yaml (`resources:`
    folders and files, `patches:` paths, ...) to another kustomization folder or a file.

    Line-based on purpose (no YAML parse per unit): the last token of each line that names a
    folder or file of the tree is a reference. Over-inclusion only costs cache precision. Each
    folder's references are worked out once: every cluster's unit reads the same bases.
    """

    def __init__(
        self,
        tree: Mapping[str, str],
        digest_of: Callable[[str], bytes] | None = None,
        known: Refs | None = None,
    ) -> None:
        self.tree = tree
        self.index = folder_index(tree)
        self._refs: dict[str, tuple[list[str], list[str]]] = {}  # folder -> (folders, files)
        self.digest_of = digest_of if digest_of is not None else file_digests(tree)
        # folder -> (its kustomization's digest, the paths its lines name): a kustomization
        # that did not change is neither read nor parsed again (load_refs)
        self.known: Refs = known if known is not None else {}
        self.used: Refs = {}
        self._out: dict[str, list[str]] = {}  # folder -> what it names outside itself

    def refs(self, folder: str) -> tuple[list[str], list[str]]:
        found = self._refs.get(folder)
        if found is None:
            folders: list[str] = []
            files: list[str] = []
            for ref in self._named(folder):
                if ref in self.index:
                    folders.append(ref)
                elif ref in self.tree:
                    files.append(ref)
            found = self._refs[folder] = (folders, files)
        return found

    def _named(self, folder: str) -> list[str]:
        """The paths the lines of the folder's kustomization name (whether or not they are in
        the tree: that is checked each run)."""
        path = folder + "/kustomization.yaml"
        if path not in self.tree:
            return []
        digest = self.digest_of(path)
        hit = self.known.get(folder)
        if hit is not None and hit[0] == digest:
            named = hit[1]
        else:
            named = []
            for line in self.tree[path].splitlines():
                token = line.strip().rsplit(" ", 1)[-1].strip("'\"")
                if not token or token.startswith("/") or "://" in token:
                    continue
                named.append(join(folder, token))
        self.used[folder] = (digest, named)
        return named

    def __call__(self, unit_path: str) -> list[str]:
        return self.reach(unit_path)[0]

    def reach(self, unit_path: str) -> tuple[list[str], tuple[str, ...]]:
        """(the unit's input files, what they depend on: each folder reached, and each path a
        reached kustomization names outside those folders). Everything this reads of the tree
        lies at or below one of the latter: the files below a reached folder, whether a named
        path is a file or a kustomization folder, a named file's bytes (planmemo.py)."""
        seen: set[str] = set()
        todo = [unit_path]
        files: set[str] = set()
        while todo:
            folder = todo.pop()
            if folder in seen:
                continue
            seen.add(folder)
            files.update(self.index.get(folder, []))
            folders, named = self.refs(folder)
            todo.extend(folders)
            files.update(named)
        outside = {
            path
            for folder in seen
            for path in self._named_out(folder)
            if path not in seen and not _below_any(path, seen)
        }
        return sorted(files), tuple(sorted(seen | outside))

    def _named_out(self, folder: str) -> list[str]:
        """The paths the folder's kustomization names outside the folder itself, once per
        folder (most name a file of their own or a base that the walk reaches)."""
        found = self._out.get(folder)
        if found is None:
            used = self.used.get(folder)
            named = used[1] if used is not None else []
            found = self._out[folder] = [p for p in named if p and not _below_any(p, {folder})]
        return found


def _below_any(path: str, folders: set[str]) -> bool:
    """Whether `path` is one of `folders` or lies below one."""
    while path:
        if path in folders:
            return True
        path = path.rpartition("/")[0]
    return False


Refs = dict[str, tuple[bytes, list[str]]]
REFS_FILE = "unit-refs.marshal"  # in validate's cache folder


def load_refs(cache_dir: Path | None) -> Refs:
    """What UnitInputs remembered of each kustomization; {} without a cache or a readable one."""
    if cache_dir is None:
        return {}
    try:
        data = marshal.loads((cache_dir / REFS_FILE).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        return {}
    refs: Refs = data["refs"]
    return refs


def save_refs(cache_dir: Path | None, inputs: UnitInputs) -> None:
    """Remember the kustomizations this run read, when they differ from what was known."""
    if cache_dir is None or inputs.used == inputs.known:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        blob = marshal.dumps({"format": CACHE_FORMAT, "refs": inputs.used})
        write_atomically(cache_dir / REFS_FILE, blob)
    except OSError:
        pass  # a cache that cannot be written only costs speed


def file_digests(
    tree: Mapping[str, str], sums: Mapping[str, bytes] | None = None
) -> Callable[[str], bytes]:
    """The SHA-256 of each file of `tree` by path: from a scanned tree's index (the file is not
    read when its stat did not change), else from `sums` (digests known to hold for `tree`'s
    texts: writer.known_sums), else of its text, each once."""
    if isinstance(tree, treeindex.Files):
        return tree.digest
    known: dict[str, bytes] = dict(sums) if sums is not None else {}

    def of(rel: str) -> bytes:
        found = known.get(rel)
        if found is None:
            found = known[rel] = treeindex.digest(tree[rel].encode("utf-8"))
        return found

    return of


def unit_key(
    digest_of: Callable[[str], bytes], unit_path: str, salt: str, inputs: list[str]
) -> str:
    digest = _salted(salt).copy()
    for rel in inputs:
        # Paths relative to the unit: the same unit content in another checkout hits too.
        folder, _, name = rel.rpartition("/")
        up = _relpath(folder, unit_path)
        digest.update((name if up == "." else f"{up}/{name}").encode() + b"\0")
        digest.update(digest_of(rel))
    return digest.hexdigest()


@functools.lru_cache(maxsize=8)
def _salted(salt: str) -> hashlib._Hash:
    """The hash state after the cache's format and the salt, once per salt: a salt holds the
    CRD schemas' index (17 KB), hashed again for each of 10,000 units it was 0.1 s of every
    validate at 20 clusters x 500 teams. One salt per Kubernetes version of the fleet."""
    digest = hashlib.sha256()
    digest.update(f"{CACHE_FORMAT}\0{salt}\0".encode())
    return digest


@functools.lru_cache(maxsize=65536)
def _relpath(folder: str, start: str) -> str:
    """posixpath.relpath for two folders of the tree (relative, normalised), once per (folder,
    unit): a unit's files share a few folders. Without relpath's abspath calls: they were a
    second of an edit's validate at 10,000 units."""
    to, base = folder.split("/"), start.split("/")
    common = 0
    for a, b in zip(to, base, strict=False):
        if a != b:
            break
        common += 1
    return "/".join([".."] * (len(base) - common) + to[common:]) or "."


def join(folder: str, ref: str) -> str:
    """posixpath.normpath(posixpath.join(folder, ref)) for a folder of the tree and a relative
    reference from its kustomization; "" for one that climbs out of the tree (the tree has no
    such path)."""
    parts = folder.split("/") if folder else []
    for part in ref.split("/"):
        if part == "..":
            if not parts:
                return ""
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts) or "."


class Cache:
    """Each unit key's results ({stage: verdicts}), one marshal file per key. The build's
    objects (megabytes for a cluster's monitoring unit) are kept inside the entry as a marshal
    blob of their own, parsed only when something reads them (`built_objects`): after an edit
    validate reads every unit's verdicts, but the objects only of the units whose stages found
    something or whose rules run again. One file per entry: the verdicts and the objects they
    were found on are written and read together, never one without the other."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder

    def get(self, key: str) -> dict[str, Any] | None:
        if self.folder is None:
            return None
        path = self.folder / key[:2] / f"{key}{_SUFFIX}"
        try:
            data = marshal.loads(path.read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if self.folder is None:
            return
        folder = self.folder / key[:2]
        entry = dict(value)
        build = entry.get(BUILD)
        if isinstance(build, dict) and isinstance(build.get("docs"), list):
            docs = build["docs"]
            entry[BUILD] = {**build, "docs": marshal.dumps(docs), "objects": len(docs)}
        try:
            blob = marshal.dumps(entry)
            folder.mkdir(parents=True, exist_ok=True)
            write_atomically(folder / f"{key}{_SUFFIX}", blob)
        except (OSError, ValueError):
            pass  # a cache that cannot be written (or data marshal cannot hold) costs speed


_SUFFIX = ".marshal"

USES_FILE = "unit-uses.marshal"  # in validate's cache folder: the keys each scope's runs used
USES_FORMAT = "unit-uses-1"
# The run before too: switching between two branches (a pull request's and its base) finds
# both sets of units cached.
KEEP_RUNS = 2
# Runs of other scopes after which a scope is forgotten (at least twice a run's shard count, so
# N shards taking turns in one folder keep theirs).
FORGET_RUNS = 16
_HEX = frozenset("0123456789abcdef")

# scope -> (the sequence number of its last run, the keys of each of its last runs, newest first)
Uses = dict[str, tuple[int, list[list[bytes]]]]


def _load_uses(cache_dir: Path) -> tuple[int, Uses]:
    try:
        data = marshal.loads((cache_dir / USES_FILE).read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return 0, {}
    if not isinstance(data, dict) or data.get("format") != USES_FORMAT:
        return 0, {}
    uses: Uses = data["scopes"]
    return int(data["runs"]), uses


def settle(cache_dir: Path | None, scope: str, used: Iterable[str], shards: int = 1) -> None:
    """Record that a run of `scope` used the entries `used` (read or written), then remove
    every entry of the folder that no scope's last KEEP_RUNS runs used, and any other file in
    the entries' folders. Only costs speed when it cannot."""
    if cache_dir is None:
        return
    runs, uses = _load_uses(cache_dir)
    runs += 1
    mine = sorted(bytes.fromhex(key) for key in set(used))
    _, before = uses.get(scope, (0, []))
    uses[scope] = (runs, [mine, *before][:KEEP_RUNS])
    horizon = runs - max(FORGET_RUNS, 2 * shards)
    uses = {name: kept for name, kept in uses.items() if kept[0] > horizon}
    keep = {key.hex() + _SUFFIX for _, lists in uses.values() for keys in lists for key in keys}
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        blob = marshal.dumps({"format": USES_FORMAT, "runs": runs, "scopes": uses})
        write_atomically(cache_dir / USES_FILE, blob)
        # os.scandir, not Path.iterdir: its entries know their type without a stat each
        for folder in os.scandir(cache_dir):
            if len(folder.name) == 2 and set(folder.name) <= _HEX and folder.is_dir():
                for entry in os.scandir(folder.path):
                    if entry.name not in keep:
                        os.unlink(entry.path)
    except OSError:
        pass  # the next run removes what this one could not


def built_objects(build: dict[str, Any]) -> list[Obj]:
    """The objects of a build stage's result: as built this run, or parsed from a cached
    entry's blob."""
    docs = build.get("docs", [])
    found: list[Obj] = marshal.loads(docs) if isinstance(docs, bytes) else docs
    return found


def object_count(build: dict[str, Any]) -> int:
    """How many objects a build stage's result holds, without parsing a cached entry's blob."""
    docs = build.get("docs", [])
    return int(build["objects"]) if isinstance(docs, bytes) else len(docs)
