"""What a simulation of one environment will do, and what it expects, decided before anything
runs: no API call here, nothing started. From the environment's view and its units as kustomize
builds them: the nodes to register, the add-ons to install (CRDs, namespaces, the controller
managers and nfd-master as the fleet's charts deploy them, the stand-ins for what teams declare
as their own), the units wave by wave with the jobs held back for later, the workloads' pod
templates the judge holds the pods to, and what is not simulated (SIM009, SIM011).

What the simulation expects of the workloads comes from the environment's build, the one render
laid out (builders/fleet.py Build): never a second build of them; their pod templates as
kustomize built that layout, a values `patch` included (as_deployed).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from generator.builders.build import PodRef
from generator.builders.fleet import Build
from generator.builders.scheduling import KUBE_SCHEDULER_CONF_KEY, KUBE_SCHEDULER_CONFIGMAP
from generator.builders.teams import unit_name
from generator.builders.workloads import service_objects
from generator.cluster.dryrun import addon_namespaces
from generator.cluster.plane import CONTROLLER_ADDONS
from generator.cluster.units import ARGOCD_UNIT, BuiltUnit
from generator.controlplane.api import Obj
from generator.controlplane.controllers import ControllerSetup
from generator.controlplane.crds import needed_crds
from generator.findings import Finding, Severity
from generator.simulate import external, sitestack
from generator.simulate.addons import nfd_applied, nfd_chart, nfd_master, rendered_controller
from generator.simulate.kueue import HELD_KINDS, integrations
from generator.simulate.nodes import SimNode, plan_nodes
from generator.simulate.result import HINTS
from generator.simulate.scope import across_clusters, not_simulated
from generator.simulate.sitestack import SiteDaemon
from generator.simulate.sync import JOB_KINDS
from generator.values.model import FleetView, Team, Values
from generator.values.yamlio import json_path
from generator.vocab.addons import FLEET, SITE
from generator.vocab.api import APPS, BATCH, JOBSET, LWS, VOLCANO_BATCH
from generator.vocab.kube import DEFAULT_SCHEDULER
from generator.vocab.units import PACKING_UNIT
from generator.workloads.model import Job, Service
from generator.workloads.phases import ladder

# A unit's objects to apply in one sync: (unit, objects, dry-run only).
Sync = tuple[BuiltUnit, list[Obj], bool]


@dataclass
class Wave:
    """The units of one sync wave: Argo CD syncs them independently, at the same time."""

    syncs: list[Sync]
    node_config: list[BuiltUnit]
    """The wave's node-config units: the nodes are judged and uncordoned after them."""


@dataclass(frozen=True)
class PhaseStep:
    """One phase of a service's walk (simulate --phases): the service at that phase, and its
    objects in this cluster as they are applied then."""

    phase: str
    service: Service
    objects: list[Obj]


@dataclass
class PhaseWalk:
    """A migrating service walked through its ladder (workloads/phases.py `ladder`) in this
    cluster, beside the other services at the environment's phase, then put back."""

    team: Team
    service: Service
    """The service at the environment's phase."""
    unit: BuiltUnit
    """The team's unit: what the API server refuses is said there (SIM012)."""
    steps: list[PhaseStep]
    back: list[Obj]
    """Its objects at the environment's phase, applied once the walk is done."""


