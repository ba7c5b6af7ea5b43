"""simulate's Argo CD step: the environment's render published to a local Git repository and
synced by the real Argo CD (controlplane/argocd.py), bootstrapped as docs/argocd.md says, and
what Argo CD did with each Application observed, as data (`ArgoRun`) for the judge
(judge_argocd below).

What differs from a site, and why (said in the run, SIM011):
- The repository is a bare Git repository on this machine, reached by a `file://` URL (as
  argo-cd's own end-to-end tests reach theirs: test/e2e/fixture), so the Applications' and
  AppProjects' `repoURL` is rewritten to it, in the published tree and in the bootstrap; nothing
  else of the render changes.
- An add-on's chart comes from the Go module that pins it (the same chart at the same version,
  render/charts.py), committed to that repository under `charts/<add-on>`, and its Application
  points there with the same Helm values; an add-on whose chart no module here ships (Volcano,
  NVIDIA's DRA driver) is not synced by Argo CD: its Application is left out and named.
- Another cluster an Application names (`destination.name`) is the same control plane,
  registered in Argo CD under that name: each cluster is simulated on its own, so that proves
  what Argo CD does with the cluster's Applications, not that it reaches a second API server.
- Containers do not run: a Job never ends, so an Application whose only unfinished resources
  are Jobs (or JobSets, TrainJobs, Volcano Jobs) is Progressing for as long as they run, as on
  a cluster where they train; the judge accepts that and says so.
- No Gateway API implementation runs (it is the site's): nothing writes an HTTPRoute's status,
  so Argo CD reports it Progressing, "Waiting for HTTPRoute status" (argo-cd v3.2.6
  resource_customizations/gateway.networking.k8s.io/HTTPRoute/health.lua: Healthy only once a
  parent's conditions are there); the judge accepts that too and says so.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from generator.cluster.units import ARGOCD_UNIT, object_wave
from generator.controlplane.api import ApiClient, ApiError, Obj, UnknownKind
from generator.controlplane.argocd import running
from generator.controlplane.launcher import ControlPlane, sim_labelled
from generator.findings import CodeInfo, Finding, Location, Severity, split_layer
from generator.kustomize import write_tree
from generator.policy.manifest import origin
from generator.render.charts import application_values, copy_chart
from generator.render.layout import Rendered
from generator.simulate.drive import install, register_nodes
from generator.simulate.plan import SimPlan
from generator.simulate.sync import parallel
from generator.toolchain import process
from generator.toolchain.registry import ARGOCD_VERSION, plane_tool
from generator.values.model import FleetView
from generator.vocab import addons
from generator.vocab.api import ARGOCD, CORE
from generator.vocab.labels import (
    ADDON_LABEL,
    BOOTSTRAP_LABEL,
    CLUSTER_LABEL,
    REFRESH_ANNOTATION,
    UNIT_LABEL,
)

REPO = "fleet.git"
SYNC_TIMEOUT = 180.0
"""Until every Application is Synced and Healthy: a bound against a hang, not a measure."""
WATCH = 15.0
"""Then how long nothing may change: Argo CD's self-heal retries after 2 s, then 6 s, then 18 s
(argo-cd v3.2.6 cmd/argocd-application-controller, --self-heal-backoff-timeout-seconds 2,
--self-heal-backoff-factor 3), so a loop takes a field back at least twice within it."""
POLL = 0.5
BOOTSTRAP_TIMEOUT = 120.0
GIT_TIMEOUT = 120.0
# Kinds whose resources are Progressing while their pods run, which here is for ever; and the
# Applications a root creates, whose health the root reports (argocd-cm's health check) and the
# judge reports on each one's own row.
RUNNING_KINDS = frozenset({"Job", "JobSet", "TrainJob", "Application"})
# Kinds whose health a site controller the simulation does not run writes: Progressing here for
# ever (the module's docstring).
SITE_STATUS_KINDS = frozenset({"HTTPRoute"})
# The field manager Argo CD's server-side apply writes as (argo-cd v3.2.6
# controller/sync.go, cdcommon.ArgoCDSSAManager).
ARGOCD_MANAGER = "argocd-controller"

CODES = (
    CodeInfo(
        "SIM020",
        "simulate (Argo CD)",
        "error",
        "Argo CD does not bring an Application to Synced and Healthy",
    ),
    CodeInfo(
        "SIM021",
        "simulate (Argo CD)",
        "error",
        "Argo CD creates an Application before every Application of an earlier wave is Healthy",
    ),
    CodeInfo(
        "SIM022",
        "simulate (Argo CD)",
        "error",
        "Argo CD syncs an Application again and again with nothing changed in Git: self-heal "
        "fights another writer of the same field",
    ),
)
HINTS = {
    "SIM020": "Argo CD's message says what failed; fix the unit's objects or what they need "
    "(a CRD, an add-on, the AppProject's allow-lists)",
    "SIM021": "bootstrap with the AppProjects and the root Application only (kubectl apply -k "
    "overlays/<env>/argocd -l accel-gitops.io/bootstrap=true), and keep the Application health "
    "check in argocd-cm (docs/argocd.md)",
    "SIM022": "leave the field to its writer: ignoreDifferences on it with "
    "RespectIgnoreDifferences=true (docs/platform.md)",
}


def _git(args: list[str], cwd: Path) -> None:
    process.run("git", args, cwd=cwd, timeout=GIT_TIMEOUT)


def file_url(repo: Path) -> str:
    return f"file://{repo}"


def localize(
    obj: Obj, fleet_repo: str, url: str, branch: str, mirrored: Collection[str] = ()
) -> Obj | None:
    """An Argo CD object as the simulation publishes and applies it: the fleet's repository is
    `url`; an add-on's chart is `charts/<key>` of it, at `branch`; None for an add-on whose chart
    no module here ships (it cannot be synced here). `mirrored`: the chart repositories the
    add-on Applications name besides the catalogue's (values `mirrors`), which projects allow as
    they allow the catalogue's."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "AppProject":
        charts = {a.chart.repo_url for a in addons.ADDONS if a.chart is not None}
        charts |= set(mirrored)
        repos = {url if r == fleet_repo or r in charts else r for r in spec["sourceRepos"]}
        return {**obj, "spec": {**spec, "sourceRepos": sorted(repos)}}
    if kind != "Application":
        return obj
    source = dict(spec["source"])
    key = (obj["metadata"].get("labels") or {}).get(ADDON_LABEL)
    if "chart" in source:
        addon = addons.BY_KEY.get(str(key))
        chart = addon.chart if addon is not None else None
        if chart is None or not chart.module:
            return None
        source = {
            "repoURL": url,
            "path": f"charts/{chart.name}",
            "targetRevision": branch,
            "helm": source.get("helm", {}),
        }
    elif source.get("repoURL") == fleet_repo:
        source["repoURL"] = url
    return {**obj, "spec": {**spec, "source": source}}


