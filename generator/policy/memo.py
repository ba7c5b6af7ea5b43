"""Each view's check findings, kept by what the view holds: a view that did not change is not
checked again.

A values check is a function of one view (policy/checks.py), of the generator's code and of the
few facts of the installed tools that checks read (`salt`). The key of a view's findings is a
digest of all of that: every field of the view's fleet, vendors, pools, teams and cluster, and
each one's merged values with their source locations (a finding quotes them, so a line that
moved changes the key). One team's edit in an environment of clusters changes only the views
of the clusters whose share of that team changed; the others' findings come from here.

Entries are marshal data, one file per view (filecache.Entries), written only by a run that may
write (`render --check` writes nothing).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import marshal
import operator
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from generator.findings import Finding, Location, Place, Severity
from generator.toolchain import schemas
from generator.values.filecache import MARSHAL_FORMAT, Entries, code_digest
from generator.values.loader import Loaded
from generator.values.merge import Doc
from generator.values.model import FleetView, Team, Values, Vendor

FOLDER = "checks"  # under validate's cache folder
VIEWS_FOLDER = "views"  # under validate's cache folder: the views' digests (Digests.recall)


@functools.cache
def salt() -> str:
    """What checks read besides the view: the code and the libraries it runs
    (filecache.code_digest), and the Kubernetes versions whose schemas the tools folder has
    laid out (VER001)."""
    return "\0".join([code_digest(), *schemas.k8s_schema_versions()])


_PLAIN = frozenset({str, int, float, bool, type(None)})


@functools.cache
def _fields(kind: type) -> tuple[str, ...]:
    """The fields of a model dataclass: what it holds."""
    if not dataclasses.is_dataclass(kind):
        raise TypeError(f"cannot digest a {kind.__name__}: add it to memo.Digests.canon")
    return tuple(f.name for f in dataclasses.fields(kind))


class Digests:
    """Canonical data of a view. The location tables of a team's or vendor's values, and a
    vendor's values whole (its Doc), are shared by every cluster's view of it: each is digested
    once per run; and a view's canonical form is made once per run, for the checks' memo and
    the rules' memo alike (validate hands both the same Digests)."""

    def __init__(self) -> None:
        self.tables: dict[int, tuple[object, bytes]] = {}  # id -> (the table, kept alive; digest)
        # id(doc) -> (the Doc, kept alive; the digest of its canonical form), for vendors'
        # Docs. At 20 clusters a vendor's Doc (about 90 KB of marshal data with its catalog
        # entry) is one object in all 21 views: written once, not once per view (the 21 views'
        # forms 20.5 MB -> 8.9 MB at 500 teams; 0.26 -> 0.21 CPU-s a run). A team's Doc is
        # its own in each cluster (its share): a digest each would cost more than it saves.
        self.docs: dict[int, tuple[Doc, bytes]] = {}
        # id(view) -> (the view, kept alive so that its id stays its own; its digest: of its
        # parts' digests, `_view_digest`)
        self.views: dict[int, tuple[FleetView, bytes]] = {}
        # id -> (the object, kept alive; its digest): teams (`team`) and views without their
        # teams (`rest`)
        self.teams: dict[int, tuple[Team, bytes]] = {}
        self.rests: dict[int, tuple[FleetView, bytes]] = {}
        # Where the views' digests of a values tree are kept by its fingerprint (recall), the
        # entry read, and the entry of the teams' and the views' without teams by their
        # sources: a run of the same values (validate after render) takes the views' digests,
        # and a run after one team's edit makes that team's alone.
        # The parts' keys by their sources (`_sources_of`: 11,000 at 20 x 500), made once for
        # recall and keep.
        self._kept: _Kept | None = None

    def recall(self, loaded: Loaded, folder: Path | None, write: bool) -> None:
        """Take, from `folder`, the digests of `loaded`'s views kept by an earlier load with its
        fingerprint (loader.Loaded.fingerprint: the same files and code make the same views),
        and those of its teams and of its views without their teams kept by their sources
        (loader.Loaded.team_sources: every file but the teams' and the team's own;
        loader.Loaded.rest_source: every file but the teams', with the view's retired
        namespaces), whatever else changed: after one team's edit a view's digest is made of
        its parts', all but that team's taken from here. Only the objects `loaded` holds, by
        identity: a view made from them later (another object) is digested from what it
        holds."""
        entries = Entries(folder, write)
        table: dict[str, bytes] = {}
        if loaded.fingerprint:
            found = entries.get(loaded.fingerprint)
            table = found if isinstance(found, dict) else {}
        kept = entries.get(SOURCES_ENTRY) if loaded.rest_source else None
        by_source: dict[str, bytes] = kept if isinstance(kept, dict) else {}
        sources = _sources_of(loaded)
        self._kept = (entries, loaded, table, by_source, sources)
        for view in _own(loaded.values):
            known = table.get(view.key)
            if type(known) is bytes:
                self.views.setdefault(id(view), (view, known))
        for source, obj, known_by in sources:
            known = by_source.get(source)
            if type(known) is bytes:
                known_by(self).setdefault(id(obj), (obj, known))

    def keep(self) -> None:
        """Keep the digests of the recalled load's views made this run for the next load with
        its fingerprint, and its teams' and its views' without teams by their sources (those
        not digested this run: none kept); drop the other entries."""
        if self._kept is None:
            return
        entries, loaded, table, by_source, parts = self._kept
        fingerprint = loaded.fingerprint
        now: dict[str, bytes] = {}
        for view in _own(loaded.values):
            known = self.views.get(id(view))
            if known is not None and known[0] is view:
                now[view.key] = known[1]
        if fingerprint and now and now != table:
            entries.put(fingerprint, now)
        sources: dict[str, bytes] = {}
        for source, obj, known_by in parts:
            known = known_by(self).get(id(obj))
            if known is not None and known[0] is obj:
                sources[source] = known[1]
        if sources and sources != by_source:
            entries.put(SOURCES_ENTRY, sources)
        entries.save()  # the entries recall read stay: Entries.get marked them used

    def table(self, table: dict[Any, Location]) -> bytes:
        known = self.tables.get(id(table))
        if known is None:
            rows = [(p, loc.file, loc.line, loc.column) for p, loc in table.items()]
            known = (table, hashlib.sha256(marshal.dumps(rows, MARSHAL_FORMAT)).digest())
            self.tables[id(table)] = known
        return known[1]

    def doc(self, doc: Doc) -> bytes:
        """The digest of a Doc's canonical form (`_form`), once per run. A field of the model
        that holds a Doc holds nothing else, so its digest can stand for it in the view's
        form."""
        known = self.docs.get(id(doc))
        if known is None:
            form = self._form(doc)
            known = (doc, hashlib.sha256(marshal.dumps(form, MARSHAL_FORMAT)).digest())
            self.docs[id(doc)] = known
        return known[1]

    def team(self, team: Team) -> bytes:
        """The digest of a team's canonical form (as a view holds it: its share), once per
        run (render/teammemo.py keys a team's build by it)."""
        known = self.teams.get(id(team))
        if known is None:
            known = self.teams[id(team)] = (team, self._team_digest(team))
        return known[1]

    def _view_digest(self, view: FleetView) -> bytes:
        teams = [self.team(team) for team in view.teams]
        blob = marshal.dumps(("FleetView", self.rest(view), teams), MARSHAL_FORMAT)
        return hashlib.sha256(blob).digest()

    def _team_digest(self, team: Team) -> bytes:
        return hashlib.sha256(marshal.dumps(self.canon(team), MARSHAL_FORMAT)).digest()

    def rest(self, view: FleetView) -> bytes:
        """The digest of a view's canonical form without its teams: what a team's build reads
        of the view besides the team (render/teammemo.py)."""
        known = self.rests.get(id(view))
        if known is None:
            form = tuple(self.canon(getattr(view, f)) for f in _fields(FleetView) if f != "teams")
            blob = marshal.dumps(("FleetView without teams", *form), MARSHAL_FORMAT)
            known = self.rests[id(view)] = (view, hashlib.sha256(blob).digest())
        return known[1]

    def canon(self, obj: Any) -> Any:
        """`obj` as builtins only: a dataclass as its class name and fields, a Doc as its form
        (a vendor's by its digest); containers of plain values as they are (marshal writes
        them as they are). A field of the model holds one kind of container, so a dict and a
        list need no tag to tell them apart there; inside values of any shape (an exporter's
        settings) two shapes could give one form, but those values also reach the digest
        whole, as their Doc's data."""
        kind: type = type(obj)
        if kind in _PLAIN:
            return obj
        if kind is Doc:
            return self._form(obj)
        if kind is dict:
            if all(type(v) in _PLAIN for v in obj.values()):
                return obj
            return tuple((k, self.canon(v)) for k, v in obj.items())
        if kind is list or kind is tuple:
            if all(type(v) in _PLAIN for v in obj):
                return obj
            return tuple(self.canon(v) for v in obj)
        names = _fields(kind)  # a dataclass of the model
        if kind is Vendor:  # its values are one Doc in every cluster's view: by its digest
            return (kind.__name__, *(self._vendor_field(obj, f) for f in names))
        return (kind.__name__, *(self.canon(getattr(obj, f)) for f in names))

    def _vendor_field(self, vendor: Vendor, name: str) -> Any:
        value = getattr(vendor, name)
        return self.doc(value) if type(value) is Doc else self.canon(value)

    def _form(self, doc: Doc) -> tuple[Any, ...]:
        """A Doc as its data, the digests of its location tables, its sources and where its
        catalog entry is located."""
        at = doc.catalog_at
        where = None if at is None else (at.file, at.line, at.column)
        return (doc.data, self.table(doc.values), self.table(doc.keys), doc.sources, where)

    def view(self, view: FleetView, codes: Iterable[str]) -> str:
        known = self.views.get(id(view))
        if known is None:
            # Once per view: the checks', the rules' and the components' memos each ask. Of
            # its parts' digests, the view without its teams and each team (a view's canonical
            # form is megabytes of marshal data; a team's digest is kept by its sources).
            known = self.views[id(view)] = (view, self._view_digest(view))
        data = (salt(), tuple(codes), known[1])
        return hashlib.sha256(marshal.dumps(data, MARSHAL_FORMAT)).hexdigest()


