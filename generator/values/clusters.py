"""An environment's clusters: which pools, quotas and workloads go to which cluster.

An environment that declares `clusters` is split into one view per cluster, and every builder and
check then runs on a cluster's view exactly as on a whole environment's: capacity, placement,
topology and scheduling are per cluster because the view holds only that cluster's pools and the
quotas and workloads placed there (docs/multi-cluster.md).

- A pool is in exactly one cluster: the one that lists it (`vendor/pool`, or `vendor` for all of
  a vendor's pools).
- A team's quota for a vendor goes to the cluster with that vendor's pools. Where the vendor has
  pools in several clusters the team states the split (`quota: {nvidia: {west: 8, east: 4}}`).
  A quota per model (`quota: {nvidia: {H100: 8, A100: 4}}`: no key names a cluster) goes model
  by model to the one cluster with that model's pools.
- A workload runs in the cluster it names (`cluster`), else in the one cluster that has pools of
  every vendor (and model) it asks for. None, or several without a name, is a finding: the
  generator never guesses a cluster, and splits no workload over two but a dual-track service
  that says how its traffic crosses clusters (`crossCluster`): its tracks are placed one by one
  (`tracks_placed`), and it goes to each of their clusters and its ingress. A workload
  that asks for what no cluster has has no cluster to find, and a placement finding would be
  the same mistake said twice, one that sends the user looking for a cluster. A vendor the
  environment does not have: the workload is in the cluster it names, else in each cluster
  with the rest of what it asks for, where the workload checks say what is wrong with the
  vendor (nothing, for a vendor whose own values were refused: their findings say why), as a
  quota for such a vendor is in every cluster. A model no pool of its vendor is: the workload is
  in no cluster, and CLU008 at the model names the vendor's models and their clusters (its pods'
  POD003 in the base layer, the same mistake, is not said again: `unrestated`). Where another
  environment declares no clusters and misses the model at the same line too, the one CLU008
  says what each environment offers (`model_findings`), and its pods' POD003 there is not said.
- A team is in every cluster where it has quota or a workload (every cluster when it has neither).

What decides placement is read from the merged values here, before the workloads are resolved:
each cluster's view must already hold only its own workloads when generator/workloads/ reads them.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from generator.findings import BASE_LAYER, CodeInfo, Finding, Location, did_you_mean
from generator.values.merge import Doc, merge_docs
from generator.values.model import Cluster, Crossing, FleetView, Team, Vendor
from generator.values.yamlio import YamlPath, json_path

WORKLOAD_SECTIONS = ("jobs", "services")


@dataclass(frozen=True)
class _Need:
    """One vendor a workload's pods ask for, and the models they accept (() for any)."""

    vendor: str
    models: tuple[str, ...]
    # Inside the workload's values: the pods that ask (a track, a task; () for the job), and
    # where the first of `models` is written (the job's, for a task that inherits it).
    part: YamlPath = ()
    model_at: YamlPath = ()

    def met_by(self, vendor: Vendor | None) -> bool:
        if vendor is None:
            return False
        return not self.models or any(p.model in self.models for p in vendor.pools)

    def __str__(self) -> str:
        return f"{self.vendor} ({' or '.join(self.models)})" if self.models else self.vendor


@dataclass(frozen=True)
class Unmet:
    """A workload's model that no pool of its vendor is, in one environment: where it is
    written, and the models of the vendor's pools there, each with its clusters (none in an
    environment without clusters, or for a pool in no cluster)."""

    env: str
    clustered: bool  # whether the environment declares clusters
    who: str  # "service 'serve' track 'nvidia'"
    model: str
    vendor: str
    location: Location
    path: str
    offer: tuple[tuple[str, tuple[str, ...]], ...]  # (model, its clusters), by model

    @property
    def listed(self) -> str:
        if not self.clustered:
            return ", ".join(m for m, _ in self.offer)
        return ", ".join(f"{m} in {' and '.join(where) or 'no cluster'}" for m, where in self.offer)


def _who(what: str, name: str, need: _Need) -> str:
    """The pods of `need` in the workload `name`: "service 'serve' track 'nvidia'"."""
    kind, part = need.part[:1], need.part[1:]
    return f"{what} {name!r}" + (
        f" track {part[0]!r}" if kind == ("tracks",) else f" task {part[0]!r}" if part else ""
    )