def _chart_repos(tree: Mapping[str, str], argocd_folders: list[str]) -> set[str]:
    """The chart repositories the add-on Applications of `argocd_folders` install from."""
    out = set()
    for folder in argocd_folders:
        for rel in sorted(r for r in tree if r.startswith(folder + "/")):
            if "/" in rel[len(folder) + 1 :]:
                continue
            obj = yaml.safe_load(tree[rel]) or {}
            source = (obj.get("spec") or {}).get("source") or {}
            if obj.get("kind") == "Application" and "chart" in source:
                out.add(str(source.get("repoURL")))
    return out


@dataclass
class Published:
    url: str
    branch: str
    checkout: Path
    commit: str = ""
    dropped: list[str] = field(default_factory=list)
    """The add-on Applications left out: no module here ships their chart."""


def publish(
    tree: Mapping[str, str],
    argocd_folders: list[str],
    fleet_repo: str,
    branch: str,
    where: Path,
    cluster: str = "",
) -> Published:
    """The rendered `tree` committed to a bare repository under `where`, on `branch`, with the
    Argo CD objects of `argocd_folders` localized (above) and the charts they now name beside
    them. The same tree `render` writes and `publish` pushes, but for those objects, and, when
    one `cluster` of an environment is simulated, but for the other clusters' Applications in
    the hub's argocd unit: the plane stands for one cluster at a time, and the others' would
    sync into it."""
    repo = where / REPO
    url = file_url(repo)
    checkout = where / "checkout"
    out = Published(url, branch, checkout)
    files = dict(tree)
    charts: dict[str, tuple[addons.Chart, dict[str, Any]]] = {}
    mirrored = _chart_repos(tree, argocd_folders)
    for folder in argocd_folders:
        kustomization = f"{folder}/kustomization.yaml"
        for rel in sorted(r for r in tree if r.startswith(folder + "/") and r != kustomization):
            if "/" in rel[len(folder) + 1 :]:
                continue
            obj = yaml.safe_load(tree[rel])
            labels = obj["metadata"].get("labels") or {}
            other = cluster and labels.get(CLUSTER_LABEL, cluster) != cluster
            local = None if other else localize(obj, fleet_repo, url, branch, mirrored)
            if local is None:
                if not other:
                    out.dropped.append(obj["metadata"]["name"])
                del files[rel]
                kust = yaml.safe_load(files[kustomization])
                kust["resources"].remove(rel.rsplit("/", 1)[1])
                files[kustomization] = yaml.safe_dump(kust, sort_keys=False)
                continue
            files[rel] = yaml.safe_dump(local, sort_keys=False)
            key = (obj["metadata"].get("labels") or {}).get(ADDON_LABEL)
            addon = addons.BY_KEY.get(str(key)) if obj.get("kind") == "Application" else None
            if addon is not None and addon.chart is not None and addon.chart.module:
                charts[addon.chart.name] = (addon.chart, application_values(obj))
    shutil.rmtree(checkout, ignore_errors=True)
    write_tree(files, checkout)
    for name, (chart, values) in sorted(charts.items()):
        copy_chart(chart, values, checkout / "charts" / name)
    if not repo.exists():
        _git(["init", "--quiet", "--bare", str(repo)], where)
    _git(["init", "--quiet", "-b", branch], checkout)
    _git(["add", "--all"], checkout)
    who = ["-c", "user.name=accel-gitops", "-c", "user.email=accel-gitops@localhost"]
    _git([*who, "commit", "--quiet", "-m", "simulate: the render"], checkout)
    _git(["push", "--quiet", "--force", url, f"HEAD:refs/heads/{branch}"], checkout)
    head = process.run("git", ["rev-parse", "HEAD"], cwd=checkout, timeout=GIT_TIMEOUT)
    out.commit = head.stdout.decode().strip()
    return out