Table = Callable[["Digests"], dict[int, tuple[Any, bytes]]]
# Where Digests keeps the digests of views without their teams, and of teams
_RESTS: Table = operator.attrgetter("rests")
_TEAMS: Table = operator.attrgetter("teams")


# What Digests.recall read, for keep: the folder's entries, the load, the views' digests by
# its fingerprint, the parts' by their sources, and the load's parts by their keys
_Kept = tuple[Entries, Loaded, dict[str, bytes], dict[str, bytes], list[tuple[str, Any, "Table"]]]

# The entry of the teams' digests and of the views' without their teams by their sources
# (Digests.recall), in the views' folder
SOURCES_ENTRY = hashlib.sha256(b"the teams' digests by their sources").hexdigest()


def _sources_of(loaded: Loaded) -> list[tuple[str, Any, Table]]:
    """Each view `_own` gives, as the view without its teams, by a key of its layer, of its
    sources (loader.Loaded.rest_source) and of its retired namespaces (which the teams' files
    say); and each of its teams (unless two share a name there), by a key of the layer and of
    the team's sources (loader.Loaded.team_sources)."""
    out: list[tuple[str, Any, Table]] = []
    for view in _own(loaded.values):
        if loaded.rest_source:
            retired = hashlib.sha256("\0".join(view.retired).encode()).hexdigest()
            out.append((f"\0rest\0{view.key}\0{loaded.rest_source}\0{retired}", view, _RESTS))
        names = [t.name for t in view.teams]
        if len(set(names)) != len(names):
            continue
        for team in view.teams:
            source = loaded.team_sources.get(team.name)
            if source:
                out.append((f"\0team\0{view.key}\0{team.name}\0{source}", team, _TEAMS))
    return out


