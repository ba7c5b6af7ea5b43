"""Checks on team workloads (codes WKL, MIG, POD; docs/workloads.md lists them)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations
from typing import Any

from generator.builders.build import PodRef
from generator.builders.scheduling import scheduler_name as scheduling_name
from generator.builders.workloads import workload_mounts
from generator.findings import Finding, Place, Severity, did_you_mean
from generator.policy.capacity import pool_lines
from generator.policy.checks import EITHER, PER_TEAM, WARNING, Check, CheckFn
from generator.policy.context import Context
from generator.policy.manifest import pod_annotation_allowed, production
from generator.policy.placement import SUMMARIES, Problem
from generator.values.model import FleetView, Team, Vendor
from generator.values.yamlio import YamlPath, json_path
from generator.vocab.kube import DEFAULT_SCHEDULER
from generator.vocab.labels import VOLCANO_QUEUE_ANNOTATION
from generator.workloads import podspec
from generator.workloads.phases import plan_service
from generator.workloads.usage import Usage, fleet_needs, vendor_usage


def workload_values(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        yield from ctx.build.workloads.of(team).findings


# What a `kind: trainjob` job may not set, and why: a TrainJob carries its pods' settings only as
# its trainer fields and a runtime patch of the pod fields Trainer lets managers set
# (github.com/kubeflow/trainer/v2 v2.2.0 pkg/apis/trainer/v1alpha1/trainjob_types.go TrainJobSpec,
# Trainer, PodSpecPatch, ContainerPatch); the rest of its pods and Jobs is its runtime's.
TRAINJOB_REFUSED = {
    "priorityClassName": "a runtime patch has no priorityClassName (PodSpecPatch)",
    "topologySpreadConstraints": "a runtime patch has no topologySpreadConstraints (PodSpecPatch)",
    "envFrom": "a TrainJob's trainer has env but no envFrom (Trainer)",
    "ttlSecondsAfterFinished": "a TrainJob has no ttlSecondsAfterFinished (TrainJobSpec)",
    "parallelism": "a TrainJob's pods are its numNodes",
    "completions": "a TrainJob's Jobs complete as its runtime says",
    "backoffLimit": "a TrainJob's Jobs restart as its runtime says",
    "minAvailable": "a TrainJob is admitted whole by Kueue, not gang-scheduled by Volcano",
    "successPolicy": "a TrainJob's JobSet policies are its runtime's",
    "failurePolicy": "a TrainJob's JobSet policies are its runtime's",
}


def trainjob_limits(ctx: Context) -> Iterable[Finding]:
    """A `kind: trainjob` job that asks for what a TrainJob cannot carry: the setting would be
    dropped without a word, so it is an error at its line."""
    view = ctx.view
    scheduler = scheduling_name(view)
    for team in view.teams:
        for job in ctx.build.workloads.of(team).jobs:
            if job.kind != "trainjob":
                continue
            raw = team.doc.get(*job.path, default={}) or {}
            problems: list[tuple[YamlPath, str, str]] = [
                ((*job.path, key), why, f"remove {key}")
                for key, why in TRAINJOB_REFUSED.items()
                if raw.get(key) is not None
            ]
            vendor = view.vendor(job.tasks[0].pod.vendor)
            if vendor is not None and vendor.runtime_class and job.tasks[0].pod.devices:
                problems.append(
                    (
                        (*job.path, "vendor"),
                        f"vendor {vendor.id!r} needs RuntimeClass {vendor.runtime_class!r} on "
                        "its pods, and a runtime patch has no runtimeClassName (PodSpecPatch)",
                        "make the vendor's container runtime the nodes' default and drop "
                        f"runtimeClass from values/vendors/{vendor.id}.yaml, or use kind: jobset",
                    )
                )
            if scheduler != DEFAULT_SCHEDULER:
                problems.append(
                    (
                        (*job.path, "kind"),
                        f"the fleet's pods ask for scheduler {scheduler!r}, and a runtime patch "
                        "has no schedulerName (PodSpecPatch): the TrainJob's pods would bypass it",
                        "use kind: volcano or jobset under this scheduling backend",
                    )
                )
            for path, why, fix in problems:
                yield Finding(
                    "WKL010",
                    f"job {job.name!r} is a TrainJob: {why}",
                    # a refused setting at its key; the vendor or kind at the value that chose it
                    team.doc.locate(path, key=path[-1] not in ("vendor", "kind")),
                    json_path(path),
                    fix,
                )


# An error, not a warning: Pod Security admission refuses every pod of such a workload, so Argo CD
# would sync a Job or Deployment that never runs.
def host_paths(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        loaded = ctx.build.workloads.of(team)
        pods = [(j.namespace, t.pod, t.path) for j in loaded.jobs for t in j.tasks]
        pods += [
            (s.namespace, t.pod, (*s.path, "tracks", t.vendor))
            for s in loaded.services
            for t in s.local_tracks
        ]
        for _ns, pod, path in pods:
            vendor = view.vendor(pod.vendor)
            if vendor is None or not pod.devices or not pod.vendor_mounts:
                continue
            mounts = workload_mounts(vendor)
            if mounts:
                yield Finding(
                    "WKL004",
                    f"pods mount {', '.join(m['path'] for m in mounts)} (workloadMounts of "
                    f"{vendor.id}) as hostPath, which Pod Security {team.pod_security!r} "
                    f"refuses",
                    team.doc.locate(path),
                    json_path(path),
                    "rely on the vendor's container runtime to inject the driver "
                    "(Ascend Docker Runtime) and set vendorMounts: false on the workload",
                )


def _workload_raws(ctx: Context, team: Team) -> Iterable[tuple[YamlPath, dict[str, Any]]]:
    """(values path, merged values) of each enabled workload of the team that resolved."""
    loaded = ctx.build.workloads.of(team)
    for path in [j.path for j in loaded.jobs] + [s.path for s in loaded.services]:
        yield path, team.doc.get(*path, default={}) or {}


def host_path_volumes(ctx: Context) -> Iterable[Finding]:
    # Both team Pod Security levels refuse hostPath volumes (kubernetes v1.36.3
    # staging/src/k8s.io/pod-security-admission/policy/check_hostPathVolumes.go: baseline, so
    # restricted too); a team namespace is privileged only under the fleet's admission policy,
    # which keeps that check (SEC002, builders/security.py).
    view = ctx.view
    for team in view.teams:
        for path, raw in _workload_raws(ctx, team):
            for i, host in podspec.host_path_volumes(raw):
                at = (*path, "volumes", i)
                yield Finding(
                    "WKL004",
                    f"volume {i} mounts the node's {host!r} (hostPath), which Pod Security "
                    f"{team.pod_security!r} refuses",
                    team.doc.locate(at),
                    json_path(at),
                    "use a persistentVolumeClaim (a dataset), a configMap or secret, or an "
                    "emptyDir",
                )


def foreign_tolerations(ctx: Context) -> Iterable[Finding]:
    """A workload's own tolerations must not let its pods onto a pool they do not ask for: a
    pool's taint keeps other pods off its devices' nodes."""
    view = ctx.view
    for team in view.teams:
        loaded = ctx.build.workloads.of(team)
        pods = [(j.path, {t.pod.vendor for t in j.tasks}) for j in loaded.jobs]
        pods += [(s.path, {t.vendor for t in s.local_tracks}) for s in loaded.services]
        for path, vendors in pods:
            raw = team.doc.get(*path, "tolerations", default=[]) or []
            for i, tol in enumerate(raw):
                hit = next(
                    (
                        (vendor, taint)
                        for vendor in view.vendors
                        if vendor.id not in vendors
                        for taint in vendor.all_taints
                        if podspec.tolerates(tol, taint)
                    ),
                    None,
                )
                if hit is None:
                    continue
                vendor, taint = hit
                at = (*path, "tolerations", i)
                yield Finding(
                    "WKL007",
                    f"toleration {i} tolerates {vendor.id}'s pool taint "
                    f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}, "
                    f"so the workload's pods may land on {vendor.id} nodes it does not use",
                    team.doc.locate(at),
                    json_path(at),
                    "name the taint key you mean (an empty key with Exists tolerates every "
                    "taint); the pools the workload runs on are tolerated already",
                )


def allowed_annotations(ctx: Context) -> Iterable[Finding]:
    """Pod annotations can change what the cluster does with a pod (a sidecar injected, a
    network policy bypassed): teams set only the keys the fleet lists (SEC006 on the built
    objects says the same, later)."""
    view = ctx.view
    allowed = view.fleet.doc.get("teamPodAnnotations", default=[]) or []
    for team in view.teams:
        for path, raw in _workload_raws(ctx, team):
            for key in sorted(raw.get("podAnnotations", {}) or {}):
                if key == VOLCANO_QUEUE_ANNOTATION or pod_annotation_allowed(view, key):
                    continue
                at = (*path, "podAnnotations", key)
                yield Finding(
                    "WKL009",
                    f"pod annotation {key!r} is not one the fleet lets teams set",
                    team.doc.locate(at, key=True),
                    json_path(at),
                    did_you_mean(
                        key,
                        allowed,
                        "the platform team adds it to teamPodAnnotations "
                        "in fleet.yaml" + (f" (allowed: {', '.join(allowed)})" if allowed else ""),
                    ),
                )


def owned_annotations(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    owned = {VOLCANO_QUEUE_ANNOTATION: "the team's Volcano queue"}
    for team in view.teams:
        for path, raw in _workload_raws(ctx, team):
            for key in sorted(raw.get("podAnnotations", {}) or {}):
                if key in owned:
                    at = (*path, "podAnnotations", key)
                    yield Finding(
                        "WKL007",
                        f"pod annotation {key!r} is set by the generator ({owned[key]})",
                        team.doc.locate(at, key=True),
                        json_path(at),
                        "remove it: the team's queue is its own (docs/scheduling.md)",
                    )


def undeclared_references(ctx: Context) -> Iterable[Finding]:
    """What a workload's pods name from the cluster is either rendered by the fleet (priority
    classes) or declared by the team as its own (`external`, which preflight checks on the live
    cluster): never assumed."""
    view = ctx.view
    classes = sorted(view.fleet.doc.get("scheduling", "priorityClasses", default={}) or {})
    for team in view.teams:
        external = team.doc.get("external", default={}) or {}
        for path, raw in _workload_raws(ctx, team):
            for ref in podspec.references(raw):
                if ref.kind == "serviceAccounts" and ref.name == "default":
                    continue  # every namespace has it (the ServiceAccount controller's)
                if ref.kind == "priorityClasses":
                    known, where = classes, "scheduling.priorityClasses in fleet.yaml"
                else:
                    known = list(external.get(ref.kind) or [])
                    where = f"external.{ref.kind} in the team's file"
                if ref.name in known:
                    continue
                at = (*path, *ref.path)
                kind = podspec.EXTERNAL_KINDS.get(ref.kind, "PriorityClass")
                yield Finding(
                    "WKL008",
                    f"the pods use {kind} {ref.name!r}, which the fleet does not render and "
                    f"the team does not declare",
                    team.doc.locate(at),
                    json_path(at),
                    did_you_mean(ref.name, known, f"add it to {where}"),
                )


def weights_sum(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for svc in ctx.build.workloads.of(team).services:
            if not svc.explicit_weights:
                continue
            path = (*svc.path, "weights")
            unknown = sorted(set(svc.explicit_weights) - {t.vendor for t in svc.tracks})
            if unknown:
                yield Finding(
                    "MIG001",
                    f"service {svc.name!r} weights name {unknown[0]!r}, which is not one of its "
                    f"tracks",
                    team.doc.locate((*path, unknown[0]), key=True),
                    json_path((*path, unknown[0])),
                    "known tracks: " + ", ".join(t.vendor for t in svc.tracks),
                )
            total = sum(svc.explicit_weights.values())
            if total != 100:
                detail = ", ".join(f"{k} {v}" for k, v in sorted(svc.explicit_weights.items()))
                yield Finding(
                    "MIG001",
                    f"service {svc.name!r} weights sum to {total} ({detail}), not 100",
                    team.doc.locate(path),
                    json_path(path),
                    "weights are percentages of the traffic: make them add up to 100",
                )


def weight_to_empty(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for svc in ctx.build.workloads.of(team).services:
            for plan in plan_service(svc):
                if plan.weight > 0 and plan.replicas == 0 and plan.weight_explicit:
                    path = (*svc.path, "weights", plan.vendor)
                    yield Finding(
                        "MIG002",
                        f"service {svc.name!r} sends weight {plan.weight} to track "
                        f"{plan.vendor!r}, which has 0 replicas",
                        team.doc.locate(path),
                        json_path(path),
                        "set its weight to 0, or give the track replicas",
                    )


def empty_with_traffic(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    for team in view.teams:
        for svc in ctx.build.workloads.of(team).services:
            for plan in plan_service(svc):
                if plan.weight > 0 and plan.replicas == 0 and not plan.weight_explicit:
                    yield Finding(
                        "MIG003",
                        f"service {svc.name!r} track {plan.vendor!r} has 0 replicas but carries "
                        f"{plan.weight}% of the traffic in phase {svc.phase!r}",
                        team.doc.locate(plan.replicas_path),
                        json_path(plan.replicas_path),
                        "keep the track running until the phase moves its traffic away",
                    )


def pod_split(ctx: Context) -> Iterable[Finding]:
    """routing: service sends each serving track the share of ready pods it has. Where that is
    not the phase's weights: an error in a production environment unless the service lets its
    replicas follow the weights (replicasFollowWeights, whose rounding is then said as a
    warning); a warning elsewhere."""
    view = ctx.view
    live = production(view)
    for team in view.teams:
        for svc in ctx.build.workloads.of(team).services:
            if svc.routing != "service":
                continue
            plans = plan_service(svc)
            # One serving track: the Service selects only its pods. Two or more: it selects the
            # pods of every track (builders/workloads.py), a track of weight 0 included.
            if sum(1 for p in plans if p.weight > 0) < 2:
                continue
            pods = sum(p.replicas for p in plans)
            # A track that should get nothing but gets traffic is named first.
            off = sorted(
                (p for p in plans if p.replicas * 100 != p.weight * pods),
                key=lambda p: p.weight > 0,
            )
            if not off:
                continue
            p = off[0]
            share = round(p.replicas * 100 / pods)
            path = (*svc.path, "phase") if team.doc.get(*svc.path, "phase") else svc.path
            if p.weight == 0:
                path = p.replicas_path  # its pods are what should not be there
            error = live and not svc.replicas_follow_weights
            if error:
                hint = (
                    f"environment {view.env!r} is in productionEnvironments: set "
                    "replicasFollowWeights: true (plan shows the replicas it gives), or use "
                    "routing: gateway or istio for weighted traffic"
                )
            elif svc.replicas_follow_weights:
                hint = "the replicas follow the weights as closely as whole pods allow"
            else:
                hint = (
                    "use routing: gateway or istio for weighted traffic, or set "
                    "replicasFollowWeights: true"
                )
            yield Finding(
                "MIG006",
                f"service {svc.name!r} uses routing: service, so track {p.vendor!r} gets "
                f"{share}% of the traffic ({p.replicas} of {pods} ready pods), not the "
                f"{p.weight}% of phase {svc.phase!r}",
                team.doc.locate(path),
                json_path(path),
                hint,
                Severity.ERROR if error else Severity.WARNING,
            )


def fits_quota(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if not view.env:
        return  # quotas and phases are per environment
    # A vendor whose values were refused is not a misspelt key: its quota hides nothing.
    known = {v.id for v in view.vendors} | set(view.refused)
    for team in view.teams:
        misspelt = any(vendor not in known for vendor in team.quota)
        for use in vendor_usage(ctx.build, team):
            if use.needed <= use.quota:
                continue
            if misspelt and use.vendor not in team.quota:
                continue  # the quota names it wrongly: REF001 says which key, once
            vendor = view.vendor(use.vendor)
            units = vendor.units if vendor else "devices"
            yield Finding(
                "MIG004",
                f"team {team.name!r} needs {use.needed} {use.vendor} {units} in namespace "
                f"{use.namespace!r} ({use.detail}) but its quota is {use.quota}",
                team.doc.locate(use.blame),
                json_path(use.blame),
                f"raise quota.{use.vendor}, or lower the replicas or the phase",
            )


def fits_capacity(ctx: Context) -> Iterable[Finding]:
    view = ctx.view
    if not view.env:
        return
    needs = fleet_needs(ctx.build)
    for vendor in view.vendors:
        need = needs.get(vendor.id)
        if need is None or need.needed <= vendor.capacity:
            continue
        culprit = max(need.uses, key=lambda u: u.needed)
        yield Finding.at(
            "MIG005",
            f"workloads need {need.needed} {vendor.id} {vendor.units} ({need.services} for "
            "services, "
            f"{need.largest_job} for the largest job) but its pools hold "
            f"{vendor.capacity}",
            culprit.team_doc.place(culprit.blame),
            f"add nodes to {vendor.id}'s pools, or lower replicas or phases",
            also=_other_uses(need.uses, culprit, vendor),
        )


def jobs_queue(ctx: Context) -> Iterable[Finding]:
    """What every team may run at once, each up to its quota, against the pools: above them,
    teams' jobs wait for each other (the pods stay Pending, or their queue holds them)."""
    view = ctx.view
    if not view.env:
        return
    needs = fleet_needs(ctx.build)
    for vendor in view.vendors:
        need = needs.get(vendor.id)
        if need is None or need.needed > vendor.capacity or need.at_once <= vendor.capacity:
            continue  # no workloads, MIG005 already, or everything fits side by side
        culprit = max(need.uses, key=lambda u: (u.at_once, u.namespace))
        teams = ", ".join(f"{u.namespace} {u.at_once}" for u in need.uses if u.at_once)
        yield Finding.at(
            "MIG007",
            f"with every team's jobs running up to its quota, workloads hold {need.at_once} "
            f"{vendor.id} {vendor.units} at once ({need.services} for services, {need.jobs} for "
            "jobs; "
            f"{teams}) but its pools hold {vendor.capacity}: teams' jobs wait for each other",
            culprit.team_doc.place(culprit.blame),
            f"if the jobs must run side by side, add nodes to {vendor.id}'s pools or lower the "
            "quotas that let them; a queue backend (docs/scheduling.md) orders the wait",
            severity=Severity.WARNING,
            also=_other_uses([u for u in need.uses if u.at_once], culprit, vendor),
        )