@dataclass
class AppSeen:
    """What the observer saw of one Application."""

    name: str
    wave: int
    unit: str
    sync: str = ""
    health: str = ""
    messages: list[str] = field(default_factory=list)
    unfinished: list[str] = field(default_factory=list)
    """Resources not Synced or not Healthy at the end: `Kind namespace/name: status`."""
    running_only: bool = False
    """Progressing only because Jobs run (RUNNING_KINDS)."""
    seen_at: float | None = None
    settled_at: float | None = None
    """Seconds from the bootstrap to the first time it was Synced and Healthy."""
    early: list[str] = field(default_factory=list)
    """Applications of an earlier wave never yet Healthy when it was first seen."""
    syncs: int = 0
    """Sync operations Argo CD recorded (status.history) with one revision in Git."""
    drifted: list[str] = field(default_factory=list)
    """Resources seen OutOfSync after its first sync, with the fields other writers own."""


@dataclass
class ArgoRun:
    apps: dict[str, AppSeen] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    timed_out: bool = False
    seconds: float = 0.0


def _status(app: Obj) -> tuple[str, str]:
    status = app.get("status") or {}
    return (status.get("sync") or {}).get("status", ""), (status.get("health") or {}).get(
        "status", ""
    )


def _running_only(app: Obj) -> bool:
    """Progressing only because resources of RUNNING_KINDS are, and Synced."""
    resources = (app.get("status") or {}).get("resources") or []
    progressing = [
        r for r in resources if (r.get("health") or {}).get("status") not in (None, "Healthy")
    ]
    return bool(progressing) and all(
        r.get("kind") in RUNNING_KINDS | SITE_STATUS_KINDS
        and (r.get("health") or {}).get("status") == "Progressing"
        for r in progressing
    )