def _own(values: Values) -> list[FleetView]:
    """The views of `values` by layer, but a layer held by two different objects (neither
    can stand for the other)."""
    by_key: dict[str, list[FleetView]] = {}
    for view in (values.base, *values.envs.values(), *values.hubs.values()):
        found = by_key.setdefault(view.key, [])
        if all(v is not view for v in found):
            found.append(view)
    return [views[0] for views in by_key.values() if len(views) == 1]


def row_of_finding(f: Finding) -> tuple[Any, ...]:
    loc = f.location
    also = [(p.location.file, p.location.line, p.location.column, p.path, p.last_line)
            for p in f.also]  # fmt: skip
    return (f.code, f.message, loc.file, loc.line, loc.column, f.path, f.hint, f.severity.value,
            f.envs, f.detail, f.unit, also, f.last_line)  # fmt: skip


def finding_of_row(row: tuple[Any, ...]) -> Finding:
    code, message, file, line, column, path, hint, severity, envs, detail, unit, also, last = row
    where = Location(file, line, column)
    others = tuple(Place(Location(a, b, c), p, n) for a, b, c, p, n in also)
    return Finding(
        code,
        message,
        where,
        path,
        hint,
        Severity(severity),
        tuple(envs),
        detail,
        unit,
        others,
        last,
    )