@dataclass
class SimPlan:
    env: str
    build: Build
    """The cluster's build: what the judge holds the pods and tracks to."""
    built: list[BuiltUnit]
    findings: list[Finding] = field(default_factory=list)
    """What the plan says before anything runs: units that do not build, what is not simulated
    (SIM011), pools without an inventory (SIM009)."""
    profile: dict[str, Any] | None = None
    """The fleet's KubeSchedulerConfiguration (None: kube-scheduler's defaults)."""
    beside: bool = False
    """The profile is a second scheduler's, beside the untouched default one."""
    nfd: tuple[tuple[str, ...], str] | None = None
    """nfd-master's flags and configuration as the fleet's NFD chart runs it (None: the site's)."""
    nfd_objects: list[Obj] = field(default_factory=list)
    """The rest of the fleet's NFD chart, applied once the nodes carry their taints."""
    controllers: dict[str, ControllerSetup | None] = field(default_factory=dict)
    """Each add-on's controller manager as the environment runs it (None: none)."""
    kueue: bool = False
    """Kueue's controller manager runs in this environment."""
    crds: list[Obj] = field(default_factory=list)
    """The pinned CRDs to apply (not those of a chart whose controller manager runs)."""
    charted: bool = False
    """A chart whose controller manager runs brings CRDs of its own."""
    namespaces: list[str] = field(default_factory=list)
    """Namespaces the fleet expects add-ons to have made."""
    stand_ins: list[Obj] = field(default_factory=list)
    # The components the fleet relies on but does not run, as stand-in DaemonSets (sitestack.py).
    site_daemons: list[SiteDaemon] = field(default_factory=list)
    """What stands in for the objects teams declare as their own, namespaces first."""
    nodes: list[SimNode] = field(default_factory=list)
    waves: list[Wave] = field(default_factory=list)
    team_jobs: list[tuple[BuiltUnit, Obj]] = field(default_factory=list)
    """The Jobs (batch and Volcano), run after the services settled."""
    jobsets: list[tuple[BuiltUnit, Obj]] = field(default_factory=list)
    """The JobSets and TrainJobs, run after the Jobs, beside the services."""
    queued: list[tuple[Team, Job, str]] = field(default_factory=list)
    """The JobSets and TrainJobs Kueue decides on: (team, job, the kind its Workload is owned
    by)."""
    schedulers: frozenset[str] = frozenset()
    """The names of the schedulers that run here."""
    refs: dict[tuple[str, str, str], PodRef] = field(default_factory=dict)
    """(namespace, kind, name) of every workload -> its pod template and values path."""
    walks: list[PhaseWalk] = field(default_factory=list)
    """The migrating services to walk through their phases (simulate --phases; none without)."""

    @property
    def view(self) -> FleetView:
        return self.build.view

    @property
    def node_info(self) -> dict[str, SimNode]:
        return {n.name: n for n in self.nodes}


def make_plan(
    loaded: Values,
    build: Build,
    built: list[BuiltUnit],
    findings: list[Finding] | None = None,
    *,
    phases: bool = False,
) -> SimPlan:
    """The plan of one cluster from its build and its units as kustomize built them
    (`findings`: the kustomize build's); with `phases`, each migrating service's walk through
    its phases too."""
    view = build.view
    env = view.key
    plan = SimPlan(env, build, built, list(findings or []))
    profile = scheduler_config(built)
    plan.profile = profile
    # The fleet's own packing scheduler (a Deployment it renders) runs as a second scheduler
    # process beside an untouched default one, with the rendered profile and name, as on the
    # cluster; a profile for the control plane's own scheduler replaces its configuration.
    plan.beside = profile is not None and _profile_name(profile) != DEFAULT_SCHEDULER
    rendered = any(
        o.get("kind") == "Deployment" for b in built if b.unit.name == PACKING_UNIT for o in b.docs
    )
    # nfd-master as the fleet's NFD chart deploys it; the site's (not rendered) with the flags
    # docs/node-config.md asks of it, which the run says it assumed (SIM011).
    nfd_objs = nfd_chart(built, view.fleet.kubernetes_version)
    plan.nfd = None if nfd_objs is None else nfd_master(nfd_objs)
    site_nfd = plan.nfd is None and view.fleet.node_config_method == "nfd"
    # The add-ons' controller managers (Kueue's, JobSet's, LeaderWorkerSet's) as the fleet's
    # charts deploy them, or with their charts' defaults for the site's.
    controllers = {
        key: rendered_controller(built, key, view.fleet.kubernetes_version)
        for key in CONTROLLER_ADDONS
    }
    plan.controllers = {key: setup for key, (setup, _) in controllers.items()}
    kueue = controllers["kueue"][0]
    plan.kueue = kueue is not None
    plan.findings += not_simulated(
        view,
        built,
        packing=profile is not None and not rendered,
        site_nfd=site_nfd,
        controllers={k: SITE if site else FLEET for k, (c, site) in controllers.items() if c},
        integrations=tuple(integrations(kueue)) if kueue else (),
    )
    # Where an add-on's controller manager runs, its CRDs are its chart's (use_controller), with
    # the conversion webhook the chart wires: the pinned copies of the same CRDs are not applied
    # over them.
    crds = needed_crds([o for b in built for o in b.docs])
    charted = {g for c in plan.controllers.values() if c for g in c.groups()}
    plan.crds = [c for c in crds if c["spec"]["group"] not in charted]
    plan.charted = bool(charted)
    plan.namespaces = addon_namespaces(loaded, env)
    plan.findings += across_clusters(build.workloads)
    plan.stand_ins = external.stand_in_objects(build.workloads)
    plan.findings += external.said(build.workloads)
    plan.site_daemons = sitestack.site_daemons(build)
    plan.findings += sitestack.said(build, plan.site_daemons)
    plan.namespaces += sorted(
        {d.obj["metadata"]["namespace"] for d in plan.site_daemons} - set(plan.namespaces)
    )
    plan.nfd_objects = nfd_applied(nfd_objs or [])

    plan.nodes = plan_nodes(view)
    plan.findings += no_inventory(view, plan.nodes)

    for wave in sorted({b.wave for b in built}):
        units = [b for b in built if b.wave == wave]
        jobs = {
            b.unit.path: [o for o in b.docs if (o.get("apiVersion"), o.get("kind")) in JOB_KINDS]
            for b in units
        }
        plan.team_jobs += [(b, o) for b in units for o in jobs[b.unit.path]]
        # JobSets wait until the Jobs have had their turn: they are jobs too, and Kueue would
        # otherwise hold their quota through the whole job phase (nothing finishes here).
        for b in units:
            held = [o for o in b.docs if o.get("kind") in HELD_KINDS.values()]
            jobs[b.unit.path] += held
            plan.jobsets += [(b, o) for o in held]
        # No Argo CD runs here: its Applications are checked (dry-run), not acted on.
        syncs: list[Sync] = [
            (b, b.docs, True)
            if b.unit.name == ARGOCD_UNIT
            else (b, [o for o in b.docs if o not in jobs[b.unit.path]], False)
            for b in units
        ]
        node_config = [b for b in units if b.unit.name == "node-config"]
        plan.waves.append(Wave(syncs, node_config))
    plan.queued = [
        (team, job, HELD_KINDS[job.kind])
        for team in view.teams
        for job in build.workloads.of(team).jobs
        if job.kind in HELD_KINDS
    ]
    # The schedulers that run here: the control plane's and the fleet's packing scheduler.
    plan.schedulers = frozenset(
        {DEFAULT_SCHEDULER} | ({_profile_name(profile)} if plan.beside and profile else set())
    )
    plan.refs = as_deployed(pod_refs(build), built)
    plan.walks = phase_walks(build, built) if phases else []
    return plan