def _unmet(
    env: str,
    where: dict[str, list[str]],
    team: Team,
    what: str,
    path: YamlPath,
    need: _Need,
    *,
    clustered: bool,
) -> Unmet:
    """`need`'s first model, none of its vendor's pools, in `env` (workload `path` of `team`);
    `where`: each model of the vendor's pools there, with its clusters."""
    at = (*path, *need.model_at)
    return Unmet(
        env,
        clustered,
        _who(what, str(path[1]), need),
        need.models[0],  # the one at model_at: a fallbackModel is SCH005's
        need.vendor,
        team.doc.locate(at),
        json_path(at),
        tuple((m, tuple(c)) for m, c in sorted(where.items())),
    )


def _need(vendor: str, part: dict[str, Any], job: dict[str, Any], at: YamlPath) -> _Need:
    """What the pods of `part` (at `at` in the workload) ask for: its model and its
    fallbackModel, else the job's (as generator/workloads/model.py resolves them: a task
    inherits its job's; a service has none of its own, so a track passes {})."""
    found: list[str] = []
    model_at: YamlPath = ()
    for key in ("model", "fallbackModel"):
        own = key in part
        value = part.get(key, job.get(key, ""))
        if value:
            found.append(str(value))
            model_at = model_at or ((*at, key) if own else (key,))
    return _Need(vendor, tuple(found), at, model_at)


def needs(section: str, raw: dict[str, Any]) -> list[_Need]:
    """What a workload's pods ask for, from its merged values."""
    if section == "services":
        return [
            _need(str(vendor), track or {}, {}, ("tracks", vendor))
            for vendor, track in sorted((raw.get("tracks") or {}).items())
        ]
    tasks = raw.get("tasks") or {}
    if tasks:
        return [
            _need(str(t["vendor"]), t, raw, ("tasks", name))
            for name, t in sorted(tasks.items())
            if t.get("vendor")
        ]
    if raw.get("vendor"):
        return [_need(str(raw["vendor"]), raw, {}, ())]
    return []


def _finding(
    code: str,
    message: str,
    doc: Doc,
    path: YamlPath,
    hint: str,
    *,
    key: bool = False,
    within: YamlPath = (),
) -> Finding:
    """A finding at `path` of `doc`; `within`: where `doc` sits in its file (for the JSON path)."""
    return Finding(code, message, doc.locate(path, key=key), json_path((*within, *path)), hint)