class Scoped(Protocol):
    """One view's checks in three parts by what they read (policy/checks.py): each part's
    codes, and how to run it."""

    whole_codes: list[str]  # the checks that read the whole view
    rest_codes: list[str]  # ... no team
    team_codes: list[str]  # ... each team on its own

    def whole(self) -> list[Finding]: ...
    def no_team(self) -> list[Finding]: ...
    def team(self, team: Team) -> list[Finding]: ...


# An entry's keys for the findings of the checks that read the whole view, and for the digest of
# the view without its teams (a team's digest, in hex, is neither)
WHOLE, REST = "whole view", "view without teams"


def _parts(entry: dict[str, Any]) -> list[list[Any]]:
    """The findings' rows of a CheckMemo entry, by part."""
    return [entry[WHOLE][1], *(rows for part, rows in entry.items() if part not in (WHOLE, REST))]


class CheckMemo:
    """Findings per view by digest; without a folder it keeps nothing and every view is checked.

    One entry per view, by its layer: the findings of the checks that read the whole view, by
    the view's digest; and, with the digest of the view without its teams (`Digests.rest`),
    those of the checks that read no team, and of those that read each team on its own, team by
    team, by the team's digest (`Digests.team`). A view whose digest is the entry's is answered
    whole (its teams are not digested: the views' digests are kept by the values' fingerprint,
    Digests.recall); in another, the checks of each team run on the teams whose digest changed
    alone, and those of no team only when the view's data but its teams changed."""

    def __init__(self, folder: Path | None, write: bool, digests: Digests | None = None) -> None:
        self.entries = Entries(folder, write)
        self.digests = digests if digests is not None else Digests()
        self.checked: list[str] = []  # the keys of the views checked this run (not remembered)
        self.teams_checked = 0  # how many teams' checks ran this run

    def findings(self, view: FleetView, checks: Scoped) -> list[Finding]:
        """The findings of `view`: remembered, else found by `checks`, remembered from now on."""
        if self.entries.folder is None:  # nothing to remember them in: no digest either
            self.checked.append(view.key)
            self.teams_checked += len(view.teams)
            teams = [f for team in view.teams for f in checks.team(team)]
            return [*checks.whole(), *checks.no_team(), *teams]
        codes = (tuple(checks.whole_codes), tuple(checks.rest_codes), tuple(checks.team_codes))
        key = hashlib.sha256(marshal.dumps((salt(), *codes, view.key), MARSHAL_FORMAT)).hexdigest()
        found = self.entries.get(key)
        old: dict[str, Any] = found if isinstance(found, dict) else {}
        mark = self.digests.view(view, checks.whole_codes)
        whole = old.get(WHOLE)
        if whole is not None and whole[0] == mark:  # the same view: every finding as it was
            return [finding_of_row(tuple(r)) for rows in _parts(old) for r in rows]
        self.checked.append(view.key)
        # WHOLE: (the view's digest, the rows of the checks that read it); REST: the digest of
        # the view without its teams; "": the rows of the checks that read no team; a team's
        # digest (hex): the rows of the checks of each team on its own, on it
        rest = self.digests.rest(view).hex()
        kept = old if old.get(REST) == rest else {}
        new: dict[str, Any] = {
            WHOLE: (mark, [row_of_finding(f) for f in checks.whole()]),
            REST: rest,
        }
        new[""] = kept.get("")
        if new[""] is None:
            new[""] = [row_of_finding(f) for f in checks.no_team()]
        for team in view.teams:
            digest = self.digests.team(team).hex()
            rows = kept.get(digest)
            if rows is None:
                self.teams_checked += 1
                rows = [row_of_finding(f) for f in checks.team(team)]
            new[digest] = rows
        self.entries.put(key, new)
        return [finding_of_row(tuple(r)) for rows in _parts(new) for r in rows]

    def save(self) -> None:
        self.entries.save()


