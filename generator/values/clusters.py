"""An environment's clusters: which pools, quotas and workloads go to which cluster.

An environment that declares `clusters` is split into one view per cluster, and every builder and
check then runs on a cluster's view exactly as on a whole environment's: capacity, placement,
topology and scheduling are per cluster because the view holds only that cluster's pools and the
quotas and workloads placed there (docs/multi-cluster.md).

- A pool is in exactly one cluster: the one that lists it (`vendor/pool`, or `vendor` for all of
  a vendor's pools).
- A team's quota for a vendor goes to the cluster with that vendor's pools. Where the vendor has
  pools in several clusters the team states the split (`quota: {nvidia: {west: 8, east: 4}}`).
- A workload runs in the cluster it names (`cluster`), else in the one cluster that has pools of
  every vendor (and model) it asks for. None, or several without a name, is a finding: the
  generator never guesses a cluster, and never splits one workload over two (a dual-track
  service moves between vendors inside one cluster, where its traffic is split).
- A team is in every cluster where it has quota or a workload (every cluster when it has neither).

What decides placement is read from the merged values here, before the workloads are resolved:
each cluster's view must already hold only its own workloads when generator/workloads/ reads them.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any

from generator.findings import CodeInfo, Finding, Location, did_you_mean
from generator.values.merge import Doc, merge_docs
from generator.values.model import Cluster, FleetView, Team, Vendor
from generator.values.yamlio import YamlPath, json_path

WORKLOAD_SECTIONS = ("jobs", "services")


@dataclass(frozen=True)
class _Need:
    """One vendor a workload's pods ask for, and the models they accept (() for any)."""

    vendor: str
    models: tuple[str, ...]

    def met_by(self, vendor: Vendor | None) -> bool:
        if vendor is None:
            return False
        return not self.models or any(p.model in self.models for p in vendor.pools)

    def __str__(self) -> str:
        return f"{self.vendor} ({' or '.join(self.models)})" if self.models else self.vendor


def _models(part: dict[str, Any], job: dict[str, Any]) -> tuple[str, ...]:
    """The pool models a pod accepts: its model and its fallbackModel, else the job's (as
    generator/workloads/model.py resolves them: a task inherits its job's; a service has none of
    its own, so a track passes {})."""
    found = []
    for key in ("model", "fallbackModel"):
        value = part.get(key, job.get(key, ""))
        if value:
            found.append(str(value))
    return tuple(found)