def _revision(app: Obj) -> str:
    return str(((app.get("status") or {}).get("sync") or {}).get("revision") or "")


def settled(app: Obj, revision: str = "") -> bool:
    """Synced (to `revision`, when given: the commit published last) and Healthy, or
    Progressing only while Jobs run or child Applications settle."""
    if revision and _revision(app) != revision:
        return False
    sync, health = _status(app)
    return sync == "Synced" and (
        health == "Healthy" or (health == "Progressing" and _running_only(app))
    )


def _ref(r: dict[str, Any]) -> str:
    where = f"{r['namespace']}/{r['name']}" if r.get("namespace") else r.get("name", "")
    return f"{r.get('kind')} {where}"


def _other_writers(api: ApiClient, r: dict[str, Any]) -> str:
    """The top-level fields of the live object that a writer other than Argo CD owns."""
    group, version = r.get("group", ""), r.get("version", "")
    api_version = f"{group}/{version}" if group else version or CORE
    try:
        live = api.get(api_version, r["kind"], r.get("namespace", ""), r["name"])
    except (ApiError, UnknownKind):  # a kind the cluster does not serve: nobody writes it
        return ""
    owned: list[str] = []
    for entry in (live or {}).get("metadata", {}).get("managedFields") or []:
        if entry.get("manager") == ARGOCD_MANAGER:
            continue
        for key in sorted(entry.get("fieldsV1") or {}):
            if key.startswith("f:") and key not in ("f:metadata", "f:status"):
                owned.append(f"{key[2:]} (by {entry.get('manager')})")
    return ", ".join(dict.fromkeys(owned))


def observe(
    api: ApiClient,
    namespace: str,
    expected: dict[str, tuple[int, str]],
    revision: str,
    *,
    first: bool = True,
) -> ArgoRun:
    """Watch the Applications of `namespace` (`expected`: name -> (wave, unit)) until every one
    is settled at `revision` (the commit published last), then for WATCH seconds more. `first`:
    from the bootstrap, when the waves must order their creation (after a later publish the
    Applications exist already)."""
    run = ArgoRun({n: AppSeen(n, w, u) for n, (w, u) in expected.items()})
    start = time.monotonic()
    ever_settled: set[str] = set()
    ever_healthy: set[str] = set()
    quiet_since: float | None = None
    while True:
        now = time.monotonic() - start
        apps = {a["metadata"]["name"]: a for a in api.list(ARGOCD, "Application", namespace)}
        # What one look shows is one moment: an Application of an earlier wave that is Healthy in
        # it was Healthy before Argo CD created the later one listed beside it, whatever order the
        # list has (judged Application by Application in list order, that was SIM021 by chance).
        ever_healthy.update(
            name
            for name, app in apps.items()
            if name in run.apps and (_status(app)[1] == "Healthy" or settled(app, revision))
        )
        for name, app in apps.items():
            seen = run.apps.get(name)
            if seen is None:
                continue
            if seen.seen_at is None:
                seen.seen_at = now
                seen.early = (
                    []
                    if not first
                    else sorted(
                        other.name
                        for other in run.apps.values()
                        # A root Application creates the others: it is Healthy only once they are.
                        if other.wave < seen.wave
                        and other.unit != ARGOCD_UNIT
                        and other.name not in ever_healthy
                    )
                )
            seen.sync, seen.health = _status(app)
            status = app.get("status") or {}
            # Syncs of this revision: a later publish adds one of its own, self-heal more.
            seen.syncs = sum(h.get("revision") == revision for h in status.get("history") or [])
            if settled(app, revision):
                ever_settled.add(name)
                if seen.settled_at is None:
                    seen.settled_at = now
            elif name in ever_settled:
                for r in status.get("resources") or []:
                    if r.get("status") == "OutOfSync":
                        what = _ref(r)
                        if not any(d.startswith(what) for d in seen.drifted):
                            writers = _other_writers(api, r)
                            seen.drifted.append(f"{what}: {writers}" if writers else what)
        everything = all(n in apps and settled(apps[n], revision) for n in expected)
        if everything and quiet_since is None:
            quiet_since = now
        if quiet_since is not None and now - quiet_since >= WATCH:
            break
        if quiet_since is None and now > SYNC_TIMEOUT:
            run.timed_out = True
            break
        time.sleep(POLL)
    for name, seen in run.apps.items():
        last = apps.get(name)
        if last is None:
            continue
        status = last.get("status") or {}
        seen.running_only = _running_only(last)
        seen.messages = [str(c.get("message", "")) for c in status.get("conditions") or []]
        op = status.get("operationState") or {}
        if op.get("phase") not in (None, "Succeeded") and op.get("message"):
            seen.messages.append(f"sync {op.get('phase')}: {op['message']}")
        seen.unfinished = [
            f"{_ref(r)}: {r.get('status')}/{(r.get('health') or {}).get('status', '-')}"
            for r in status.get("resources") or []
            if r.get("status") != "Synced"
            or (r.get("health") or {}).get("status") not in (None, "Healthy")
        ]
        if name not in ever_settled:
            # Never seen settled (a fight can be faster than a look): an OutOfSync resource with
            # fields another writer owns is the same fight.
            for r in status.get("resources") or []:
                writers = _other_writers(api, r) if r.get("status") == "OutOfSync" else ""
                if writers and not any(d.startswith(_ref(r)) for d in seen.drifted):
                    seen.drifted.append(f"{_ref(r)}: {writers}")
    run.seconds = round(time.monotonic() - start, 1)
    return run