class _Splitter:
    def __init__(
        self, view: FleetView, clusters: Doc, findings: list[Finding], unmet: list[Unmet]
    ) -> None:
        self.view = view
        self.doc = clusters
        self.findings = findings
        self.unmet = unmet  # the models no pool is: model_findings says them, once per line
        self.names = list(clusters.data)  # as the file lists them: the first listing wins
        # (vendor, pool) -> the clusters that list it, in the order listed
        self.placed: dict[tuple[str, str], list[str]] = {}
        # (team, service) -> where its tracks run, for the services whose tracks are in
        # different clusters (crossCluster)
        self.crossing: dict[tuple[str, str], Crossing] = {}
        # The answers of `hosts` and of which clusters hold a vendor, per split: every team of
        # the environment asks the same few (its workloads' needs), 500 teams times over.
        self._hosts: dict[tuple[tuple[_Need, ...], bool], list[str]] = {}
        self._holding: dict[str, list[str]] | None = None
        # cluster -> its vendors, each with the pools placed in it (place_pools)
        self.vendors: dict[str, tuple[Vendor, ...]] = {}

    def err(
        self, code: str, message: str, doc: Doc, path: YamlPath, hint: str, *, key: bool = False
    ) -> None:
        # The environment file's `clusters` section is a doc of its own: paths say where it is.
        within: YamlPath = ("clusters",) if doc is self.doc else ()
        self.findings.append(_finding(code, message, doc, path, hint, key=key, within=within))

    def place_pools(self) -> None:
        for name in self.names:
            for i, ref in enumerate(self.doc.get(name, "pools", default=[]) or []):
                vendor_id, _, pool_name = str(ref).partition("/")
                vendor = self.view.vendor(vendor_id)
                path: YamlPath = (name, "pools", i)
                if vendor is None and vendor_id in self.view.refused:
                    continue  # its values were refused: their findings say why, not this list
                if vendor is None:
                    known = [v.id for v in self.view.vendors]
                    self.err(
                        "CLU002",
                        f"cluster {name!r} lists vendor {vendor_id!r}, which has no enabled "
                        f"values/vendors/{vendor_id}.yaml",
                        self.doc,
                        path,
                        did_you_mean(vendor_id, known, "vendors: " + ", ".join(known)),
                    )
                    continue
                pools = [p.name for p in vendor.pools]
                if pool_name and pool_name not in pools:
                    self.err(
                        "CLU002",
                        f"cluster {name!r} lists pool {ref!r}: vendor {vendor_id!r} has no pool "
                        f"{pool_name!r}",
                        self.doc,
                        path,
                        did_you_mean(pool_name, pools, f"{vendor_id}'s pools: " + ", ".join(pools)),
                    )
                    continue
                for listed in pools if not pool_name else [pool_name]:
                    where = self.placed.setdefault((vendor_id, listed), [])
                    if where and where[-1] != name:
                        self.err(
                            "CLU001",
                            f"pool {vendor_id}/{listed} is listed by clusters {where[0]!r} and "
                            f"{name!r}: a pool is in one cluster",
                            self.doc,
                            path,
                            "split the pool in values/vendors/ (one pool per cluster) and list "
                            "each part in its own cluster",
                        )
                    if name not in where:
                        where.append(name)
        for vendor in self.view.vendors:
            for pool in vendor.pools:
                if (vendor.id, pool.name) not in self.placed:
                    self.err(
                        "CLU001",
                        f"pool {vendor.id}/{pool.name} is in no cluster",
                        self.doc,
                        (),
                        f"add {vendor.id}/{pool.name} (or {vendor.id}) to the pools of the "
                        "cluster its nodes are in",
                    )

    def place_vendors(self) -> dict[str, tuple[Vendor, ...]]:
        """Each cluster's vendors, once the pools are placed: what the placement of the teams
        and their workloads reads."""
        self.vendors = {c: self.vendors_of(c) for c in self.names}
        return self.vendors

    def vendors_of(self, cluster: str) -> tuple[Vendor, ...]:
        out = []
        for vendor in self.view.vendors:
            pools = tuple(
                p for p in vendor.pools if self.placed.get((vendor.id, p.name), [""])[0] == cluster
            )
            if pools:
                out.append(dataclasses.replace(vendor, pools=pools))
        return tuple(out)

    def hosts(self, wants: list[_Need], *, models: bool = True) -> list[str]:
        """The clusters with pools for every need (of its vendor alone, without `models`),
        kept by need (callers only read the list)."""
        key = (tuple(wants), models)
        known = self._hosts.get(key)
        if known is None:
            known = self._hosts[key] = [
                c
                for c in self.names
                if all(
                    (n if models else _Need(n.vendor, ())).met_by(
                        next((v for v in self.vendors[c] if v.id == n.vendor), None)
                    )
                    for n in wants
                )
            ]
        return known

    def holding(self) -> dict[str, list[str]]:
        """vendor id -> the clusters with pools of it, in the order the file lists them."""
        if self._holding is None:
            self._holding = {}
            for c in self.names:
                for vid in dict.fromkeys(v.id for v in self.vendors[c]):
                    self._holding.setdefault(vid, []).append(c)
        return self._holding

    def team(self, team: Team) -> dict[str, Team]:
        """The team as each cluster it is in has it."""
        doc = team.doc
        quota: dict[str, dict[str, int]] = {c: {} for c in self.names}
        models: dict[str, dict[str, dict[str, int]]] = {c: {} for c in self.names}
        clusters_of = self.holding()
        holding = {vid: clusters_of.get(vid, []) for vid in (doc.get("quota", default={}) or {})}
        for vid, raw in sorted((doc.get("quota", default={}) or {}).items()):
            where = holding[vid]
            path: YamlPath = ("quota", vid)
            if self.view.vendor(vid) is None:
                # A vendor the environment does not have (disabled, unknown, or refused) keeps
                # its quota everywhere, however it splits: the quota checks say what is wrong
                # with it, in each cluster (nothing for a refused one: FleetView.refused).
                for cname in self.names:
                    quota[cname][vid] = quota_total(raw)
            elif not where:
                pass  # its pools are in no cluster: CLU001 says so, and the quota waits for it
            elif isinstance(raw, dict) and not set(raw) & set(self.names):
                # No key names a cluster: devices per model, each in the cluster of its pools.
                for model, count in sorted(raw.items()):
                    cname = self.model_cluster(team, vid, model, where)
                    if cname:
                        models[cname].setdefault(vid, {})[model] = int(count)
                        quota[cname][vid] = quota[cname].get(vid, 0) + int(count)
            elif isinstance(raw, dict):
                for cname, count in sorted(raw.items()):
                    if cname in where:
                        quota[cname][vid] = int(count)
                        continue
                    self.err(
                        "CLU004",
                        f"team {team.name}: quota for {vid} names cluster {cname!r}, which has "
                        f"no {vid} pools",
                        doc,
                        (*path, cname),
                        f"clusters with {vid} pools: " + (", ".join(where) or "none"),
                    )
            elif len(where) > 1:
                self.err(
                    "CLU004",
                    f"team {team.name}: {vid} has pools in clusters {', '.join(where)}, and the "
                    "quota does not say how it splits",
                    doc,
                    path,
                    f"give devices per cluster, e.g. quota: {{{vid}: "
                    + "{"
                    + ", ".join(f"{c}: N" for c in where)
                    + "}}",
                )
            else:
                quota[where[0]][vid] = int(raw)
        placed: dict[str, dict[str, list[str]]] = {c: {} for c in self.names}
        for section in WORKLOAD_SECTIONS:
            for name, raw in sorted((doc.get(section, default={}) or {}).items()):
                where = self.workload(team, section, name, raw or {})
                for cname in where:
                    placed[cname].setdefault(section, []).append(name)
        inside = [c for c in self.names if quota[c] or placed[c]] or self.names
        crossing = {
            svc: at for (tname, svc), at in sorted(self.crossing.items()) if tname == team.name
        }
        return {c: self._team_in(team, quota[c], models[c], placed[c], crossing) for c in inside}

    def model_cluster(
        self,
        team: Team,
        vid: str,
        model: str,
        where: list[str],
    ) -> str:
        """The one cluster with pools of `model` of vendor `vid`, for a quota per model; ""
        (and a finding) when none or several have them."""
        vendor = self.view.vendor(vid)
        if vendor is None:
            return where[0] if where else self.names[0]  # REF001 names the unknown vendor
        hosts = [
            c for c in where if any(v.id == vid and v.pool_model(model) for v in self.vendors[c])
        ]
        if len(hosts) == 1:
            return hosts[0]
        path: YamlPath = ("quota", vid, model)
        if hosts:
            self.err(
                "CLU004",
                f"team {team.name}: quota for {vid} model {model!r}, whose pools are in "
                f"clusters {', '.join(hosts)}: a quota per model goes to the one cluster of "
                "its pools",
                doc=team.doc,
                path=path,
                hint=f"give {vid} devices per cluster instead, e.g. quota: {{{vid}: "
                + "{"
                + ", ".join(f"{c}: N" for c in where)
                + "}}",
                key=True,
            )
        else:
            self.err(
                "CLU004",
                f"team {team.name}: quota for {vid} names {model!r}, which is neither a "
                f"cluster with {vid} pools nor a model of them",
                doc=team.doc,
                path=path,
                hint=f"clusters with {vid} pools: {', '.join(where) or 'none'}; models of "
                f"{vid}'s pools: {', '.join(vendor.models) or 'none'}",
                key=True,
            )
        return ""

    def workload(
        self,
        team: Team,
        section: str,
        name: str,
        raw: dict[str, Any],
    ) -> list[str]:
        """The clusters a workload's values go to: its one cluster, or none when it has no
        place (a finding says why). A disabled workload goes nowhere."""
        if not raw.get("enabled", True):
            return []
        doc = team.doc
        path: YamlPath = (section, name)
        what = "job" if section == "jobs" else "service"
        wants = needs(section, raw)
        # A vendor the environment does not have is the workload checks' to say: placement
        # is about the rest.
        known = [n for n in wants if self.view.vendor(n.vendor) is not None]
        hosts = self.hosts(known)
        asked = ", ".join(str(n) for n in known) or "no accelerators"
        chosen = raw.get("cluster")
        misnamed = chosen is not None and chosen not in self.names
        if misnamed:
            self.err(
                "CLU003",
                f"{what} {name!r} names cluster {chosen!r}, which is not one of the "
                "environment's clusters",
                doc,
                (*path, "cluster"),
                did_you_mean(chosen, self.names, "clusters: " + ", ".join(self.names)),
            )
        # A model none of its vendor's pools is has no cluster to go to (sent to its vendor's
        # cluster, the other tracks of a service would be misplaced there), and its pods could
        # only say that they pick no pool: one finding at the model says which models are
        # where. Every such model of the workload is said, as it is in no cluster to say them,
        # beside a cluster it misnames and beside its vendor's pools in no cluster (CLU001):
        # other root causes, at other lines, neither of which fixes the model.
        unmet = [n for n in known if not n.met_by(self.view.vendor(n.vendor))]
        for need in unmet:
            self.no_model(team, what, path, need)
        if misnamed or unmet:
            return []
        # What no cluster has is another finding's to say (the module's docstring).
        if any(not self.hosts([n], models=False) for n in known):
            return []  # a vendor whose pools are in no cluster: CLU001 says so
        if len(known) < len(wants):
            # A vendor the environment does not have: where the rest of it would run (a
            # service's other track), so that nothing else is said to be missing.
            near = hosts if chosen is None else [c for c in hosts if c == chosen]
            if near:
                return near
        elif any(not self.hosts([n]) for n in wants):
            # A model whose pools are in no cluster (CLU001 says so): the cluster with its
            # vendors' pools, where there is one.
            near = self.hosts(wants, models=False)
            if chosen in near or (chosen is None and len(near) == 1):
                return [chosen] if chosen is not None else near
        tracks = (raw.get("tracks") or {}) if section == "services" else {}
        if (
            section == "services"
            and chosen is None
            and (
                any((t or {}).get("cluster") is not None for t in tracks.values())
                or (not hosts and len(known) > 1)
            )
        ):
            return self.tracks_placed(team, name, raw)
        if chosen is not None:
            if chosen not in hosts:
                self.err(
                    "CLU003",
                    f"{what} {name!r} names cluster {chosen!r}, which has no pools for {asked}",
                    doc,
                    (*path, "cluster"),
                    "clusters that have them: " + (", ".join(hosts) or "none"),
                )
                return []
            return [chosen]
        if len(hosts) == 1:
            return hosts
        if not hosts:
            # (A service over several vendors is placed track by track, above.)
            self.err(
                "CLU003",
                f"{what} {name!r} asks for {asked}, and no cluster has pools for all of them",
                doc,
                path,
                "list the pools it needs in one cluster, or change what it asks for",
                key=True,
            )
            return []
        self.err(
            "CLU003",
            f"{what} {name!r} could run in clusters {', '.join(hosts)}: name one",
            doc,
            path,
            f"set cluster: <one of {', '.join(hosts)}> on it",
            key=True,
        )
        return []

    def no_model(self, team: Team, what: str, path: YamlPath, need: _Need) -> None:
        """The model of `need`, which no pool of its vendor is, with the vendor's models and
        their clusters (CLU008, by model_findings)."""
        vendor = self.view.vendor(need.vendor)
        assert vendor is not None  # a known vendor's need
        where: dict[str, list[str]] = {}
        for pool in vendor.pools:
            at = where.setdefault(pool.model, [])
            # A pool is in the first cluster that lists it (vendors_of), in none unlisted.
            for cname in self.placed.get((vendor.id, pool.name), [])[:1]:
                if cname not in at:
                    at.append(cname)
        self.unmet.append(_unmet(self.view.env, where, team, what, path, need, clustered=True))

    def tracks_placed(
        self,
        team: Team,
        name: str,
        raw: dict[str, Any],
    ) -> list[str]:
        """The clusters of a service whose tracks are placed one by one (a track names its
        cluster, or no cluster has pools for all of them): each track in the cluster it names,
        else in the one cluster with pools of its vendor (and model). Tracks in several clusters
        make one service across them when it says how traffic crosses (crossCluster): it goes
        to its tracks' clusters and, routed by a gateway, to the ingress cluster."""
        doc = team.doc
        path: YamlPath = ("services", name)
        at: dict[str, str] = {}
        misplaced = False  # every misplaced track is its own finding: none hides another
        for vendor, traw in sorted((raw.get("tracks") or {}).items()):
            need = _need(str(vendor), traw or {}, {}, ("tracks", vendor))
            if self.view.vendor(need.vendor) is None:
                continue  # WKL001 (or the vendor's own findings) says what is wrong with it
            tpath: YamlPath = (*path, "tracks", vendor)
            hosts = self.hosts([need]) or self.hosts([need], models=False)
            named = (traw or {}).get("cluster")
            if named is not None and named not in hosts:
                self.err(
                    "CLU005",
                    f"track {vendor} of service {name!r} names cluster {named!r}, which "
                    + (
                        f"has no pools for {need}"
                        if named in self.names
                        else "is not one of the environment's clusters"
                    ),
                    doc,
                    (*tpath, "cluster"),
                    did_you_mean(
                        str(named), hosts, f"clusters with {need}: " + (", ".join(hosts) or "none")
                    ),
                )
                misplaced = True
                continue
            if named is None and len(hosts) != 1:
                self.err(
                    "CLU005",
                    f"track {vendor} of service {name!r} could run in clusters "
                    f"{', '.join(hosts)}: name one",
                    doc,
                    tpath,
                    f"set cluster: <one of {', '.join(hosts)}> on the track",
                    key=True,
                )
                misplaced = True
                continue
            at[str(vendor)] = str(named) if named is not None else hosts[0]
        if misplaced:
            return []
        where = [c for c in self.names if c in at.values()]
        if len(where) <= 1:
            return where
        cross = raw.get("crossCluster")
        spread = ", ".join(f"{v} in {c}" for v, c in sorted(at.items()))
        if not cross:
            self.err(
                "CLU003",
                f"service {name!r} has its tracks in different clusters ({spread}) and does not "
                "say how its traffic crosses them",
                doc,
                path,
                "add crossCluster: {routing: gateway, gateway: {parentRefs: [...]}} (an "
                "HTTPRoute on an ingress cluster over Multi-Cluster Services) or crossCluster: "
                "{routing: external, hostname: <name>} (weights for a global load balancer) to "
                "the service, or keep its tracks in one cluster (docs/multi-cluster.md)",
                key=True,
            )
            return []
        cpath: YamlPath = (*path, "crossCluster")
        ingress = ""
        if cross.get("routing", "gateway") == "gateway":
            old = str((raw.get("migration") or {}).get("from", ""))
            ingress = str(cross.get("ingressCluster") or at.get(old) or where[0])
            if ingress not in self.names:
                self.err(
                    "CLU006",
                    f"service {name!r}: crossCluster.ingressCluster names {ingress!r}, which is "
                    "not one of the environment's clusters",
                    doc,
                    (*cpath, "ingressCluster"),
                    did_you_mean(ingress, self.names, "clusters: " + ", ".join(self.names)),
                )
            if not (cross.get("gateway") or {}).get("parentRefs"):
                self.err(
                    "CLU007",
                    f"service {name!r} routes across clusters through a gateway but names none",
                    doc,
                    cpath,
                    "set crossCluster.gateway.parentRefs: [{name: <gateway>, namespace: <its "
                    "namespace>}]"
                    + (f" (a Gateway of cluster {ingress})" if ingress in self.names else ""),
                    key=True,
                )
                return []
            if ingress not in self.names:
                return []
            where = [c for c in self.names if c in where or c == ingress]
        elif not cross.get("hostname"):
            self.err(
                "CLU007",
                f"service {name!r} routes across clusters by an external load balancer but "
                "names no hostname for it",
                doc,
                cpath,
                "set crossCluster.hostname: <the name the global load balancer serves>",
                key=True,
            )
            return []
        self.crossing[(team.name, name)] = Crossing(at, ingress)
        return where

    @staticmethod
    def _team_in(
        team: Team,
        quota: dict[str, int],
        models: dict[str, dict[str, int]],
        placed: dict[str, list[str]],
        crossing: dict[str, Crossing],
    ) -> Team:
        data = copy.copy(team.doc.data)
        if "quota" in data:
            data["quota"] = {v: models.get(v, n) for v, n in sorted(quota.items())}
        for section in WORKLOAD_SECTIONS:
            if section in data:
                data[section] = {
                    k: v
                    for k, v in (data[section] or {}).items()
                    if k in placed.get(section, []) or not (v or {}).get("enabled", True)
                }
        doc = Doc(data, team.doc.values, team.doc.keys, team.doc.sources)
        return dataclasses.replace(
            team,
            quota=dict(sorted(quota.items())),
            doc=doc,
            models=dict(sorted(models.items())),
            crossing={k: v for k, v in crossing.items() if k in placed.get("services", [])},
        )


