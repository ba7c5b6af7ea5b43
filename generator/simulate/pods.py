"""Every workload pod against its values: a pod that stays Pending (with the scheduler's reason),
runs on the wrong vendor or model, or is not created (with the API server's reason) is a finding
at the values file and line of its workload; a job that does not fully run beside the others,
tried again alone by the driver, either waits for the team's other jobs (SIM010) or never fits.
Pure: every verdict reads what the API server served (a snapshot, or the API client itself)."""

from __future__ import annotations

from collections.abc import Sequence

from generator.builders.build import PodRef
from generator.controlplane.api import Obj
from generator.findings import Finding, Severity
from generator.simulate.kueue import pending, workloads_by_owner
from generator.simulate.nodes import SimNode
from generator.simulate.result import HINTS, PodResult
from generator.simulate.snapshot import JobOutcome, Reader
from generator.simulate.sync import BATCH_JOB, JOBSET, LWS, TRAINJOB, VOLCANO_JOB
from generator.values.model import FleetView
from generator.values.yamlio import json_path
from generator.vocab.api import APPS, CORE, RESOURCE
from generator.vocab.kube import (
    DEFAULT_SCHEDULER,
    JOBSET_NAME_LABEL,
    LWS_NAME_LABEL,
    REPLICATED_JOB_NAME_LABEL,
    VOLCANO_JOB_NAME_LABEL,
    VOLCANO_TASK_SPEC_ANNOTATION,
)
from generator.vocab.labels import TEAM_LABEL, VENDOR_LABEL

NOT_ADMITTED = "not admitted by Kueue"
# The kinds of pod template that serve, not run to an end: their findings are reported with the
# services', never retried as a job.
SERVICE_KINDS = ("Deployment", "LeaderWorkerSet")


def _failed_create(state: Reader) -> dict[tuple[str, str, str], str]:
    """(namespace, kind, name) of a controller -> its last FailedCreate message."""
    out: dict[tuple[str, str, str], str] = {}
    events = sorted(
        state.list(CORE, "Event"),
        key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""),
    )
    for ev in events:
        if ev.get("reason") == "FailedCreate":
            inv = ev.get("involvedObject") or {}
            out[
                (str(inv.get("namespace", "")), str(inv.get("kind", "")), str(inv.get("name", "")))
            ] = str(ev.get("message", ""))
    return out


def _owner(
    pod: Obj,
    rs_owner: dict[tuple[str, str], str],
    trained: frozenset[tuple[str, str]] = frozenset(),
) -> tuple[str, str]:
    """(kind, name) of the workload a pod belongs to: Job, Deployment, Volcano task, JobSet
    task, TrainJob (a pod of a JobSet in `trained`, (namespace, name) of the JobSets a TrainJob
    owns) or LeaderWorkerSet."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    if (meta.get("namespace", ""), labels.get(JOBSET_NAME_LABEL)) in trained:
        return "TrainJob", str(labels[JOBSET_NAME_LABEL])
    if labels.get(JOBSET_NAME_LABEL) and labels.get(REPLICATED_JOB_NAME_LABEL):
        return "JobSet task", f"{labels[JOBSET_NAME_LABEL]}/{labels[REPLICATED_JOB_NAME_LABEL]}"
    if labels.get(LWS_NAME_LABEL):
        return "LeaderWorkerSet", str(labels[LWS_NAME_LABEL])
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "ReplicaSet":
            return "Deployment", rs_owner.get((meta.get("namespace", ""), ref["name"]), "")
        if ref.get("kind") == "Job" and ref.get("apiVersion", "").startswith("batch/"):
            return "Job", str(ref["name"])
    task = (meta.get("annotations") or {}).get(VOLCANO_TASK_SPEC_ANNOTATION)
    if task:
        return (
            "Job (volcano) task",
            f"{(meta.get('labels') or {}).get(VOLCANO_JOB_NAME_LABEL)}/{task}",
        )
    return "", ""


RESOURCE_CLAIM = (RESOURCE, "ResourceClaim")


def _claimed_devices(state: Reader, view: FleetView) -> dict[tuple[str, str], list[str]]:
    """(namespace, claim) -> the devices the scheduler allocated it, `pool/device` each, when a
    vendor is allocated by DRA (kubernetes/api resource/v1 types.go v0.36.3,
    status.allocation.devices.results[]{pool, device})."""
    if not any(v.dra for v in view.vendors) or not state.serves(*RESOURCE_CLAIM):
        return {}
    out = {}
    for claim in state.list(*RESOURCE_CLAIM):
        allocation = (claim.get("status") or {}).get("allocation") or {}
        results = (allocation.get("devices") or {}).get("results") or []
        meta = claim["metadata"]
        out[(meta.get("namespace", ""), meta["name"])] = [
            f"{r.get('pool')}/{r.get('device')}" for r in results
        ]
    return out


def _pod_devices(pod: Obj, claimed: dict[tuple[str, str], list[str]]) -> str:
    """The devices of the pod's claims (its status names the claim made from each template)."""
    ns = pod["metadata"].get("namespace", "")
    names = [
        str(s.get("resourceClaimName"))
        for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        if s.get("resourceClaimName")
    ]
    return ", ".join(d for n in names for d in claimed.get((ns, n), []))