def expected_apps(docs: list[Obj]) -> dict[str, tuple[int, str]]:
    """Every Application of the argocd units' objects: name -> (wave, unit)."""
    return {
        d["metadata"]["name"]: (
            object_wave(d),
            (d["metadata"].get("labels") or {}).get(UNIT_LABEL, ""),
        )
        for d in docs
        if d.get("kind") == "Application"
    }


def argocd_not_run(plan: SimPlan) -> Finding:
    """SIM011: Argo CD was not run (simulate --no-argocd): nothing of this run says whether it
    syncs the environment."""
    return Finding(
        "SIM011",
        "Argo CD did not run (--no-argocd): the units were applied by the simulation in Argo CD's "
        "wave order, but whether Argo CD syncs them, in that order, and keeps them in sync was "
        "not exercised",
        plan.view.fleet.doc.anchor(("git",)),
        hint="run simulate without --no-argocd (docs/simulation.md)",
        severity=Severity.WARNING,
    )


def origins(plan: SimPlan) -> dict[str, Location]:
    """Where the values make what each Application of the plan's argocd units syncs: its unit's
    first object (a team's Namespace, a vendor's rule...), else the Application itself (an
    add-on's, a root's)."""
    units = {b.unit.path: b for b in plan.built if b.docs}
    out: dict[str, Location] = {}
    for b in plan.built:
        if b.unit.name != ARGOCD_UNIT:
            continue
        for d in b.docs:
            if d.get("kind") != "Application":
                continue
            path = str((d["spec"].get("source") or {}).get("path", ""))
            unit = next((u for p, u in units.items() if path.endswith(p)), None)
            if unit is not None and unit.unit.name != ARGOCD_UNIT:
                out[d["metadata"]["name"]] = origin(unit.unit, unit.docs[0])
            else:
                out[d["metadata"]["name"]] = origin(b.unit, d)
    return out


def _note(seen: AppSeen) -> str:
    """Why a settled Application is Progressing: Jobs that run (for ever, here), or, for a root,
    the Applications it reports the health of."""
    if not (seen.running_only and seen.health == "Progressing"):
        return ""
    if seen.unit == ARGOCD_UNIT:
        return "as its Applications"
    kinds = {u.split(" ", 1)[0] for u in seen.unfinished}
    notes = ["Jobs running"] if kinds & RUNNING_KINDS or not kinds else []
    if kinds & SITE_STATUS_KINDS:
        notes.append("routes await the site's Gateway")
    return "; ".join(notes)