def _platform(clusters: Doc, name: str) -> Doc:
    """`clusters.<name>.platform` as a layer of the fleet's values (located in its file)."""
    prefix = (name, "platform")
    return Doc(
        {"platform": copy.deepcopy(clusters.data[name]["platform"])},
        {p[1:]: loc for p, loc in clusters.values.items() if p[:2] == prefix},
        {p[1:]: loc for p, loc in clusters.keys.items() if p[:2] == prefix},
        clusters.sources,
    )


def split(
    view: FleetView, clusters: Doc, findings: list[Finding], unmet: list[Unmet]
) -> list[FleetView]:
    """One view per cluster of the environment `view`, in the order the file lists them;
    findings for what has no place or two, and in `unmet` the models no pool is."""
    splitter = _Splitter(view, clusters, findings, unmet)
    splitter.place_pools()
    vendors = splitter.place_vendors()
    teams: dict[str, list[Team]] = {c: [] for c in splitter.names}
    for team in view.teams:
        for cname, placed in splitter.team(team).items():
            teams[cname].append(placed)
    out = []
    for cname in splitter.names:
        raw = clusters.get(cname, default={}) or {}
        dest = raw.get("destination") or {}
        fleet = dataclasses.replace(
            view.fleet,
            kubernetes_version=str(raw.get("kubernetesVersion", view.fleet.kubernetes_version)),
            destination_server=str(dest.get("server", "")),
            destination_name=str(dest.get("name", "")),
        )
        if raw.get("platform"):
            # The cluster's own add-ons, over the environment's: the site's NFD in one
            # cluster, the fleet's in another (docs/multi-cluster.md).
            fleet = dataclasses.replace(
                fleet, doc=merge_docs(fleet.doc, _platform(clusters, cname))
            )
        cluster = Cluster(cname, dict(raw.get("labels") or {}), clusters)
        out.append(
            FleetView(
                view.env,
                fleet,
                vendors[cname],
                tuple(teams[cname]),
                view.env_file,
                cluster,
                view.retired,
                refused=view.refused,
                cpu_servers=view.cpu_servers,
            )
        )
    return out


