"""Each team's workload objects, kept by what they are made of: a view that changed builds again
only the teams whose values changed.

A team's build (builders/workloads.py `team_build`: its workload objects, their pod
templates, what they hold of each vendor and of each pool model) reads the team as the view
holds it (its share of the environment in a cluster) and the view's other data (the fleet's
values, the vendors and their pools, the cluster), never another team of the view (every
function it reaches was read for this on 2026-12-07, and workloads/usage.py `team_usage` and
`team_pinned` with workloads/phases.py `local_plans` and `plan_service` on 2026-12-08: none
reads `view.teams`, and the workload model's own cache is by team name). So its key is a
digest of that team, of the view without its teams, and of what the checks salt with
(policy/memo.py `salt`: the generator's code, the schemas' versions). One team's edit in a view
of 1,000 teams changes that view's digest, and its components and checks run again
(render/buildmemo.py, policy/memo.py); of its 1,000 team builds, 999 are read back from here
instead of made.

One entry per view (by its layer), holding each team's key and its build as marshal data; read
when the view's first team build is asked for (a view whose components are kept never asks).
A pod template is the same object as the part of the workload object it comes from (a check
that reads one reads the other): kept as where it lies in its object, and put back there. A
build marshal cannot write is made each run. A run that may write keeps the entries of the
views it has and removes the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from generator.builders.build import PodRef, TeamBuild
from generator.policy import memo as checks_memo
from generator.policy.memo import Digests
from generator.values.filecache import MARSHAL_FORMAT, write_atomically
from generator.values.model import FleetView, Team
from generator.vocab.objects import Obj
from generator.workloads.usage import Pinned, Usage

FOLDER = "teams"  # under validate's cache folder
SUFFIX = ".marshal"
FORMAT = "teams-2"  # a build: (objects, pods, usage, pinned)

Where = tuple[int, tuple[str | int, ...]] | None  # (object's index, path in it); None: apart


def _path_to(target: Any, node: Any, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """Where `target` (by identity) lies in `node`, or None."""
    if node is target:
        return path
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list):
                found = _path_to(target, value, (*path, key))
                if found is not None:
                    return found
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if isinstance(value, dict | list):
                found = _path_to(target, value, (*path, i))
                if found is not None:
                    return found
    return None


def _where(spec: Any, objects: list[Obj]) -> Where:
    for i, obj in enumerate(objects):
        found = _path_to(spec, obj, ())
        if found is not None:
            return (i, found)
    return None


def _at(obj: Any, path: Iterable[str | int]) -> Any:
    for step in path:
        obj = obj[step]
    return obj


def encode(build: TeamBuild) -> bytes:
    """A team's build as marshal data (ValueError: a value marshal cannot write)."""
    pods = []
    for pod in build.pods:
        where = _where(pod.spec, build.objects)
        apart = pod.spec if where is None else None
        pods.append((pod.kind, pod.name, where, apart, pod.path, pod.count))
    usage = [
        (u.vendor, u.namespace, u.services, u.largest_job, u.quota, u.jobs_total, u.detail, u.blame)
        for u in build.usage
    ]
    pinned = [(p.vendor, p.models, p.devices, p.is_job, p.path, p.label) for p in build.pinned]
    return marshal.dumps((build.objects, pods, usage, pinned), MARSHAL_FORMAT)


def decode(blob: bytes, team: Team) -> TeamBuild:
    """A build `encode` wrote, its pod templates, usage and pinned parts `team`'s (the team
    object of this run)."""
    objects, pods, usage, pinned = marshal.loads(blob)
    refs = [
        PodRef(
            team,
            kind,
            name,
            spec if where is None else _at(objects[where[0]], where[1]),
            tuple(path),
            count,
        )
        for kind, name, where, spec, path, count in pods
    ]
    uses = tuple(
        Usage(vendor, ns, services, largest, quota, total, detail, tuple(blame), team.doc)
        for vendor, ns, services, largest, quota, total, detail, blame in usage
    )
    pins = tuple(
        Pinned(team, vendor, tuple(models), devices, is_job, tuple(path), label)
        for vendor, models, devices, is_job, path, label in pinned
    )
    return TeamBuild(objects, refs, uses, pins)


class ViewTeams:
    """The kept builds of one view's teams: what Build.team asks before it builds a team."""

    def __init__(self, memo: TeamMemo, view: FleetView) -> None:
        self.memo = memo
        self.view = view
        self.name = "view-" + hashlib.sha256(view.key.encode()).hexdigest()[:24]
        self._old: dict[str, tuple[str, bytes]] | None = None  # read when first asked
        self.new: dict[str, tuple[str, bytes]] = {}  # this run's: made, or read back
        self.made = False  # a team built this run (not read back): the entry changes
        self._rest: bytes | None = None

    def _key(self, team: Team) -> str:
        if self._rest is None:
            self._rest = self.memo.digests.rest(self.view)
        data = (FORMAT, checks_memo.salt(), self._rest, self.memo.digests.team(team))
        return hashlib.sha256(marshal.dumps(data, MARSHAL_FORMAT)).hexdigest()

    def _entries(self) -> dict[str, tuple[str, bytes]]:
        if self._old is None:
            self._old = self.memo.read(self.name)
        return self._old

    def get(self, team: Team) -> TeamBuild | None:
        """The team's kept build, when its key is the same."""
        key = self._key(team)
        hit = self._entries().get(team.name)
        if hit is None or hit[0] != key:
            return None
        try:
            found = decode(hit[1], team)
        except (EOFError, ValueError, TypeError, IndexError, KeyError):
            return None  # built instead
        self.new[team.name] = hit
        return found

    def put(self, team: Team, build: TeamBuild) -> None:
        self.made = True
        with contextlib.suppress(ValueError):  # a value marshal cannot write: built each run
            self.new[team.name] = (self._key(team), encode(build))

    def entry(self) -> dict[str, tuple[str, bytes]] | None:
        """What to keep of the view's teams when it changed this run: this run's builds and the
        kept ones of the teams it still has and did not ask for; None when nothing changed."""
        if not self.made:
            return None
        names = {t.name for t in self.view.teams}
        kept = {n: e for n, e in self._entries().items() if n in names and n not in self.new}
        return {**kept, **self.new}


class TeamMemo:
    """Team builds per view; without a folder it keeps nothing (every team is built)."""

    def __init__(self, folder: Path | None, write: bool, digests: Digests) -> None:
        self.folder = folder
        self.write = write
        self.digests = digests
        self.views: list[ViewTeams] = []

    def of(self, view: FleetView) -> ViewTeams | None:
        if self.folder is None:
            return None
        found = ViewTeams(self, view)
        self.views.append(found)
        return found

    def read(self, name: str) -> dict[str, tuple[str, bytes]]:
        assert self.folder is not None
        try:
            fmt, entries = marshal.loads((self.folder / (name + SUFFIX)).read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return {}
        return entries if fmt == FORMAT and isinstance(entries, dict) else {}

    def save(self) -> None:
        """Write the entries of the views whose teams were built this run; remove the entries
        of views this run does not have (and any other file: a killed run's temporary one)."""
        if self.folder is None or not self.write:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for view in self.views:
                entry = view.entry()
                if entry is not None:
                    blob = marshal.dumps((FORMAT, entry), MARSHAL_FORMAT)
                    write_atomically(self.folder / (view.name + SUFFIX), blob)
            keep = {view.name + SUFFIX for view in self.views}
            for path in self.folder.iterdir():
                if path.name not in keep:
                    path.unlink()
        except OSError:
            pass  # only costs speed: those teams are built again next run