def _other_uses(uses: Iterable[Usage], culprit: Usage, vendor: Vendor) -> tuple[Place, ...]:
    """Where the other uses in a sum over capacity are written, and the vendor's pools."""
    places = [u.team_doc.place(u.blame) for u in uses if u is not culprit]
    return (*dict.fromkeys(places), *pool_lines(vendor))


# ---- rendered pod templates (the logic lives in generator/policy/placement.py) -----------


def _pod_check(code: str) -> CheckFn:
    def run(ctx: Context) -> Iterable[Finding]:
        view = ctx.view
        # Pods that pick pools of vendors whose selectors clash: RES001 says so once, at the
        # vendors' values, and fixing it there fixes every one of them.
        clashing = {frozenset((c.vendor.id, c.other.id)) for c in ctx.clashes()}
        for team in view.teams:
            for ref, problem in ctx.pod_problems(team):
                if problem.code == code and not _restates_clash(problem, clashing):
                    yield _pod_finding(view, ref, code, problem.message)

    return run


def _restates_clash(problem: Problem, clashing: set[frozenset[str]]) -> bool:
    """A POD005 whose every pair of vendors is a selector clash (RES001)."""
    pairs = [frozenset((a, b)) for a, b in combinations(problem.vendors, 2)]
    return bool(pairs) and all(pair in clashing for pair in pairs)