def ident(obj: Obj) -> tuple[str, str, str, str]:
    """An object's identity, tolerant of a field the API server or a render left out."""
    meta = obj.get("metadata") or {}
    return (
        str(obj.get("apiVersion")),
        str(obj.get("kind")),
        str(meta.get("namespace") or ""),
        str(meta.get("name")),
    )


# The kinds a values `patch` of a service may change (builders/workloads.py patch_targets): at
# another phase only their replicas differ.
_PATCHED = ("Deployment", "LeaderWorkerSet")


def _as_applied(obj: Obj, deployed: dict[tuple[str, str, str, str], Obj]) -> Obj:
    """`obj`, rendered at another phase, as the cluster gets it then: the unit's object (as
    kustomize built it: a values patch and the unit's labels included) with what the phase
    changes: a track's replicas; the spec of the others (the Service's selector, a route's
    weights) and their annotations (the phase)."""
    live = deployed.get(ident(obj))
    if live is None:
        return obj
    out = copy.deepcopy(live)
    if obj["kind"] in _PATCHED:
        out["spec"]["replicas"] = obj["spec"]["replicas"]
    elif "spec" in obj:
        out["spec"] = copy.deepcopy(obj["spec"])
    notes = obj["metadata"].get("annotations") or {}
    if notes:
        out["metadata"]["annotations"] = {**(out["metadata"].get("annotations") or {}), **notes}
    return out


def _step(
    build: Build,
    team: Team,
    svc: Service,
    phase: str,
    deployed: dict[tuple[str, str, str, str], Obj],
) -> PhaseStep:
    moved = replace(svc, phase=phase)
    objs = service_objects(build.view, team, moved)
    return PhaseStep(phase, moved, [_as_applied(o, deployed) for o in objs])


def phase_walks(build: Build, built: list[BuiltUnit]) -> list[PhaseWalk]:
    """Each migrating service with something in this cluster (a track, or the route of a
    service across clusters), with its objects at each phase of its ladder rendered by the
    builder that renders it (builders/workloads.py service_objects) for that phase."""
    units = {b.unit.name: b for b in built}
    out: list[PhaseWalk] = []
    for team in build.view.teams:
        unit = units.get(unit_name(team.name))
        if unit is None:
            continue
        deployed = {ident(o): o for o in unit.docs}
        for svc in build.workloads.of(team).services:
            steps = ladder(svc)
            if not steps or not (svc.local_tracks or svc.routes_here):
                continue

            walk = [_step(build, team, svc, p, deployed) for p in steps]
            back = _step(build, team, svc, svc.phase, deployed).objects
            out.append(PhaseWalk(team, svc, unit, walk, back))
    return out