def unsplit_findings(view: FleetView) -> list[Finding]:
    """What only an environment with clusters may say, said in one without: a workload that
    names a cluster. (A quota map there is per model: RES003 names a key that is no model, and
    says that a split by cluster needs clusters.)"""
    out = []
    for team in view.teams:
        doc = team.doc
        for section in WORKLOAD_SECTIONS:
            for name, raw in sorted((doc.get(section, default={}) or {}).items()):
                for vendor, track in sorted(((raw or {}).get("tracks") or {}).items()):
                    if section == "services" and (track or {}).get("cluster") is not None:
                        out.append(
                            _finding(
                                "CLU005",
                                f"track {vendor} of service {name!r} names cluster "
                                f"{track['cluster']!r}, and the environment declares no clusters",
                                doc,
                                (section, name, "tracks", vendor, "cluster"),
                                "remove cluster, or declare the clusters in the environment's file",
                            )
                        )
                if (raw or {}).get("cluster") is not None:
                    out.append(
                        _finding(
                            "CLU003",
                            f"{'job' if section == 'jobs' else 'service'} {name!r} names cluster "
                            f"{raw['cluster']!r}, and the environment declares no clusters",
                            doc,
                            (section, name, "cluster"),
                            "remove cluster, or declare the clusters in the environment's file",
                        )
                    )
    return out


