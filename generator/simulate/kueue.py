"""Kueue on the local control plane: its real controller manager (sigs.k8s.io/kueue v0.17.0
cmd/kueue, built by `make tools-cluster` from gotools/kueuecheck/go.mod), run by
controlplane/controllers.py with the configuration, CRDs, webhooks, Services and Secret of the
Kueue chart the fleet deploys, so that Jobs are suspended, admitted by their ClusterQueues, given
a flavor's node selector and unsuspended as Kueue decides; and what Kueue decided, read back from
its Workloads (pure: from what the API server served, a snapshot or the API client itself).

What differs from Kueue's own chart beyond what simcontrollers.py says: the visibility server is
off (FEATURE_GATES), and its APIService from the chart is not applied."""

from __future__ import annotations

from typing import Any

import yaml

from generator.builders.build import PodRef
from generator.cluster.plane import KUEUE_NAMESPACE
from generator.controlplane.api import Obj
from generator.controlplane.controllers import ControllerSetup
from generator.findings import Finding
from generator.simulate.result import HINTS, PodResult
from generator.simulate.snapshot import Reader
from generator.values.model import Team
from generator.values.yamlio import json_path
from generator.workloads.model import Job

SERVICE = "kueue"
NAMESPACE = KUEUE_NAMESPACE  # the chart's release namespace (builders/platform.py)
# What of the chart is not applied: the Deployment (the process stands in for it) and the
# visibility APIService (no pod serves it; an unavailable APIService degrades discovery).
NOT_APPLIED = ("Deployment", "APIService", "ConfigMap")
# The visibility API server is off: it writes a self-signed certificate to the fixed folder
# /visibility (sigs.k8s.io/kueue v0.17.0 pkg/visibility/server.go), which a process here cannot,
# and its APIService is not applied. A beta gate, default on (pkg/features/kube_features.go).
FEATURE_GATES = "VisibilityOnDemand=false"
KUEUE_GROUP = "kueue.x-k8s.io"
WORKLOAD_API = f"{KUEUE_GROUP}/v1beta2"


def kueue_setup(objs: list[Obj]) -> ControllerSetup | None:
    """Kueue's controller manager as the objects of a rendered Kueue chart run it; None when the
    chart has no manager configuration."""
    return ControllerSetup.from_chart(
        SERVICE,
        NAMESPACE,
        objs,
        not_applied=NOT_APPLIED,
        args=(f"--feature-gates={FEATURE_GATES}",),
    )


def integrations(setup: ControllerSetup) -> list[str]:
    """The frameworks Kueue manages (its configuration's integrations.frameworks)."""
    doc = yaml.safe_load(setup.config) or {}
    return [str(f) for f in (doc.get("integrations") or {}).get("frameworks") or []]


# ---- what Kueue decided ------------------------------------------------------------------------


def _condition(obj: Obj, kind: str) -> dict[str, Any]:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return {}


def admission(workload: Obj) -> str:
    """How Kueue placed an admitted workload: "<ClusterQueue> (<flavor>, ...)"; "" when not."""
    if _condition(workload, "Admitted").get("status") != "True":
        return ""
    # An admitted workload has status.admission, whose clusterQueue is always serialized (no
    # omitempty: kueue v0.17.0 apis/kueue/v1beta2 workload_types.go Admission).
    adm = workload["status"]["admission"]
    flavors = sorted(
        {
            str(f)
            for ps in adm.get("podSetAssignments") or []
            for f in (ps.get("flavors") or {}).values()
        }
    )
    queue = str(adm["clusterQueue"])
    return f"{queue} ({', '.join(flavors)})" if flavors else queue


def pending(workload: Obj) -> str:
    """Kueue's reason for not admitting a workload it has tried ("" when admitted or untried):
    the QuotaReserved condition's message (sigs.k8s.io/kueue v0.17.0 pkg/workload
    UnsetQuotaReservationWithCondition, reason Pending)."""
    if _condition(workload, "Admitted").get("status") == "True":
        return ""
    cond = _condition(workload, "QuotaReserved")
    if cond.get("status") == "False" and cond.get("message"):
        return str(cond["message"])
    return ""


def workloads_by_owner(state: Reader, namespace: str = "") -> dict[tuple[str, str, str], Obj]:
    """(namespace, owner kind, owner name) -> its Kueue Workload (a Job's, or a pod's: Kueue's
    pod integration makes one workload per pod of a Deployment); {} where Kueue is not
    installed."""
    if not state.serves(WORKLOAD_API, "Workload"):
        return {}
    out: dict[tuple[str, str, str], Obj] = {}
    for wl in state.list(WORKLOAD_API, "Workload", namespace):
        meta = wl["metadata"]
        for ref in meta.get("ownerReferences") or []:
            out[(str(meta.get("namespace", "")), str(ref.get("kind")), str(ref.get("name")))] = wl
    return out


def lws_groups(state: Reader) -> dict[tuple[str, str], list[Obj]]:
    """(namespace, LeaderWorkerSet) -> the Workloads of its groups, which it owns."""
    groups: dict[tuple[str, str], list[Obj]] = {}
    if state.serves(WORKLOAD_API, "Workload"):
        for wl in state.list(WORKLOAD_API, "Workload"):
            meta = wl["metadata"]
            for ref in meta.get("ownerReferences") or []:
                if ref.get("kind") == "LeaderWorkerSet":
                    key = (str(meta.get("namespace", "")), str(ref.get("name")))
                    groups.setdefault(key, []).append(wl)
    return groups