def subject(ref: PodRef, ns: str, name: str) -> str:
    """What a pod finding is about: the workload (SIM004, 5, 8 and 10; the environment is the
    findings' `envs`)."""
    return f"{ref.kind} {ns}/{name}"


def pod_verdicts(
    state: Reader,
    view: FleetView,
    refs: dict[tuple[str, str, str], PodRef],
    nodes: dict[str, SimNode],
    outcome: JobOutcome,
    *,
    only: tuple[str, str] | None = None,
) -> tuple[list[PodResult], dict[tuple[str, str, str], list[Finding]]]:
    """Every workload pod against its values (`state`: what the API server served once the
    workloads settled): (one row per pod, findings per workload that is not fully running on the
    right vendor and model). ``only``: (namespace, job) of one job."""
    results: list[PodResult] = []
    found: dict[tuple[str, str, str], list[Finding]] = {}
    teams = {t.name for t in view.teams}
    rs_owner = {
        (rs["metadata"].get("namespace", ""), rs["metadata"]["name"]): str(ref.get("name"))
        for rs in state.list(APPS, "ReplicaSet")
        for ref in rs["metadata"].get("ownerReferences") or []
        if ref.get("kind") == "Deployment"
    }
    trained = frozenset(
        (js["metadata"].get("namespace", ""), js["metadata"]["name"])
        for js in (state.list(*JOBSET) if state.serves(*JOBSET) else [])
        if any(r.get("kind") == TRAINJOB[1] for r in js["metadata"].get("ownerReferences") or [])
    )
    failed = _failed_create(state)
    workloads = workloads_by_owner(state)
    deploy_rs = {}
    for (ns, rs), dep in rs_owner.items():
        deploy_rs[(ns, dep)] = rs
    claimed = _claimed_devices(state, view)
    pods_by: dict[tuple[str, str, str], list[Obj]] = {}
    for pod in state.list(CORE, "Pod"):
        kind, name = _owner(pod, rs_owner, trained)
        if kind and (pod["metadata"].get("labels") or {}).get(TEAM_LABEL) in teams:
            pods_by.setdefault((pod["metadata"]["namespace"], kind, name), []).append(pod)
    for key, ref in sorted(refs.items()):
        ns, kind, name = key
        if only is not None and (kind in SERVICE_KINDS or (ns, name.split("/")[0]) != only):
            continue
        loc = ref.team.doc.anchor(ref.path)
        path = json_path(ref.path)
        want = _wanted_pods(state, key)
        pods = sorted(pods_by.get(key, []), key=lambda p: p["metadata"]["name"])
        vendor = str(
            (ref.spec.get("nodeSelector") and _pod_vendor(pods, ref)) or _pod_vendor(pods, ref)
        )
        model_key = _model_key(view, vendor)
        want_model = (ref.spec.get("nodeSelector") or {}).get(model_key, "") if model_key else ""
        if want == 0:
            continue
        mine = found.setdefault(key, [])
        for pod in pods:
            node_name = pod.get("spec", {}).get("nodeName", "")
            phase = pod.get("status", {}).get("phase", "")
            reason = ""
            ok = True
            if not node_name:
                ok = False
                queued = pending(workloads.get((ns, "Pod", pod["metadata"]["name"]), {}))
                reason = (
                    outcome.gang.get((ns, name.split("/")[0]))
                    or (f"{NOT_ADMITTED}: {queued}" if queued else "")
                    or _unschedulable(pod)
                )
                what = f"pod {pod['metadata']['name']} stays Pending: {reason}"
                mine.append(
                    Finding(
                        "SIM013" if queued else "SIM004",
                        f"{subject(ref, ns, name)}: {what}",
                        loc,
                        path,
                        HINTS["SIM013" if queued else "SIM004"],
                        detail=what,
                    )
                )
            else:
                node = nodes.get(node_name)
                got_vendor = node.vendor.id if node and node.vendor else ""
                got_model = node.pool.model if node and node.pool else ""
                if got_vendor != vendor or (want_model and got_model.lower() != want_model.lower()):
                    ok = False
                    reason = f"runs on {node_name} ({node.describe() if node else '?'})"
                    what = (
                        f"pod {pod['metadata']['name']} {reason}, not on a {vendor}"
                        + (f" {want_model}" if want_model else "")
                        + " node"
                    )
                    mine.append(
                        Finding(
                            "SIM005",
                            f"{subject(ref, ns, name)}: {what}",
                            loc,
                            path,
                            HINTS["SIM005"],
                            detail=what,
                        )
                    )
            results.append(
                PodResult(
                    ref.team.name,
                    f"{ref.kind} {ns}/{name}",
                    pod["metadata"]["name"],
                    vendor,
                    phase,
                    node_name,
                    reason,
                    ok,
                    devices=_pod_devices(pod, claimed),
                )
            )
        if len(pods) < want:
            refusal = outcome.refused.get((ns, name)) or _refusal(failed, ns, kind, name, deploy_rs)
            queued = outcome.queued.get((ns, name), "")
            why = refusal or (f"{NOT_ADMITTED}: {queued}" if queued else "not created")
            code = "SIM008" if refusal else "SIM013" if queued else "SIM004"
            results.append(
                PodResult(
                    ref.team.name,
                    f"{ref.kind} {ns}/{name}",
                    f"{want - len(pods)} pod(s) not created",
                    vendor,
                    "",
                    "",
                    why,
                    False,
                )
            )
            what = f"{want - len(pods)} of {want} pod(s) not created: {why}"
            mine.append(
                Finding(
                    code,
                    f"{subject(ref, ns, name)}: {what}",
                    loc,
                    path,
                    HINTS[code],
                    detail=what,
                )
            )
        if not mine:
            del found[key]
    return results, found