def unmet_models(view: FleetView) -> list[Unmet]:
    """The models no pool of their vendor is, in an environment without clusters: what its
    pods' POD003 says there, for model_findings to join to the CLU008 of the same line."""
    out = []
    for team in view.teams:
        for section in WORKLOAD_SECTIONS:
            what = "job" if section == "jobs" else "service"
            for name, raw in sorted((team.doc.get(section, default={}) or {}).items()):
                if not (raw or {}).get("enabled", True):
                    continue
                for need in needs(section, raw or {}):
                    vendor = view.vendor(need.vendor)
                    if vendor is None or need.met_by(vendor):
                        continue  # a vendor the environment lacks is the workload checks'
                    where: dict[str, list[str]] = {m: [] for m in vendor.models}
                    path: YamlPath = (section, name)
                    out.append(_unmet(view.env, where, team, what, path, need, clustered=False))
    return out


def model_findings(unmet: Iterable[Unmet]) -> dict[str, list[Finding]]:
    """One CLU008 per line of a model no pool is, by environment (each environment's layer
    holds it, so that the finding names them all), saying what each environment offers.

    Said where an environment with clusters misses the model. An environment without clusters
    that misses it at the same line (a team file's model, in staging and prod) joins that
    finding rather than say it again as its pods' POD003 (`unrestated`): one mistake, one line,
    one finding. Without clusters alone, POD003 is the finding, as in a fleet of no clusters.
    The join is made here, over every environment's load, rather than after the checks: the
    load knows each environment's pools, and POD003's words name no model."""
    lines: dict[tuple[Location, str, str, str], list[Unmet]] = {}
    for u in unmet:
        lines.setdefault((u.location, u.path, u.who, u.vendor), []).append(u)
    out: dict[str, list[Finding]] = {}
    for (location, path, who, vendor), group in lines.items():
        if not any(u.clustered for u in group):
            continue
        model = group[0].model
        offers: dict[str, list[str]] = {}  # what is offered -> the environments offering it
        for u in group:
            offers.setdefault(u.listed, []).append(repr(u.env))
        if len(offers) == 1:
            listed = f"models: {next(iter(offers))}"
        else:
            listed = "models " + "; ".join(
                f"in {' and '.join(envs)}: {text}" for text, envs in offers.items()
            )
        models = sorted({m for u in group for m, _ in u.offer})
        clustered = [repr(u.env) for u in group if u.clustered]
        listing = (
            "and list it in a cluster's pools"
            if len(clustered) == len(group)
            else f"and, in {' and '.join(clustered)}, list it in a cluster's pools"
        )
        finding = Finding(
            "CLU008",
            f"{who} asks for model {model!r}, which is none of {vendor}'s pools ({listed})",
            location,
            path,
            did_you_mean(
                model,
                models,
                f"set it to {' or '.join(models)}, or add a pool of model {model} to "
                f"values/vendors/{vendor}.yaml {listing}",
            ),
        )
        for u in group:
            out.setdefault(u.env, []).append(finding)
    return out


