"""Scheduling checks (codes SCH; docs/scheduling.md): backends, topology, placement preferences.

Values checks run at render time on the workloads as the builders make them; SCH001 runs in
validate on the queues exactly as kustomize builds them (generator/validate/scheduling_rules.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from generator.builders import scheduling
from generator.builders.workloads import (
    queue_name,
    team_capability,
    team_devices,
)
from generator.findings import Finding, Severity
from generator.policy.checks import NO_TEAM, PER_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.values.merge import Doc
from generator.values.model import FleetView, Pool, Team, Vendor
from generator.values.quantity import parse_quantity
from generator.values.yamlio import YamlPath, json_path
from generator.vocab import kube
from generator.vocab.objects import Obj
from generator.workloads.model import PodDecl

# ---- SCH001: the team's queue carries the team's quota -----------------------------------------


def queue_problems(view: FleetView, team: Team, obj: Obj) -> list[str]:
    """How a built Volcano Queue or Kueue ClusterQueue of the team differs from its quota."""
    spec = obj.get("spec") or {}
    want_cap, want_own = team_capability(view, team), team_devices(view, team)
    if obj.get("kind") == "Queue":
        got: dict[str, dict[str, Any]] = {"capability": spec.get("capability") or {}}
        want: dict[str, dict[str, int]] = {"capability": want_cap}
        if scheduling.queue_policy(view) == "capacity":
            got["deserved"] = spec.get("deserved") or {}
            want["deserved"] = want_own
    else:
        nominal: dict[str, float] = {}
        ceiling: dict[str, float] = {}
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    name = str(res.get("name"))
                    if name not in want_own:
                        continue
                    n = _int(res.get("nominalQuota"))
                    nominal[name] = nominal.get(name, 0) + n
                    ceiling[name] = ceiling.get(name, 0) + n + _int(res.get("borrowingLimit"))
        got = {"nominal quota": nominal, "nominal quota + borrowing limit": ceiling}
        want = {"nominal quota": want_own, "nominal quota + borrowing limit": want_cap}
    out = []
    for field, expected in want.items():
        for res, n in expected.items():
            have = got[field].get(res)
            if have is None or _int(have) != n:
                out.append(f"{field} of {res} is {have!r}, the team's quota gives {n}")
    return out


def _int(value: Any) -> float:
    """A whole quantity (unset: 0), else NaN: no sum with a part that is not whole matches a quota
    (with -1, a flavor's 500m beside another's 5 summed to a quota of 4)."""
    if isinstance(value, float) and math.isnan(value):
        return value
    qty = parse_quantity(value if value is not None else 0)
    return int(qty) if qty is not None and qty.denominator == 1 else math.nan


# ---- SCH002: Kueue cannot account a Volcano Job --------------------------------------------------


def volcano_under_kueue(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if scheduling.backend(view) != "kueue":
        return
    for team in view.teams:
        for job in ctx.build.workloads.of(team).jobs:
            if job.kind != "volcano":
                continue
            path = (*job.path, "kind") if team.doc.get(*job.path, "kind") else job.path
            yield Finding(
                "SCH002",
                f"job {job.name!r} is a Volcano Job, but the backend is kueue: Kueue has no "
                f"Volcano integration, so its devices would escape the team's ClusterQueue and "
                f"its pods could take the quota of jobs Kueue admitted",
                team.doc.locate(path),
                json_path(path),
                "use scheduling.backend: volcano in values/fleet.yaml, or write the job as "
                "batch/v1 Jobs (vendor, devices, parallelism)",
            )


# ---- pods, the pools they may land on, and the devices they ask for ---------------------------


def devices_path(doc: Doc, path: YamlPath) -> YamlPath:
    for key in ("devices", "devicesPerReplica"):
        if doc.get(*path, key) is not None:
            return (*path, key)
    return path


def topology_shape(vendor: Vendor, pool: Pool) -> tuple[str, dict[str, Any]] | None:
    """The pool's node topology (label value) and its entry in the vendor's `topology`."""
    topo = vendor.doc.get("topology", default=None) or {}
    value = pool.labels.get(str(topo.get("label", "")))
    shape = (topo.get("shapes") or {}).get(value) if value else None
    return (str(value), shape) if shape else None


def topology_refusals(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for land in ctx.landings(team):
            for pool in land.pools:
                found = topology_shape(land.vendor, pool)
                if found is None or land.devices in found[1]["podDevices"]:
                    continue
                name, shape = found
                allowed = ", ".join(str(n) for n in sorted(shape["podDevices"]))
                path = devices_path(team.doc, land.ref.path)
                yield Finding(
                    "SCH003",
                    f"{land.ref.kind} {land.ref.name!r} asks for {land.devices} {land.vendor.id} "
                    f"devices per pod, which pool {pool.name!r} ({name}: "
                    f"{shape.get('description', '')}) cannot give one pod: allowed "
                    f"{allowed}",
                    team.doc.locate(path),
                    json_path(path),
                    f"ask for one of {allowed} devices per pod, and more pods for more devices "
                    f"(source: {shape.get('source', 'the vendor catalog')})",
                )


def pod_fits_node(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for land in ctx.landings(team):
            sharing = land.vendor.sharing
            if sharing and sharing.one_per_pod:
                continue  # one share per pod: ALC002 (policy/allocation.py)
            units = land.vendor.units
            for pool in land.pools:
                # A node's units: devices, or the MIG instances its devices are partitioned into.
                if land.devices <= pool.units_per_node:
                    continue
                path = devices_path(team.doc, land.ref.path)
                yield Finding(
                    "SCH004",
                    f"{land.ref.kind} {land.ref.name!r} asks for {land.devices} {land.vendor.id} "
                    f"{units} per pod, but a node of pool {pool.name!r} has "
                    f"{pool.units_per_node}",
                    team.doc.locate(path),
                    json_path(path),
                    f"ask for at most {pool.units_per_node} {units} per pod (more pods for "
                    f"more {units}), or pick a model whose nodes have enough",
                )


# ---- placement preferences ---------------------------------------------------------------------


def _fallbacks(ctx: Context, team: Team) -> Iterable[tuple[str, PodDecl, YamlPath]]:
    """(what, pod, values path of its fallbackModel) of every pod that sets one."""
    loaded = ctx.build.workloads.of(team)
    for job in loaded.jobs:
        for task in job.tasks:
            if task.pod.fallback_model:
                path = task.path if team.doc.get(*task.path, "fallbackModel") else job.path
                what = f"job {job.name!r}" + (f" task {task.name!r}" if job.has_tasks else "")
                yield what, task.pod, (*path, "fallbackModel")
    for svc in loaded.services:
        for track in svc.local_tracks:
            if track.pod.fallback_model:
                path = (*svc.path, "tracks", track.vendor, "fallbackModel")
                yield f"service {svc.name!r} track {track.vendor!r}", track.pod, path


def fallback_models(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for what, pod, path in _fallbacks(ctx, team):
            vendor = view.vendor(pod.vendor)
            models = sorted({p.model for p in vendor.pools}) if vendor else []
            problem = ""
            if not pod.model or pod.model == pod.fallback_model:
                problem = "needs a different `model` to prefer"
            elif pod.fallback_model not in models:
                problem = f"names no pool of {pod.vendor} (models: {', '.join(models)})"
            if problem:
                yield Finding(
                    "SCH005",
                    f"{what}: fallbackModel {pod.fallback_model!r} {problem}",
                    team.doc.locate(path),
                    json_path(path),
                    "set model to the preferred pool model and fallbackModel to another model "
                    "of the same vendor",
                )


def pool_capacity(ctx: Context) -> Iterable[Finding]:
    """Worst case: a workload that prefers one model and accepts another may run entirely on
    either, so each model's pools must hold every workload that accepts it (services at their
    phase's replicas, plus the largest such job), as MIG005 does for a vendor."""
    view = ctx.view
    if not view.env:
        return
    parts = [p for t in view.teams for p in ctx.build.team(t).pinned]
    for vendor in view.vendors:
        for model in sorted({p.model for p in vendor.pools}):
            capacity = sum(p.capacity for p in vendor.pools if p.model == model)
            mine = [p for p in parts if p.vendor == vendor.id and model in p.models]
            services = sum(p.devices for p in mine if not p.is_job)
            jobs = [p for p in mine if p.is_job]
            largest = max((p.devices for p in jobs), default=0)
            if services + largest <= capacity:
                continue
            culprit = max(mine, key=lambda p: (len(p.models) > 1, p.devices))
            path = culprit.path
            for key in ("fallbackModel", "model"):
                if culprit.team.doc.get(*culprit.path, key) is not None:
                    path = (*culprit.path, key)
                    break
            yield Finding(
                "SCH006",
                f"workloads that may run on {vendor.id} {model} need {services + largest} "
                f"devices ({services} for services, {largest} for the largest job; a workload "
                f"with a fallback model counts for both) but its pools hold {capacity}"
                f"",
                culprit.team.doc.locate(path),
                json_path(path),
                f"add {model} nodes, or give {culprit.label} a fallback model with room",
            )