def _pod_finding(view: FleetView, ref: PodRef, code: str, message: str) -> Finding:
    # Point at what the workload set that leads there: resources, nodeSelector or model.
    keys = ("resources",) if code in ("POD001", "POD002") else ("nodeSelector", "model")
    path = ref.path
    for key in keys:
        if ref.team.doc.get(*ref.path, key) is not None:
            path = (*ref.path, key)
            break
    return Finding(
        code,
        f"{ref.kind} {ref.name!r}: {message}",
        ref.team.doc.locate(path),
        json_path(path),
        "fix nodeSelector or resources of the workload; the vendor's selector, model and "
        "taints come from values/vendors/",
    )


# One check per placement problem code, over the same worked-out problems (_team_pod_problems).
POD_CHECKS = tuple(
    Check(_code, _summary, _pod_check(_code), scope=PER_TEAM)
    for _code, _summary in SUMMARIES.items()
)


CHECKS: tuple[Check, ...] = (
    *POD_CHECKS,
    Check(
        "WKL001",
        "a workload is invalid: unknown vendor, missing image, namespace or structure",
        workload_values,
        scope=PER_TEAM,
    ),
    Check(
        "WKL004",
        "a workload mounts host paths in a namespace whose Pod Security forbids them",
        lambda ctx: [*host_paths(ctx), *host_path_volumes(ctx)],
        scope=PER_TEAM,
    ),
    Check(
        "WKL007",
        "a workload's toleration or pod annotation undoes what a pool or its queue sets",
        lambda ctx: [*foreign_tolerations(ctx), *owned_annotations(ctx)],
        scope=PER_TEAM,
    ),
    Check(
        "WKL009",
        "a workload's pod annotation is not one fleet.yaml's teamPodAnnotations allows",
        allowed_annotations,
        scope=PER_TEAM,
    ),
    Check(
        "WKL010",
        "a TrainJob asks for what a TrainJob cannot carry",
        trainjob_limits,
        scope=PER_TEAM,
    ),
    Check(
        "WKL008",
        "a workload uses a Secret, ConfigMap, PVC, ServiceAccount or PriorityClass that is "
        "neither rendered nor declared",
        undeclared_references,
        scope=PER_TEAM,
    ),
    Check(
        "MIG001", "a service's weights are not integers summing to 100", weights_sum, scope=PER_TEAM
    ),
    Check("MIG002", "a weight goes to a track with 0 replicas", weight_to_empty, scope=PER_TEAM),
    Check(
        "MIG003",
        "a track drops to 0 replicas while it still carries traffic",
        empty_with_traffic,
        scope=PER_TEAM,
    ),
    Check(
        "MIG006",
        "routing: service splits traffic by ready pods, not by the phase's weights (an error "
        "in production unless replicasFollowWeights)",
        pod_split,
        EITHER,
        scope=PER_TEAM,
    ),
    Check(
        "MIG004",
        "a team's workloads need more devices of a vendor than its quota",
        fits_quota,
        scope=PER_TEAM,
    ),
    Check(
        "MIG005",
        "all services and the largest job need more devices of a vendor than its pools hold",
        fits_capacity,
    ),
    Check(
        "MIG007",
        "every team's jobs up to its quota, side by side, need more than the pools: they queue",
        jobs_queue,
        WARNING,
    ),
)