def judge_argocd(run: ArgoRun, plan: SimPlan) -> tuple[list[dict[str, Any]], list[Finding]]:
    """`judge` at the values that make each Application, and a SIM011 warning naming the
    add-ons Argo CD could not sync here."""
    rows, findings = judge(run, origins(plan))
    findings += version_differs(plan.view)
    if run.dropped:
        findings.append(
            Finding(
                "SIM011",
                f"Argo CD did not sync Application{'s' if len(run.dropped) > 1 else ''} "
                f"{', '.join(sorted(run.dropped))}: no Go module here ships the chart, so the "
                "simulation applied what it needs of it itself, as without Argo CD",
                plan.view.fleet.doc.anchor(("platform",)),
                hint="check it on a cluster that syncs it (docs/simulation.md)",
                severity=Severity.WARNING,
            )
        )
    return rows, findings


def _minor(version: str) -> tuple[int, int]:
    major, minor, _ = version.removeprefix("v").split(".", 2)
    return int(major), int(minor)


def version_differs(view: FleetView) -> list[Finding]:
    """SIM011 when argocd.version names another Argo CD than the one simulated: what the run
    does not prove of it (docs/argocd.md, "Proven against")."""
    site = view.fleet.argocd_version
    if not site or site == ARGOCD_VERSION:
        return []
    known = ""
    if _minor(site) >= (3, 4):
        known = (
            "; known: from v3.4 Missing resources do not count in an Application's health "
            "(argo-cd PR #25962), so a wave can start before the previous one has all its objects"
        )
    return [
        Finding(
            "SIM011",
            f"the site runs Argo CD {site} (argocd.version); the simulation ran {ARGOCD_VERSION}, "
            f"so what differs between them was not exercised{known}",
            view.fleet.doc.locate(("argocd", "version")),
            "$.argocd.version",
            hint="docs/argocd.md says what differs; preflight checks the version the cluster runs",
            severity=Severity.WARNING,
        )
    ]