def borrowing_needs_queue(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if scheduling.backend(view) in scheduling.QUEUE_BACKENDS:
        return
    for team in view.teams:
        for vendor_id, n in (team.doc.get("borrowing", default={}) or {}).items():
            if n:
                path = ("borrowing", vendor_id)
                yield Finding(
                    "SCH007",
                    f"team {team.name!r} may borrow {n} {vendor_id} devices, but backend "
                    f"{scheduling.backend(view)!r} has no queue that lends",
                    team.doc.locate(path),
                    json_path(path),
                    "set scheduling.backend: volcano or kueue, or remove borrowing",
                    Severity.WARNING,
                )


# ---- SCH008: a job's networkTopology is one Volcano honours -------------------------------------


def _topology_problem(view: FleetView, kind: str, topo: dict[str, Any]) -> tuple[str, str, str]:
    """(what is wrong, the key under networkTopology to point at, hint), or ("", "", "")."""
    if kind != "volcano":
        return (
            "is a batch/v1 Job: only a Volcano Job carries networkTopology",
            "",
            "set kind: volcano (with tasks), or remove networkTopology",
        )
    if scheduling.backend(view) != "volcano":
        # The tier limit is enforced by the network-topology-aware plugin's
        # HyperNodeGradientForJobFn (volcano-sh/volcano v1.14.0
        # pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go); the fleet
        # renders the Volcano scheduler configuration, and so the plugin, only under `volcano`.
        return (
            f"asks for a network topology, but backend {scheduling.backend(view)!r} renders no "
            "Volcano scheduler configuration, so nothing enables the network-topology-aware "
            "plugin that honours it",
            "",
            "set scheduling.backend: volcano in values/fleet.yaml (or the environment's fleet:), "
            "or remove networkTopology",
        )
    if topo.get("highestTierAllowed") is not None and topo.get("highestTierName") is not None:
        # volcano-sh/volcano v1.14.0 pkg/webhooks/admission/jobs/validate/admit_job.go
        # validateNetworkTopology refuses the job.
        return (
            "sets both highestTierAllowed and highestTierName, which Volcano's admission "
            "webhook refuses",
            "highestTierName",
            "keep one of highestTierAllowed and highestTierName",
        )
    has_tier = any(topo.get(k) is not None for k in ("highestTierAllowed", "highestTierName"))
    if topo.get("mode", "hard") == "hard" and not has_tier:
        # volcano-sh/volcano v1.14.0 pkg/scheduler/api/job_info.go IsHardTopologyMode: hard
        # mode without highestTierAllowed is no hard constraint at all.
        return (
            "is in hard mode without highestTierAllowed or highestTierName, which Volcano "
            "treats as no constraint",
            "",
            "set highestTierAllowed: <tier> (or highestTierName), or mode: soft",
        )
    return "", "", ""


def network_topology_honoured(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for job in ctx.build.workloads.of(team).jobs:
            if job.network_topology is None:
                continue
            problem, key, hint = _topology_problem(view, job.kind, job.network_topology)
            if not problem:
                continue
            path: YamlPath = (*job.path, "networkTopology", *((key,) if key else ()))
            yield Finding(
                "SCH008",
                f"job {job.name!r} {problem}",
                team.doc.locate(path, key=not key),
                json_path(path),
                hint + " (docs/scheduling.md)",
            )


# ---- SCH009: a Kueue flavor that can admit each workload ----------------------------------------


def _flavor_limits(objs: list[Obj], resource: str) -> dict[str, int]:
    """nominalQuota + borrowingLimit of `resource` per flavor of the team's ClusterQueue."""
    out: dict[str, int] = {}
    for obj in objs:
        if obj.get("kind") != "ClusterQueue":
            continue
        for group in obj["spec"].get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    if res.get("name") == resource:
                        limit = int(res.get("nominalQuota", 0)) + int(res.get("borrowingLimit", 0))
                        out[flavor["name"]] = limit
    return out


def kueue_admission(ctx: Context) -> Iterable[Finding]:
    """Kueue admits a workload's devices on one flavor (kueue v0.17.0
    pkg/scheduler/flavorassigner/flavorassigner.go, assignFlavors: one flavor per resource
    group), one whose node labels its pods' selectors accept, and only within that flavor's
    nominal quota plus borrowing limit. A batch/v1 Job's pods are one workload (parallelism x
    devices), and a TrainJob's (numNodes x devices: one pod set, kueue v0.17.0
    pkg/controller/jobs/trainjob PodSets); a Deployment's pods one each. No such flavor: the
    job is never admitted, while render and plan would say it fits."""
    view = ctx.view
    if scheduling.backend(view) != "kueue":
        return
    for team in view.teams:
        objs = ctx.build.team(team).objects
        for land in ctx.landings(team):
            if land.ref.kind not in ("Job", "TrainJob", "Deployment"):
                continue  # a Volcano Job under Kueue is SCH002
            whole = land.ref.kind in ("Job", "TrainJob")
            need = land.devices * (land.ref.count if whole else 1)
            limits = _flavor_limits(objs, land.vendor.resource_name)
            room = {
                scheduling.flavor_name(land.vendor, p): limits.get(
                    scheduling.flavor_name(land.vendor, p), 0
                )
                for p in land.pools
            }
            if not room or max(room.values()) >= need:
                continue
            shown = ", ".join(f"{name} {n}" for name, n in sorted(room.items()))
            path = devices_path(team.doc, land.ref.path)
            yield Finding(
                "SCH009",
                f"{land.ref.kind} {land.ref.name!r} needs {need} {land.vendor.resource_name} "
                f"admitted at once on one Kueue flavor, but the flavors its pods may use allow "
                f"at most: {shown} (nominal quota + borrowing limit in ClusterQueue "
                f"{queue_name(team)}): Kueue never admits it",
                team.doc.locate(path),
                json_path(path),
                f"raise the team's {land.vendor.id} quota (or borrowing) so that each pinned "
                f"model's pool gets enough, or ask for fewer devices (docs/scheduling.md)",
            )


# ---- SCH011: a ClusterQueue holds at most 16 resource groups ------------------------------------

# kueue v0.17.0 apis/kueue/v1beta2/clusterqueue_types.go, ClusterQueueSpec.ResourceGroups:
# "+kubebuilder:validation:MaxItems=16" ("resourceGroups can be up to 16").
KUEUE_MAX_RESOURCE_GROUPS = 16


def _resource_path(vendor: Vendor) -> YamlPath:
    """Where the vendor's file says what resource it advertises: `resourceName`, else the
    sharing or allocation that derives it, else its pools."""
    for path in (("resourceName",), ("sharing",), ("allocation",)):
        if vendor.doc.get(*path) is not None:
            return path
    return ("pools",)


def resource_groups_limit(ctx: Context) -> Iterable[Finding]:
    """A team's ClusterQueue has a resource group per accelerator resource of the view's
    vendors (vendors of one resource name share it), then `general` for the cpu and memory its
    workloads request (builders/workloads.py _queues); the API server refuses more than 16. The
    finding is at the vendor whose resource takes the first group past the limit (groups are in
    resource-name order): the one to move to another cluster, or to give up."""
    view = ctx.view
    if scheduling.backend(view) != "kueue":
        return
    vendor_of: dict[str, Vendor] = {}
    for vendor in view.vendors:
        vendor_of.setdefault(vendor.resource_name, vendor)
    for team in view.teams:
        for obj in ctx.build.team(team).objects:
            if obj.get("kind") != "ClusterQueue":
                continue
            groups = obj["spec"].get("resourceGroups") or []
            if len(groups) <= KUEUE_MAX_RESOURCE_GROUPS:
                continue
            accelerators = [
                str(g["coveredResources"][0])
                for g in groups
                if g["coveredResources"] and g["coveredResources"][0] in vendor_of
            ]
            room = KUEUE_MAX_RESOURCE_GROUPS - (len(groups) - len(accelerators))
            vendor = vendor_of[accelerators[max(room, 0)]]
            path = _resource_path(vendor)
            over = len(groups) - KUEUE_MAX_RESOURCE_GROUPS
            yield Finding(
                "SCH011",
                f"ClusterQueue {obj['metadata']['name']} would hold {len(groups)} resource "
                f"groups; Kueue allows {KUEUE_MAX_RESOURCE_GROUPS}: one per accelerator resource "
                f"of this environment's vendors ({len(accelerators)})"
                + (
                    ", and one for the cpu and memory the team's workloads request"
                    if len(groups) > len(accelerators)
                    else ""
                ),
                vendor.doc.anchor(path),
                json_path(path),
                f"advertise {over} accelerator resource{'s' if over > 1 else ''} fewer here: "
                f"{vendor.resource_name} (vendor {vendor.id}) and those after it by name are past "
                "the limit. Move vendors to another cluster (docs/multi-cluster.md), let vendors "
                "share a resourceName, or use scheduling.backend volcano or quota (kueue v0.17.0 "
                "apis/kueue/v1beta2/clusterqueue_types.go: resourceGroups MaxItems=16)",
            )


# ---- SCH010: who runs the packing profile --------------------------------------------------------


def _packing_problem(view: FleetView) -> tuple[str, YamlPath, str] | None:
    settings: YamlPath = ("scheduling", "kubeScheduler")
    runs = scheduling.packing_runs(view)
    kubeconfig = view.fleet.doc.get(*settings, "kubeconfig")
    if runs == scheduling.CONTROL_PLANE and not kubeconfig:
        return (
            "the packing profile is for the control plane's own kube-scheduler (runs: "
            "control-plane), which is started with --config and then ignores --kubeconfig "
            "(k8s.io/kubernetes v1.36.3 cmd/kube-scheduler/app/options/deprecated.go): without "
            "clientConnection.kubeconfig in the profile it has no API server to talk to",
            (*settings, "runs"),
            "set kubeScheduler.kubeconfig to the scheduler's kubeconfig on the control-plane "
            "nodes (kubeadm: /etc/kubernetes/scheduler.conf), or runs: fleet",
        )
    if runs == scheduling.FLEET and kubeconfig:
        return (
            "the fleet runs the packing scheduler in a pod, which has no kubeconfig file: it "
            "connects with its ServiceAccount",
            (*settings, "kubeconfig"),
            "drop kubeScheduler.kubeconfig, or runs: control-plane where the control plane runs "
            "the profile",
        )
    if runs == scheduling.FLEET and scheduling.scheduler_name(view) == kube.DEFAULT_SCHEDULER:
        return (
            "the fleet's packing scheduler would run as default-scheduler beside the cluster's "
            "own: two schedulers would take the same pods",
            (*settings, "schedulerName"),
            "give it a name of its own (default accel-packing-scheduler), or runs: control-plane",
        )
    return None


def packing_runner(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if not scheduling.packing(view):
        return
    problem = _packing_problem(view)
    if problem is not None:
        message, path, hint = problem
        yield Finding(
            "SCH010",
            message,
            view.fleet.doc.anchor(path),
            json_path(path),
            hint + " (docs/scheduling.md)",
        )


CHECKS: tuple[Check, ...] = (
    Check(
        "SCH010",
        "the packing profile has no scheduler that can run it as configured",
        packing_runner,
        scope=NO_TEAM,
    ),
    Check(
        "SCH002",
        "a Volcano Job under the Kueue backend, which Kueue cannot account",
        volcano_under_kueue,
        scope=PER_TEAM,
    ),
    Check(
        "SCH003",
        "a pod asks for a device count its pool's topology cannot give one pod",
        topology_refusals,
        scope=PER_TEAM,
    ),
    Check(
        "SCH004",
        "a pod asks for more devices than one node of a pool it may land on has",
        pod_fits_node,
        scope=PER_TEAM,
    ),
    Check(
        "SCH005",
        "a fallbackModel is not another pool model of the workload's vendor",
        fallback_models,
        scope=PER_TEAM,
    ),
    Check(
        "SCH006",
        "the workloads that may land on a pool model need more devices than it holds",
        pool_capacity,
    ),
    Check(
        "SCH007",
        "a team sets borrowing, which only a queue backend (volcano, kueue) lends",
        borrowing_needs_queue,
        WARNING,
        scope=PER_TEAM,
    ),
    Check(
        "SCH009",
        "under Kueue, no flavor of the team's ClusterQueue can admit a workload whole",
        kueue_admission,
        scope=PER_TEAM,
    ),
    Check(
        "SCH008",
        "a job's networkTopology is one nothing would honour",
        network_topology_honoured,
        scope=PER_TEAM,
    ),
    Check(
        "SCH011",
        "under Kueue, a team's ClusterQueue would hold more resource groups than Kueue allows",
        resource_groups_limit,
        scope=PER_TEAM,
    ),
)