def unrestated(loaded: Iterable[Finding], checked: Iterable[Finding]) -> list[Finding]:
    """`checked` (the checks' findings) without the pods' POD003 of a model CLU008 says (in
    `loaded`, the load's) in each environment it holds in: that workload is in no cluster, so
    its pods' POD003 holds in the base layer and in the environments without clusters that
    miss the model too (model_findings joined them to the CLU008), where it is the same
    mistake in words that name no model. It stays in an environment CLU008 does not name:
    there it is that environment's one finding."""
    # A model of a track or a task, else of the job: the pods of that part, whose POD003 is at
    # a key under it (model, nodeSelector, or a task's). Its path is the model's less the key,
    # a plain name: no bracket to split on. The environments: None for every one.
    parts = [
        (f.location.file, f.path.rsplit(".", 1)[0] + ".", set(f.environments) if f.envs else None)
        for f in loaded
        if f.code == "CLU008"
    ]

    def restates(f: Finding) -> bool:
        said = set(f.environments) - {BASE_LAYER}
        return (
            f.code == "POD003"
            and bool(f.envs)
            and any(
                f.location.file == file
                and f.path.startswith(part)
                and (envs is None or said <= envs)
                for file, part, envs in parts
            )
        )

    return [f for f in checked if not restates(f)]