def judge(
    run: ArgoRun, where_made: dict[str, Location]
) -> tuple[list[dict[str, Any]], list[Finding]]:
    """A row per Application, in wave order, and the findings (SIM020-SIM022) at the values that
    make it (`where_made`: Application name -> where)."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    for name in sorted(run.apps, key=lambda n: (run.apps[n].wave, n)):
        seen = run.apps[name]
        where = where_made.get(name, Location("values"))
        ok = seen.settled_at is not None and not seen.early and not seen.drifted and seen.syncs <= 1
        rows.append(
            {
                "application": name,
                "wave": seen.wave,
                "sync": seen.sync or "-",
                "health": seen.health or "-",
                "settled": "-" if seen.settled_at is None else f"{seen.settled_at:.1f}s",
                "note": _note(seen),
                "ok": ok,
            }
        )
        if seen.settled_at is None or (
            (seen.sync, seen.health) != ("Synced", "Healthy") and not seen.running_only
        ):
            detail = "; ".join([*seen.messages, *seen.unfinished[:5]]) or "no message"
            findings.append(
                Finding(
                    "SIM020",
                    f"Argo CD leaves Application {name} {seen.sync or 'Unknown'}/"
                    f"{seen.health or 'Unknown'}: {detail}",
                    where,
                    hint=HINTS["SIM020"],
                )
            )
        if seen.early:
            findings.append(
                Finding(
                    "SIM021",
                    f"Argo CD created Application {name} (wave {seen.wave}) while "
                    f"{', '.join(seen.early)} of an earlier wave had never been Healthy",
                    where,
                    hint=HINTS["SIM021"],
                )
            )
        if seen.drifted or seen.syncs > 1:
            what = "; ".join(seen.drifted) or "no resource went OutOfSync between two looks"
            again = f" and synced it {seen.syncs} times" if seen.syncs > 1 else ""
            findings.append(
                Finding(
                    "SIM022",
                    f"Application {name}: after Argo CD had synced it{again}, with one "
                    f"revision in Git, another writer changed what it applies, which self-heal "
                    f"takes back: {what}",
                    where,
                    hint=HINTS["SIM022"],
                )
            )
    return rows, findings


def wait_gone(api: ApiClient, name: str, namespace: str, timeout: float = SYNC_TIMEOUT) -> None:
    """Until the Application `name` is gone (its resources finalizer done), or TimeoutError."""
    deadline = time.monotonic() + timeout
    while api.get(ARGOCD, "Application", namespace, name) is not None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"Application {namespace}/{name} still there after {timeout:g} s")
        time.sleep(POLL)


@dataclass
class Session:
    """Argo CD running on a plane with an environment bootstrapped: publish again, and watch."""

    plane: ControlPlane
    plan: SimPlan
    clusters: dict[str, str] = field(default_factory=dict)

    @property
    def namespace(self) -> str:
        return self.plan.view.fleet.argocd_namespace

    def publish(self, rendered: Rendered) -> tuple[Published, dict[str, tuple[int, str]]]:
        """`rendered` committed as the environment's branch (publish above), and the
        Applications it makes for this cluster: name -> (wave, unit)."""
        fleet = self.plan.view.fleet
        published = publish(
            rendered.tree,
            [u.path for u in rendered.units if u.name == ARGOCD_UNIT],
            fleet.repo_url,
            fleet.target_revision,
            self.plane.workdir / "gitops",
            split_layer(self.plan.env)[1],
        )
        mine = expected_apps(self.docs())
        published.dropped = [n for n in published.dropped if n in mine]
        return published, {n: w for n, w in mine.items() if n not in published.dropped}

    def docs(self) -> list[Obj]:
        return [d for b in self.plan.built if b.unit.name == ARGOCD_UNIT for d in b.docs]

    def refresh(self) -> None:
        """Every Application asked to compare with Git now, as a Git webhook would ask (argo-cd
        v3.2.6 pkg/apis/application/v1alpha1 AnnotationKeyRefresh), rather than at its next
        reconciliation (every 120 s by default)."""
        api = self.plane.client()
        for app in api.list(ARGOCD, "Application", self.namespace):
            patch = {"metadata": {"annotations": {REFRESH_ANNOTATION: "normal"}}}
            api.merge_patch(ARGOCD, "Application", self.namespace, app["metadata"]["name"], patch)


@contextlib.contextmanager
def session(
    plane: ControlPlane, plan: SimPlan, rendered: Rendered
) -> Iterator[tuple[Session, ArgoRun]]:
    """On `plane` (reset beforehand): what the cluster has before the fleet (drive.install), its
    nodes, uncordoned, and the site's components; then the render published, Argo CD installed
    and the environment bootstrapped as docs/argocd.md says; what Argo CD does, observed. Argo
    CD runs until the block ends."""
    api = plane.client()
    install(plane, plan)
    register_nodes(api, plan.nodes)
    parallel(
        lambda n: api.merge_patch(CORE, "Node", "", n.name, {"spec": {"unschedulable": False}}),
        plan.nodes,
    )
    for daemon in plan.site_daemons:
        api.apply(sim_labelled(daemon.obj))
    ses = Session(plane, plan)
    published, expected = ses.publish(rendered)
    ses.clusters = {
        str(d["spec"]["destination"]["name"]): plane.server
        for d in ses.docs()
        if d.get("kind") == "Application" and "name" in d["spec"]["destination"]
    }
    hub = split_layer(plan.env)[0]
    (hub_folder,) = [u.path for u in rendered.units if u.name == ARGOCD_UNIT and u.env == hub]
    with running(plane, ses.namespace, ses.clusters):
        # The first install as docs/argocd.md gives it, with the real kubectl: the AppProjects
        # and the root Application, from the published tree.
        process.run(
            plane_tool("kubectl", plane.minor),
            [
                *("--kubeconfig", str(plane.kubeconfig), "apply"),
                *("-k", str(published.checkout / hub_folder)),
                *("-l", f"{BOOTSTRAP_LABEL}=true"),
            ],
            timeout=BOOTSTRAP_TIMEOUT,
        )
        run = observe(api, ses.namespace, expected, published.commit)
        run.dropped = published.dropped
        yield ses, run


def drive_argocd(plane: ControlPlane, plan: SimPlan, rendered: Rendered) -> ArgoRun:
    """The environment synced by Argo CD from its bootstrap (`session`): what Argo CD did."""
    with session(plane, plan, rendered) as (_, run):
        return run