def admission_verdicts(
    workloads: dict[tuple[str, str, str], Obj],
    refs: dict[tuple[str, str, str], PodRef],
    rows: list[PodResult],
    groups: dict[tuple[str, str], list[Obj]] | None = None,
) -> list[dict[str, Any]]:
    """One row per queued workload: what Kueue decided, against the values line that declared
    it (a Job is one Workload; a Deployment's pods, as the report's pod rows name them, are one
    Workload each; a LeaderWorkerSet's groups are one Workload each, owned by it: `groups`, by
    (namespace, LeaderWorkerSet), kueue v0.17.0 pkg/controller/jobs/leaderworkerset
    leaderworkerset_reconciler.go). `rows`: the pod rows of the report, which name the pods of a
    Deployment. Nothing when Kueue made no Workload."""
    out: list[dict[str, Any]] = []
    if not workloads and not groups:
        return out
    pods: dict[str, list[str]] = {}
    for row in rows:
        pods.setdefault(row.workload, []).append(row.pod)
    for (ns, kind, name), ref in sorted(refs.items()):
        if kind == "Job":
            found = [workloads.get((ns, "Job", name))]
        elif kind == "Deployment":
            found = [workloads.get((ns, "Pod", p)) for p in pods.get(f"{kind} {ns}/{name}", [])]
        elif kind == "LeaderWorkerSet":
            found = list((groups or {}).get((ns, name), []))
        else:
            continue  # Volcano's tasks (no Kueue integration: SCH002); JobSets: jobset_verdicts
        got = [w for w in found if w is not None]
        if not got:
            continue
        admitted = sorted({admission(w) for w in got if admission(w)})
        waiting = sorted({pending(w) for w in got if pending(w)})
        done = sum(bool(admission(w)) for w in got)
        verdict = f"{done} of {len(got)} admitted" + (
            f": {', '.join(admitted)}" if admitted else ""
        )
        if waiting:
            verdict += f"; pending: {waiting[0]}"
        out.append(
            {
                "workload": f"{kind} {ns}/{name}",
                "values": str(ref.team.doc.anchor(ref.path)),
                "queue": str((got[0].get("spec") or {}).get("queueName", "")),
                "admission": verdict,
                "ok": done == len(got),
            }
        )
    return out


# ---- JobSets: Kueue admits them whole ------------------------------------------------------------

# The job kinds that wait for the JobSet phase, and the kind of object Kueue's Workload of each
# is owned by.
HELD_KINDS = {"jobset": "JobSet", "trainjob": "TrainJob"}
# Seconds for Kueue to admit each JobSet and TrainJob or say why not: the simulation's settling
# bound (sync.SETTLE_TIMEOUT). On a machine loaded three times over, Kueue had made no Workload
# for an admissible TrainJob after 60 s. A run whose workloads are all decided does not wait.
JOBSET_DECIDED_TIMEOUT = 120.0


def jobsets_decided(state: Reader, queued: list[tuple[Team, Job, str]]) -> bool:
    """Whether Kueue has admitted, or said why not, every JobSet and TrainJob in `queued`
    ((team, job, the kind its Workload is owned by)): what the driver waits for."""
    found = workloads_by_owner(state)
    return all(
        (w := found.get((job.namespace, kind, job.name))) is not None
        and bool(admission(w) or pending(w))
        for _, job, kind in queued
    )


def jobset_verdicts(
    state: Reader, queued: list[tuple[Team, Job, str]]
) -> tuple[list[dict[str, Any]], list[Finding], set[tuple[str, str]]]:
    """Kueue's verdict on every JobSet and TrainJob the teams queue (`queued`: (team, job, the
    kind its Workload is owned by); `state`: Kueue's Workloads once it decided, or the driver
    stopped waiting): a row each, and SIM013 at the job's values line for one Kueue does not
    admit. Kueue's jobset and trainjob integrations make one Workload per object and admit it
    whole (kueue v0.17.0 pkg/controller/jobs/jobset, jobs/trainjob). Also (namespace, name) of
    each one Kueue holds: no pod of it is made."""
    rows: list[dict[str, Any]] = []
    findings: list[Finding] = []
    held: set[tuple[str, str]] = set()
    if not queued or not state.serves(WORKLOAD_API, "Workload"):
        return rows, findings, held
    found = workloads_by_owner(state)
    for team, job, kind in queued:
        wl = found.get((job.namespace, kind, job.name))
        placed = admission(wl) if wl is not None else ""
        why = (pending(wl) if wl is not None else "") or "Kueue made no decision"
        if wl is None:
            why = "Kueue made no Workload for it"
        verdict = f"admitted: {placed}" if placed else f"pending: {why}"
        where = team.doc.anchor(job.path)
        rows.append(
            {
                "workload": f"{kind} {job.namespace}/{job.name}",
                "values": str(where),
                "queue": str(((wl or {}).get("spec") or {}).get("queueName", "")),
                "admission": verdict,
                "ok": bool(placed),
            }
        )
        if not placed:
            held.add((job.namespace, job.name))
            findings.append(
                Finding(
                    "SIM013",
                    f"{kind} {job.namespace}/{job.name}: not admitted by Kueue: {why}",
                    where,
                    json_path(job.path),
                    HINTS["SIM013"],
                )
            )
    return rows, findings, held