def _refusal(
    failed: dict[tuple[str, str, str], str],
    ns: str,
    kind: str,
    name: str,
    deploy_rs: dict[tuple[str, str], str],
) -> str:
    if kind == "Deployment":
        return failed.get((ns, "ReplicaSet", deploy_rs.get((ns, name), "")), "")
    if kind == "LeaderWorkerSet":
        # The group leaders' StatefulSet bears the LeaderWorkerSet's name (sigs.k8s.io/lws
        # v0.8.0 pkg/controllers/leaderworkerset_controller.go).
        return failed.get((ns, "StatefulSet", name), "")
    if kind == "JobSet task":
        job, _, task = name.partition("/")
        prefix = f"{job}-{task}-"  # its child Jobs: <jobset>-<replicated job>-<index>
        return next(
            (
                m
                for (n, k, j), m in sorted(failed.items())
                if (n, k) == (ns, "Job") and j.startswith(prefix)
            ),
            "",
        )
    return failed.get((ns, "Job", name), "")


def _wanted_pods(state: Reader, key: tuple[str, str, str]) -> int:
    ns, kind, name = key
    if kind == "Deployment":
        obj = state.get(APPS, "Deployment", ns, name)
        return int((obj or {}).get("spec", {}).get("replicas", 0))
    if kind == "Job":
        obj = state.get(*BATCH_JOB, ns, name)
        if obj is None:
            return 0
        spec = obj.get("spec", {})
        return min(
            int(spec.get("parallelism", 1)),
            int(spec.get("completions") or spec.get("parallelism", 1)),
        )
    if kind == "LeaderWorkerSet":
        lws = ((state.get(*LWS, ns, name) if state.serves(*LWS) else None) or {}).get("spec", {})
        size = int((lws.get("leaderWorkerTemplate") or {}).get("size", 1))
        return int(lws.get("replicas", 0)) * size
    if kind == "TrainJob":
        train = (state.get(*TRAINJOB, ns, name) if state.serves(*TRAINJOB) else None) or {}
        return int(((train.get("spec") or {}).get("trainer") or {}).get("numNodes", 0))
    job, _, task = name.partition("/")
    if kind == "JobSet task":
        jobset = (state.get(*JOBSET, ns, job) if state.serves(*JOBSET) else None) or {}
        for rjob in (jobset.get("spec") or {}).get("replicatedJobs") or []:
            if rjob.get("name") == task:
                spec = rjob["template"]["spec"]
                per_job = min(
                    int(spec.get("parallelism", 1)),
                    int(spec.get("completions") or spec.get("parallelism", 1)),
                )
                return int(rjob.get("replicas", 1)) * per_job
        return 0
    obj = state.get(*VOLCANO_JOB, ns, job)
    for t in (obj or {}).get("spec", {}).get("tasks") or []:
        if t.get("name") == task:
            return int(t.get("replicas", 1))
    return 0