RULES_FOLDER = "rules"  # under validate's cache folder


class RuleMemo:
    """The manifest rules' findings on each unit, kept per view: a unit's findings are a
    function of its view (the values, and so the unit's rendered objects and their origins), of
    its built objects (a function of its cache key: the committed files it reads and the tools)
    and of the code. A team's unit reads, of the values, its team and the view's data that is
    not a team's (policy/manifest.py's rules find the team by the unit's name), unless a queue in
    it names another team or no team (SCH001 reads that team, or the team that takes the name
    later). So a unit is answered from here when its key is the same and its view's digest is,
    or, for a team's unit whose rules read no other team, its team's digest and that of the view
    without its teams (`Digests.rest`) are: one team's edit runs the rules again on that team's
    unit and on the view's units of no team. One entry per view, by its layer; without a folder
    it keeps nothing."""

    def __init__(
        self, folder: Path | None, write: bool, codes: list[str], digests: Digests | None = None
    ) -> None:
        self.entries = Entries(folder, write)
        self.digests = digests if digests is not None else Digests()
        self.codes = codes
        # id(view) -> (the view, kept alive so that its id stays its own; its key; its digest;
        # the units' entries remembered; those of this run)
        self._views: dict[int, tuple[FleetView, str, str, dict[str, Any], dict[str, Any]]] = {}
        self.ran: list[str] = []  # the units whose rules ran this run (not remembered)

    def _key(self, view: FleetView) -> str:
        data = (salt(), tuple(self.codes), view.key)
        return hashlib.sha256(marshal.dumps(data, MARSHAL_FORMAT)).hexdigest()

    def findings(
        self,
        view: FleetView,
        unit: str,
        unit_key: str,
        run: Callable[[], list[Finding]],
        team: Team | None = None,
        alone: Callable[[], bool] = lambda: False,
    ) -> list[Finding]:
        """The findings of the rules on `unit` checked against `view`: remembered when they
        were found with the same unit key and view, or the same team and view without teams,
        else `run()`, remembered from now on. `team`: the unit's team, if it is a team's;
        `alone()`, after `run()`: whether the rules read no other team."""
        if self.entries.folder is None:
            self.ran.append(unit)
            return run()
        known = self._views.get(id(view))
        if known is None:
            key = self._key(view)
            read = self.entries.get(key)
            mark = self.digests.view(view, self.codes)
            known = (view, key, mark, read if isinstance(read, dict) else {}, {})
            self._views[id(view)] = known
        _, _, mark, old, new = known
        # [unit key, the view's digest, (the team's, the view's without teams) or None, rows]
        hit = old.get(unit)
        if (
            hit is not None
            and hit[0] == unit_key
            and (hit[1] == mark or self._same(hit, view, team))
        ):
            new[unit] = [unit_key, mark, *hit[2:]]
            return [finding_of_row(tuple(r)) for r in hit[3]]
        self.ran.append(unit)
        found = run()
        kept = None
        if team is not None and alone():
            kept = (self.digests.team(team).hex(), self.digests.rest(view).hex())
        new[unit] = [unit_key, mark, kept, [row_of_finding(f) for f in found]]
        return found

    def _same(self, hit: list[Any], view: FleetView, team: Team | None) -> bool:
        """Whether a unit kept by its team (`hit`) has the same team and view without teams."""
        kept = hit[2]
        if kept is None or team is None or kept[0] != self.digests.team(team).hex():
            return False
        return bool(kept[1] == self.digests.rest(view).hex())

    def save(self, views: Iterable[FleetView] = ()) -> None:
        """Keep the findings of this run's units, those of the view's other units as they were
        (a run of one shard or one environment checks only some: the next run of the others
        reads them), and the entries of `views`, the views the values have now, whether or not
        this run checked a unit of theirs; drop the others."""
        for _, key, _, old, new in self._views.values():
            self.entries.put(key, {**old, **new})
        for view in views:
            self.entries.keep(self._key(view))
        self.entries.save()