def quota_total(raw: Any) -> int:
    """A quota entry as one number: the devices of every cluster together."""
    return sum(int(v) for v in raw.values()) if isinstance(raw, dict) else int(raw)


CODES = (
    CodeInfo(
        "CLU001",
        "values (load)",
        "error",
        "a pool of an environment that declares clusters is in no cluster, or in two",
    ),
    CodeInfo(
        "CLU002",
        "values (load)",
        "error",
        "a cluster lists a vendor or pool the environment does not have",
    ),
    CodeInfo(
        "CLU003",
        "values (load)",
        "error",
        "no cluster has pools for all a workload asks for, or several and it names none, or "
        "one it names lacks them; split tracks lack crossCluster",
    ),
    CodeInfo(
        "CLU004",
        "values (load)",
        "error",
        "a quota for a vendor with pools in several clusters is not split, or names a cluster "
        "without its pools or a model in no one cluster",
    ),
    CodeInfo(
        "CLU005",
        "values (load)",
        "error",
        "a service's track names a cluster without its pools (or no cluster of the "
        "environment), or could run in several and names none",
    ),
    CodeInfo(
        "CLU006",
        "values (load)",
        "error",
        "a cross-cluster service's crossCluster.ingressCluster is not a cluster of the environment",
    ),
    CodeInfo(
        "CLU007",
        "values (load)",
        "error",
        "a cross-cluster service's crossCluster lacks what its routing needs: a gateway's "
        "parentRefs, or the external load balancer's hostname",
    ),
    CodeInfo(
        "CLU008",
        "values (load)",
        "error",
        "a workload's model is none of its vendor's pools where there are clusters (with the "
        "same line's miss where there are none)",
    ),
)


def version_location(view: FleetView) -> tuple[Location, str]:
    """(where, JSON path) the Kubernetes version of `view`'s cluster is set: the cluster's own
    kubernetesVersion in its environment's file, else fleet.yaml's."""
    cluster = view.cluster
    if cluster is not None and cluster.doc.get(cluster.name, "kubernetesVersion") is not None:
        path = (cluster.name, "kubernetesVersion")
        return cluster.doc.locate(path), json_path(("clusters", *path))
    return view.fleet.doc.locate(("kubernetesVersion",)), "$.kubernetesVersion"