def no_inventory(view: FleetView, nodes: list[SimNode]) -> list[Finding]:
    """SIM009 once per pool whose server type has no PCI inventory, at the pool: its nodes carry
    the pool's labels and taints as declared (nodes.py), and nothing else is said of them."""
    out: list[Finding] = []
    for vendor in view.vendors:
        for pool in vendor.pools:
            names = [n.name for n in nodes if n.pool is pool and n.declared]
            if not names:
                continue
            out.append(
                Finding(
                    "SIM009",
                    f"pool {vendor.id}/{pool.name} (model {pool.model}; nodes {', '.join(names)}): "
                    "no PCI inventory for its server type, so nfd-master has nothing to match: "
                    "its nodes were registered with the pool's labels and taints as declared, "
                    "and whether its NodeFeatureRule matches the hardware is not simulated",
                    vendor.doc.locate(("pools", pool.index)),
                    json_path(("pools", pool.index)),
                    hint=HINTS["SIM009"],
                    severity=Severity.WARNING,
                )
            )
    return out


def pod_refs(build: Build) -> dict[tuple[str, str, str], PodRef]:
    """(namespace, kind, name) of every workload -> its pod template and values path, from the
    build that is deployed."""
    out: dict[tuple[str, str, str], PodRef] = {}
    for team in build.view.teams:
        refs = build.team(team).pods
        loaded = build.workloads.of(team)
        ns_of = {j.name: j.namespace for j in loaded.jobs}
        ns_of.update({s.name: s.namespace for s in loaded.services})
        for ref in refs:
            base = ref.name.split("/")[0]
            ns = ns_of.get(base) or next(
                (str(n) for svc, n in ns_of.items() if base.startswith(f"{svc}-")), ""
            )
            out[(str(ns), ref.kind, ref.name)] = ref
    return out


def as_deployed(
    refs: dict[tuple[str, str, str], PodRef], built: list[BuiltUnit]
) -> dict[tuple[str, str, str], PodRef]:
    """Each pod template as kustomize built it, which is what the cluster gets: a values
    `patch` of a workload (a kustomize patch in its unit) changes it after the builders made it.
    A TrainJob's pods come from its runtime, not from an object of the unit: the build's stay."""
    docs: dict[tuple[str, str, str, str], Obj] = {}
    for unit in built:
        for obj in unit.docs:
            meta = obj.get("metadata") or {}
            key = (str(meta.get("namespace", "")), str(obj.get("apiVersion")), str(obj.get("kind")))
            docs[(*key, str(meta.get("name")))] = obj
    out: dict[tuple[str, str, str], PodRef] = {}
    for key, ref in refs.items():
        spec = _built_spec(docs, key)
        out[key] = ref if spec is None else replace(ref, spec=spec)
    return out


def _built_spec(
    docs: dict[tuple[str, str, str, str], Obj], key: tuple[str, str, str]
) -> dict[str, Any] | None:
    ns, kind, name = key
    owner, _, task = name.partition("/")

    def named(items: list[Obj]) -> Obj:
        return next((i for i in items if i.get("name") == task), {})

    try:
        if kind in ("Job", "Deployment"):
            obj = docs.get((ns, BATCH if kind == "Job" else APPS, kind, name))
            return None if obj is None else dict(obj["spec"]["template"]["spec"])
        if kind == "LeaderWorkerSet":
            obj = docs.get((ns, LWS, kind, name))
            group = None if obj is None else obj["spec"]["leaderWorkerTemplate"]
            return None if group is None else dict(group["leaderTemplate"]["spec"])
        if kind == "JobSet task":
            obj = docs.get((ns, JOBSET, "JobSet", owner))
            job = named(obj["spec"]["replicatedJobs"]) if obj is not None else {}
            return dict(job["template"]["spec"]["template"]["spec"]) if job else None
        if kind == "Job (volcano) task":
            obj = docs.get((ns, VOLCANO_BATCH, "Job", owner))
            found = named(obj["spec"]["tasks"]) if obj is not None else {}
            return dict(found["template"]["spec"]) if found else None
    except (KeyError, TypeError):
        return None  # a patch that removed the template: the build's stands
    return None


def _profile_name(config: dict[str, Any]) -> str:
    profiles = config.get("profiles") or [{}]
    return str(profiles[0].get("schedulerName") or DEFAULT_SCHEDULER)


def scheduler_config(built: list[BuiltUnit]) -> dict[str, Any] | None:
    """The KubeSchedulerConfiguration the fleet renders for its clusters' scheduler (packing),
    as the cluster would read it from the ConfigMap; None: kube-scheduler's defaults."""
    for unit in built:
        for obj in unit.docs:
            meta = obj.get("metadata", {})
            if obj.get("kind") == "ConfigMap" and meta.get("name") == KUBE_SCHEDULER_CONFIGMAP:
                text = (obj.get("data") or {}).get(KUBE_SCHEDULER_CONF_KEY, "")
                doc = yaml.safe_load(text) if text else None
                return doc if isinstance(doc, dict) else None
    return None