def needs(section: str, raw: dict[str, Any]) -> list[_Need]:
    """What a workload's pods ask for, from its merged values."""
    if section == "services":
        return [
            _Need(str(vendor), _models(track or {}, {}))
            for vendor, track in sorted((raw.get("tracks") or {}).items())
        ]
    tasks = raw.get("tasks") or {}
    if tasks:
        return [
            _Need(str(t["vendor"]), _models(t, raw))
            for _, t in sorted(tasks.items())
            if t.get("vendor")
        ]
    if raw.get("vendor"):
        return [_Need(str(raw["vendor"]), _models(raw, {}))]
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
    def __init__(self, view: FleetView, clusters: Doc, findings: list[Finding]) -> None:
        self.view = view
        self.doc = clusters
        self.findings = findings
        self.names = list(clusters.data)  # as the file lists them: the first listing wins
        # (vendor, pool) -> the clusters that list it, in the order listed
        self.placed: dict[tuple[str, str], list[str]] = {}

    def err(
        self, code: str, message: str, doc: Doc, path: YamlPath, hint: str, *, key: bool = False
    ) -> None:
        # The environment file's `clusters` section is a doc of its own: paths say where it is.
        within: YamlPath = ("clusters",) if doc is self.doc else ()
        self.findings.append(_finding(code, message, doc, path, hint, key=key, within=within))

    def place_pools(self) -> None:
        env = self.view.env
        for name in self.names:
            for i, ref in enumerate(self.doc.get(name, "pools", default=[]) or []):
                vendor_id, _, pool_name = str(ref).partition("/")
                vendor = self.view.vendor(vendor_id)
                path: YamlPath = (name, "pools", i)
                if vendor is None:
                    known = [v.id for v in self.view.vendors]
                    self.err(
                        "CLU002",
                        f"cluster {name!r} lists vendor {vendor_id!r}, which environment "
                        f"{env!r} does not have",
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
                        f"pool {vendor.id}/{pool.name} is in no cluster of environment {env!r}",
                        self.doc,
                        (),
                        f"add {vendor.id}/{pool.name} (or {vendor.id}) to the pools of the "
                        "cluster its nodes are in",
                    )

    def vendors_of(self, cluster: str) -> tuple[Vendor, ...]:
        out = []
        for vendor in self.view.vendors:
            pools = tuple(
                p for p in vendor.pools if self.placed.get((vendor.id, p.name), [""])[0] == cluster
            )
            if pools:
                out.append(dataclasses.replace(vendor, pools=pools))
        return tuple(out)

    def hosts(self, vendors: dict[str, tuple[Vendor, ...]], wants: list[_Need]) -> list[str]:
        """The clusters with pools for every need (unknown vendors are the workload's own
        finding, not a placement one: they are left out)."""
        known = [n for n in wants if self.view.vendor(n.vendor) is not None]
        return [
            c
            for c in self.names
            if all(n.met_by(next((v for v in vendors[c] if v.id == n.vendor), None)) for n in known)
        ]

    def team(self, team: Team, vendors: dict[str, tuple[Vendor, ...]]) -> dict[str, Team]:
        """The team as each cluster it is in has it."""
        doc = team.doc
        quota: dict[str, dict[str, int]] = {c: {} for c in self.names}
        holding = {
            vid: [c for c in self.names if any(v.id == vid for v in vendors[c])]
            for vid in (doc.get("quota", default={}) or {})
        }
        for vid, raw in sorted((doc.get("quota", default={}) or {}).items()):
            where = holding[vid]
            path: YamlPath = ("quota", vid)
            if isinstance(raw, dict):
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
                # A vendor in no cluster (disabled or unknown) keeps its quota everywhere: the
                # quota checks say what is wrong with it, in each cluster.
                for cname in where or self.names:
                    quota[cname][vid] = int(raw)
        placed: dict[str, dict[str, list[str]]] = {c: {} for c in self.names}
        for section in WORKLOAD_SECTIONS:
            for name, raw in sorted((doc.get(section, default={}) or {}).items()):
                where = self.workload(team, section, name, raw or {}, vendors)
                for cname in where:
                    placed[cname].setdefault(section, []).append(name)
        inside = [c for c in self.names if quota[c] or placed[c]] or self.names
        return {c: self._team_in(team, quota[c], placed[c]) for c in inside}

    def workload(
        self,
        team: Team,
        section: str,
        name: str,
        raw: dict[str, Any],
        vendors: dict[str, tuple[Vendor, ...]],
    ) -> list[str]:
        """The clusters a workload's values go to: its one cluster, or none when it has no
        place (a finding says why). A disabled workload goes nowhere."""
        if not raw.get("enabled", True):
            return []
        doc = team.doc
        path: YamlPath = (section, name)
        what = "job" if section == "jobs" else "service"
        wants = needs(section, raw)
        hosts = self.hosts(vendors, wants)
        asked = ", ".join(str(n) for n in wants) or "no accelerators"
        chosen = raw.get("cluster")
        if chosen is not None:
            if chosen not in self.names:
                self.err(
                    "CLU003",
                    f"{what} {name!r} names cluster {chosen!r}, which environment "
                    f"{self.view.env!r} does not have",
                    doc,
                    (*path, "cluster"),
                    did_you_mean(chosen, self.names, "clusters: " + ", ".join(self.names)),
                )
                return []
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
            hint = (
                "a service's tracks run in one cluster, where its traffic is split between "
                "them: move the pools into one cluster, or make a service per cluster and split "
                "traffic in front of the clusters (docs/multi-cluster.md)"
                if section == "services" and len(wants) > 1
                else "list the pools it needs in one cluster, or change what it asks for"
            )
            self.err(
                "CLU003",
                f"{what} {name!r} asks for {asked}, and no cluster of environment "
                f"{self.view.env!r} has pools for all of them",
                doc,
                path,
                hint,
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

    @staticmethod
    def _team_in(team: Team, quota: dict[str, int], placed: dict[str, list[str]]) -> Team:
        data = copy.copy(team.doc.data)
        if "quota" in data:
            data["quota"] = dict(sorted(quota.items()))
        for section in WORKLOAD_SECTIONS:
            if section in data:
                data[section] = {
                    k: v
                    for k, v in (data[section] or {}).items()
                    if k in placed.get(section, []) or not (v or {}).get("enabled", True)
                }
        doc = Doc(data, team.doc.values, team.doc.keys, team.doc.sources)
        return dataclasses.replace(team, quota=dict(sorted(quota.items())), doc=doc)


def _platform(clusters: Doc, name: str) -> Doc:
    """`clusters.<name>.platform` as a layer of the fleet's values (located in its file)."""
    prefix = (name, "platform")
    return Doc(
        {"platform": copy.deepcopy(clusters.data[name]["platform"])},
        {p[1:]: loc for p, loc in clusters.values.items() if p[:2] == prefix},
        {p[1:]: loc for p, loc in clusters.keys.items() if p[:2] == prefix},
        clusters.sources,
    )


def split(view: FleetView, clusters: Doc, findings: list[Finding]) -> list[FleetView]:
    """One view per cluster of the environment `view`, in the order the file lists them;
    findings for what has no place or two."""
    splitter = _Splitter(view, clusters, findings)
    splitter.place_pools()
    vendors = {c: splitter.vendors_of(c) for c in splitter.names}
    teams: dict[str, list[Team]] = {c: [] for c in splitter.names}
    for team in view.teams:
        for cname, placed in splitter.team(team, vendors).items():
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
            )
        )
    return out


def unsplit_findings(view: FleetView) -> list[Finding]:
    """What only an environment with clusters may say, said in one without: a quota split by
    cluster, a workload that names a cluster."""
    out = []
    for team in view.teams:
        doc = team.doc
        for vid, raw in sorted((doc.get("quota", default={}) or {}).items()):
            if isinstance(raw, dict):
                out.append(
                    _finding(
                        "CLU004",
                        f"team {team.name}: quota for {vid} is split by cluster, and the "
                        "environment declares no clusters",
                        doc,
                        ("quota", vid),
                        f"give one number (quota: {{{vid}: N}}), or declare the clusters in the "
                        "environment's file",
                    )
                )
        for section in WORKLOAD_SECTIONS:
            for name, raw in sorted((doc.get(section, default={}) or {}).items()):
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
        "a workload has no cluster with pools for all it asks for (tracks in two clusters), "
        "or several and names none, or names one without them",
    ),
    CodeInfo(
        "CLU004",
        "values (load)",
        "error",
        "a quota for a vendor in several clusters does not say how it splits, or names a "
        "cluster without that vendor's pools",
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