def _pod_vendor(pods: list[Obj], ref: PodRef) -> str:
    labels: dict[str, str] = {}
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        break
    return labels.get(VENDOR_LABEL, "") or _template_vendor(ref)


def _template_vendor(ref: PodRef) -> str:
    return ref.name.rsplit("-", 1)[-1] if ref.kind in SERVICE_KINDS else ""


def _model_key(view: FleetView, vendor_id: str) -> str:
    vendor = view.vendor(vendor_id)
    return view.fleet.label_key(vendor.model_label) if vendor else ""


def _unschedulable(pod: Obj) -> str:
    """The scheduler's verdict, without its notes on preemption."""
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            text = str(cond.get("message") or cond.get("reason") or "unschedulable")
            return text.split(" no new claims to deallocate")[0].split(" preemption:")[0]
    name = pod.get("spec", {}).get("schedulerName", DEFAULT_SCHEDULER)
    if name != DEFAULT_SCHEDULER:
        return f"not scheduled: it asks for scheduler {name!r}"
    return "not scheduled"


def failing_jobs(
    failing: dict[tuple[str, str, str], list[Finding]], jobs: list[tuple[str, str]]
) -> dict[tuple[str, str], list[tuple[str, str, str]]]:
    """Of `jobs` ((namespace, name), in the order they run), those whose pods `failing` (the
    verdict of the jobs run together) names: each with its workload keys (a Volcano Job's tasks
    are workloads of their own). What the driver runs again alone."""
    out: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    for ns, job in jobs:
        mine = [
            k
            for k in failing
            if k[0] == ns and k[1] not in SERVICE_KINDS and k[2].split("/")[0] == job
        ]
        if mine:
            out[(ns, job)] = mine
    return out


def alone_verdicts(
    view: FleetView,
    refs: dict[tuple[str, str, str], PodRef],
    nodes: dict[str, SimNode],
    failing: dict[tuple[str, str, str], list[Finding]],
    runs: Sequence[tuple[tuple[str, str], JobOutcome, Reader]],
) -> tuple[list[Finding], set[str]]:
    """Each job that did not fully run beside all the others, run again alone beside the
    services (`runs`: (namespace, job), what the driver saw, what the API server served then).
    If it ran then, it only waits for the others (a warning, and the workloads of its pod rows
    are among those returned as waiting); if not, the verdict of the run alone stands (its
    reason names what is missing with nothing else in the way)."""
    out: list[Finding] = []
    waiting: set[str] = set()
    retried = failing_jobs(failing, [job for job, _, _ in runs])
    for job, outcome, state in runs:
        mine = retried[job]
        _, alone = pod_verdicts(state, view, refs, nodes, outcome, only=job)
        if alone:
            for fs in alone.values():
                out += [_alone(f) for f in fs]
            continue
        waiting |= {f"{refs[k].kind} {k[0]}/{k[2]}" for k in mine}
        first = failing[mine[0]][0]
        key_ns, _, key_name = mine[0]
        out.append(
            Finding(
                "SIM010",
                f"{subject(refs[mine[0]], key_ns, key_name)} does not fully run "
                f"beside the other jobs, but does alone beside the services: it waits for them "
                f"({first.detail})",
                first.location,
                first.path,
                HINTS["SIM010"],
                Severity.WARNING,
            )
        )
    return out, waiting


def _alone(f: Finding) -> Finding:
    return Finding(
        f.code,
        f.message + " (even alone, with only the services beside it)",
        f.location,
        f.path,
        f.hint,
        f.severity,
    )
