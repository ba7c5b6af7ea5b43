"""The driver's steps on the control plane (drive.py puts them in order): apply objects as Argo CD
syncs them (wave by wave, each wave's objects at once), wait until the cluster is quiet, and run
Jobs (with a Volcano Job's task pods made here, as Volcano's job controller would). What the API
server refuses is returned as data (`Refusal`), which the judge turns into findings."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from generator.cluster.units import BuiltUnit, object_wave
from generator.controlplane.api import ApiClient, ApiError, Obj, UnknownKind
from generator.controlplane.launcher import ControlPlane, metrics
from generator.simulate.kueue import pending, workloads_by_owner
from generator.simulate.nodes import SimNode
from generator.simulate.snapshot import JobOutcome, Refusal
from generator.vocab.api import APPS, BATCH, CORE, TRAINER, VOLCANO_BATCH
from generator.vocab.api import JOBSET as JOBSET_API
from generator.vocab.api import LWS as LWS_API
from generator.vocab.kube import (
    DEFAULT_SCHEDULER,
    GANG_GATE,
    LWS_NAME_LABEL,
    VOLCANO_JOB_NAME_LABEL,
    VOLCANO_TASK_SPEC_ANNOTATION,
)

SETTLE_TIMEOUT = 120.0
APPLY_WORKERS = 8
UNIT_WORKERS = 4
QUIET = 1.5
POLL = 0.25
VOLCANO_JOB = (VOLCANO_BATCH, "Job")
BATCH_JOB = (BATCH, "Job")
JOB_KINDS = (BATCH_JOB, VOLCANO_JOB)


def wait(ready: Callable[[], bool], what: str, timeout: float = SETTLE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise ApiError(0, "Timeout", f"simulation: {what} not reached after {timeout:g} s")
        time.sleep(POLL)


def apply_all(
    api: ApiClient, unit: BuiltUnit, docs: list[Obj], *, dry_run: bool = False
) -> tuple[list[Refusal], int]:
    """Apply a unit's objects as Argo CD syncs them: wave by wave (sync-wave annotation), the
    objects of one wave at once, and the next wave only when this one is ready (gitops-engine
    runs a wave's tasks concurrently and waits for their health: sync_context.go, at 04c4b72).
    Returns the refusals and the number of objects applied."""
    out: list[Refusal] = []
    waves: dict[int, list[Obj]] = {}
    for obj in docs:
        waves.setdefault(object_wave(obj), []).append(obj)
    for wave in sorted(waves):
        group = waves[wave]
        errors = parallel(lambda o: _apply_one(api, o, dry_run), group)
        for obj, exc in zip(group, errors, strict=True):
            if exc is not None:
                out.append(Refusal.of(unit.unit.path, obj, str(exc)))
        if not dry_run:
            wait(_all_ready(api, group), f"wave {wave} of {unit.unit.path}")
    return out, len(docs)


def sync(item: tuple[ApiClient, BuiltUnit, list[Obj], bool]) -> tuple[list[Refusal], int]:
    api, unit, docs, dry_run = item
    return apply_all(api, unit, docs, dry_run=dry_run)


T = TypeVar("T")
R = TypeVar("R")


def parallel(fn: Callable[[T], R], items: list[T], workers: int = APPLY_WORKERS) -> list[R]:
    if len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def _apply_one(api: ApiClient, obj: Obj, dry_run: bool) -> Exception | None:
    try:
        api.apply(obj, dry_run=dry_run)
    except (ApiError, UnknownKind) as exc:
        return exc
    return None


def _all_ready(api: ApiClient, group: list[Obj]) -> Callable[[], bool]:
    return lambda: all(_ready(api, o) for o in group)


def _ready(api: ApiClient, obj: Obj) -> bool:
    """Whether what the next wave relies on is in place: a namespace with its default
    ServiceAccount (pod admission needs it), a quota the quota controller has counted (until
    then quota admission refuses pods: "status unknown for quota")."""
    meta = obj.get("metadata", {})
    kind = obj.get("kind")
    if kind == "Namespace" and obj.get("apiVersion") == CORE:
        return api.exists(CORE, "ServiceAccount", meta["name"], "default")
    if kind == "ResourceQuota":
        live = api.get(CORE, "ResourceQuota", meta.get("namespace", ""), meta["name"]) or {}
        return bool(live.get("status", {}).get("hard"))
    return True


# Owners whose status the quiet spell watches (a LeaderWorkerSet's groups are StatefulSets).
OWNERS = (
    (APPS, "Deployment"),
    (APPS, "ReplicaSet"),
    (APPS, "DaemonSet"),
    (APPS, "StatefulSet"),
    BATCH_JOB,
)


def _fingerprint(pods: list[Obj], owners: dict[tuple[str, str], list[Obj]], events: int) -> Any:
    placed = sorted(
        (
            p["metadata"].get("namespace", ""),
            p["metadata"]["name"],
            p.get("status", {}).get("phase", ""),
            p.get("spec", {}).get("nodeName", ""),
            _scheduled(p),
        )
        for p in pods
    )
    statuses = sorted(
        (k, o["metadata"].get("namespace", ""), o["metadata"]["name"], str(o.get("status")))
        for k, objs in owners.items()
        for o in objs
    )
    return tuple(placed), tuple(statuses), events


def _scheduled(pod: Obj) -> str:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodScheduled":
            return f"{cond.get('status')}:{cond.get('reason', '')}"
    return ""


# Owners whose controller reports in status how far it got (below).
REPLICATED = OWNERS[:2]


def _behind(obj: Obj) -> bool:
    """Whether a Deployment's or ReplicaSet's controller has yet to act on it, however long a
    busy machine makes it take: it has not seen the latest spec (status.observedGeneration below
    metadata.generation), or a ReplicaSet has fewer or more pods than it asks for and has not
    said why. The deployment controller makes its ReplicaSet before it records the generation
    it saw; the ReplicaSet controller counts the pods it had before it made more, and sets
    ReplicaFailure when it could not make one (quota, Pod Security): source kubernetes v1.36.3
    pkg/controller/replicaset/replica_set_utils.go, calculateStatus;
    pkg/controller/deployment/sync.go, calculateStatus."""
    status = obj.get("status") or {}
    if int(status.get("observedGeneration", 0)) < int(obj["metadata"].get("generation", 1)):
        return True
    if obj.get("kind") != "ReplicaSet":
        return False
    want = int((obj.get("spec") or {}).get("replicas", 1))
    failed = any(
        c.get("type") == "ReplicaFailure" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )
    return int(status.get("replicas", 0)) != want and not failed


def _undecided(pod: Obj, schedulers: frozenset[str] | None = None) -> bool:
    """A pod a scheduler that runs here has not looked at yet (`schedulers`: the names of those
    that run; None: every pod has one). A pod asking for another scheduler (Volcano's, which
    does not run here) is never looked at: waiting for it would never end."""
    status = pod.get("status", {})
    spec = pod.get("spec", {})
    if schedulers is not None and spec.get("schedulerName", DEFAULT_SCHEDULER) not in schedulers:
        return False
    return status.get("phase") == "Pending" and not spec.get("nodeName") and not _scheduled(pod)


# What the add-on controllers make, and how many: a JobSet's child Jobs (one per replica of each
# replicated job: sigs.k8s.io/jobset v0.11.1 pkg/controllers/jobset_controller.go, labelled with
# its name, api/jobset/v1alpha2 JobSetNameKey) and a LeaderWorkerSet's pods (replicas x size,
# labelled with its name: sigs.k8s.io/lws v0.8.0 api/leaderworkerset/v1 SetNameLabelKey).
JOBSET = (JOBSET_API, "JobSet")
LWS = (LWS_API, "LeaderWorkerSet")
TRAINJOB = (TRAINER, "TrainJob")
# A bound against a hang, as for every wait on the control plane's controllers: measured under
# a load of 4 on 2 cores, the add-on controllers made everything within 0.4 s.
MADE_TIMEOUT = SETTLE_TIMEOUT


def _made(api: ApiClient) -> bool:
    """Whether every TrainJob has its JobSet (Trainer names it after the TrainJob:
    github.com/kubeflow/trainer/v2 v2.2.0 pkg/runtime/framework/plugins/jobset), every JobSet
    all its child Jobs and every LeaderWorkerSet all its pods."""
    if api.serves(*TRAINJOB):
        for tj in api.list(*TRAINJOB):
            meta = tj["metadata"]
            if api.get(*JOBSET, meta["namespace"], meta["name"]) is None:
                return False
    if api.serves(*JOBSET):
        for js in api.list(*JOBSET):
            meta = js["metadata"]
            want = sum(int(r.get("replicas", 1)) for r in js["spec"].get("replicatedJobs") or [])
            selector = f"jobset.sigs.k8s.io/jobset-name={meta['name']}"
            if len(api.list(*BATCH_JOB, meta["namespace"], selector=selector)) < want:
                return False
    if api.serves(*LWS):
        for lws in api.list(*LWS):
            meta, spec = lws["metadata"], lws["spec"]
            want = int(spec.get("replicas", 1)) * int(spec["leaderWorkerTemplate"].get("size", 1))
            selector = f"{LWS_NAME_LABEL}={meta['name']}"
            if len(api.list(CORE, "Pod", meta["namespace"], selector=selector)) < want:
                return False
    return True


def wait_made(api: ApiClient, timeout: float = MADE_TIMEOUT) -> None:
    """Until the add-on controllers have made what their objects ask for, or `timeout` seconds:
    their controllers react to one another (JobSet to Kueue's admission, LeaderWorkerSet's
    workers to its leader pod) with no fixed delay, which a quiet spell alone cannot wait for
    on a busy machine. What is still missing then is reported as not created."""
    deadline = time.monotonic() + timeout
    while not _made(api) and time.monotonic() < deadline:
        time.sleep(POLL)


def settle(
    api: ApiClient, timeout: float = SETTLE_TIMEOUT, schedulers: frozenset[str] | None = None
) -> None:
    """Wait until nothing changes for QUIET seconds, the schedulers that run here (`schedulers`,
    their names; None: every pod's) have seen every pod that asks for them, and the Deployment
    and ReplicaSet controllers have caught up (a quiet spell alone ended early when a busy
    machine held a controller back for longer than QUIET)."""
    deadline = time.monotonic() + timeout
    last = None
    since = time.monotonic()
    while True:
        # One listing of each kind per poll, read by all three conditions.
        pods = api.list(CORE, "Pod")
        owners = {kind: api.list(*kind) for kind in OWNERS}
        events = sum(1 for e in api.list(CORE, "Event") if e.get("reason") == "FailedCreate")
        now = _fingerprint(pods, owners, events)
        undecided = any(_undecided(p, schedulers) for p in pods)
        behind = any(_behind(o) for kind in REPLICATED for o in owners[kind])
        if now != last or undecided or behind:
            last = now
            since = time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        if time.monotonic() > deadline:
            raise ApiError(0, "Timeout", f"simulation did not settle after {timeout:g} s")
        time.sleep(POLL)


# A quota key no fleet declares (an object count of a kind nobody serves), added to each quota's
# spec.hard and taken away again so that the quota controller counts the quota again.
RECOUNT_KEY = "count/recounts.simulate.accel-gitops.io"
RECOUNT_HARD = "1"


def recount_quotas(api: ApiClient) -> None:
    """Every ResourceQuota's `used` counted again by the quota controller from the pods as they
    are now, as its periodic resync would. The controller recounts a quota only when its
    spec.hard changes, when an object it counts goes or stops counting, and at every full resync
    (--resource-quota-sync-period, 5 min by default); and a recount that runs while quota
    admission is counting a new pod can count one pod short and write it (syncResourceQuota
    recounts from its pod cache, which may not hold the pod yet, and writes on the quota
    version that already holds the admission's count: kubernetes v1.36.3
    pkg/controller/resourcequota/resource_quota_controller.go). A cluster at steady state has had
    its resync; the simulation cannot wait 5 minutes for it, so it changes each quota's spec.hard
    (a key added) and waits for the recount that writes it into status.hard, then takes the key
    away and waits for the second. Only at steady state: nothing is admitted meanwhile."""
    quotas = api.list(CORE, "ResourceQuota")
    ids = [(q["metadata"]["namespace"], q["metadata"]["name"]) for q in quotas]

    def patch(value: str | None) -> None:
        for ns, name in ids:
            api.merge_patch(
                CORE, "ResourceQuota", ns, name, {"spec": {"hard": {RECOUNT_KEY: value}}}
            )

    def counted(held: bool) -> Callable[[], bool]:
        def done() -> bool:
            live = {
                (q["metadata"]["namespace"], q["metadata"]["name"]): q
                for q in api.list(CORE, "ResourceQuota")
            }
            return all(
                (RECOUNT_KEY in ((live.get(i) or {}).get("status") or {}).get("hard", {})) == held
                for i in ids
                if i in live
            )

        return done

    if not ids:
        return
    patch(RECOUNT_HARD)
    wait(counted(True), "the quota controller recounting every ResourceQuota")
    patch(None)
    wait(counted(False), "the quota controller recounting every ResourceQuota again")


def wait_node_config(
    plane: ControlPlane, api: ApiClient, unit: BuiltUnit, nodes: list[SimNode]
) -> None:
    """Until nfd-master has run every NodeFeatureRule on every node since they were applied,
    then until the nodes stop changing (its metric per rule and node: pkg/nfd-master/metrics.go,
    nodefeaturerule_processing_duration_seconds, v0.19.0)."""
    rules = [o["metadata"]["name"] for o in unit.docs if o.get("kind") == "NodeFeatureRule"]
    if rules and plane.nfd_metrics:
        name = "nfd_master_nodefeaturerule_processing_duration_seconds_count"

        def processed() -> bool:
            seen = metrics(plane.nfd_metrics)
            return all(
                seen.get(f'{name}{{name="{rule}",node="{node.name}"}}', 0) > 0
                for rule in rules
                for node in nodes
            )

        wait(processed, "nfd-master processing every rule on every node")
    last = None
    since = time.monotonic()
    while True:
        state = [
            (n["metadata"].get("labels"), n.get("spec", {}).get("taints"))
            for n in api.list(CORE, "Node")
        ]
        if state != last:
            last, since = state, time.monotonic()
        elif time.monotonic() - since >= QUIET:
            return
        time.sleep(POLL)


def _expand_volcano(api: ApiClient, obj: Obj, outcome: JobOutcome) -> None:
    """Make a Volcano Job's task pods as Volcano's job controller does: one pod per replica,
    named <job>-<task>-<index>, with the task's template and the job as controller (source:
    volcano-sh/volcano pkg/controllers/job/job_controller_util.go, createJobPod, at 00bac39).
    They keep the default scheduler: Volcano's scheduler does not run here."""
    live = api.get(*VOLCANO_JOB, obj["metadata"]["namespace"], obj["metadata"]["name"]) or obj
    ns, job = obj["metadata"]["namespace"], obj["metadata"]["name"]
    owner = {
        "apiVersion": VOLCANO_JOB[0],
        "kind": "Job",
        "name": job,
        "uid": live.get("metadata", {}).get("uid", ""),
        "controller": True,
    }
    for pod in _task_pods(obj, owner):
        try:
            api.create(pod)
        except ApiError as exc:
            task = pod["metadata"]["annotations"][VOLCANO_TASK_SPEC_ANNOTATION]
            outcome.refused.setdefault((ns, f"{job}/{task}"), exc.message)


def _task_pods(obj: Obj, owner: dict[str, Any]) -> list[Obj]:
    ns, job = obj["metadata"]["namespace"], obj["metadata"]["name"]
    out = []
    for task in obj["spec"].get("tasks") or []:
        template = task.get("template") or {}
        for i in range(int(task.get("replicas", 1))):
            pod = {
                "apiVersion": CORE,
                "kind": "Pod",
                "metadata": {
                    "name": f"{job}-{task['name']}-{i}",
                    "namespace": ns,
                    "labels": {
                        **(template.get("metadata", {}).get("labels") or {}),
                        VOLCANO_JOB_NAME_LABEL: job,
                    },
                    "annotations": {
                        VOLCANO_TASK_SPEC_ANNOTATION: task["name"],
                        VOLCANO_JOB_NAME_LABEL: job,
                    },
                    "ownerReferences": [owner] if owner["uid"] else [],
                },
                "spec": template.get("spec") or {},
            }
            out.append(pod)
    return out


def min_available(obj: Obj) -> int:
    """A Volcano Job's minAvailable; when unset, what Volcano's admission webhook defaults it to:
    each task's minAvailable, else its replicas, summed (volcano-sh/volcano v1.14.0
    pkg/webhooks/admission/jobs/mutate/mutate_job.go, patchDefaultMinAvailable)."""
    spec = obj.get("spec") or {}
    if int(spec.get("minAvailable") or 0):
        return int(spec["minAvailable"])
    return sum(
        int(t["minAvailable"]) if t.get("minAvailable") is not None else int(t.get("replicas", 1))
        for t in spec.get("tasks") or []
    )


def hold_gang(api: ApiClient, obj: Obj, outcome: JobOutcome) -> None:
    """All or none, as Volcano's gang plugin decides: the allocate action commits a job's
    placements only when the job is ready, at least minAvailable of its pods placed, and
    discards them otherwise (volcano-sh/volcano v1.14.0 pkg/scheduler/plugins/gang/gang.go,
    AddJobReadyFn; pkg/scheduler/actions/allocate/allocate.go, JobReady before Commit, else
    Discard). kube-scheduler places pods one by one, so when fewer than minAvailable of a
    Volcano Job's pods got a node, the simulation takes them back: every pod of the job is made
    again, unscheduled behind a scheduling gate, and the devices go to the jobs after it."""
    ns, job = obj["metadata"]["namespace"], obj["metadata"]["name"]
    pods = api.list(CORE, "Pod", ns, selector=f"{VOLCANO_JOB_NAME_LABEL}={job}")
    placed = sum(bool((p.get("spec") or {}).get("nodeName")) for p in pods)
    need = min_available(obj)
    if placed >= need or not pods:
        return
    outcome.gang[(ns, job)] = (
        f"gang: only {placed} of the {need} pods it needs at once (minAvailable) could be placed, "
        f"so Volcano places none"
    )
    for pod in pods:
        api.delete(CORE, "Pod", ns, pod["metadata"]["name"], grace=0)
    wait(
        lambda: not api.list(CORE, "Pod", ns, selector=f"{VOLCANO_JOB_NAME_LABEL}={job}"),
        f"pods of Volcano Job {ns}/{job} deleted",
    )
    for pod in pods:
        spec: dict[str, Any] = {k: v for k, v in pod["spec"].items() if k != "nodeName"}
        spec["schedulingGates"] = [{"name": GANG_GATE}]
        keep = ("name", "namespace", "labels", "annotations", "ownerReferences")
        meta = {k: v for k, v in pod["metadata"].items() if k in keep}
        _create_again(api, {"apiVersion": CORE, "kind": "Pod", "metadata": meta, "spec": spec})


def _create_again(api: ApiClient, pod: Obj) -> None:
    """Create a pod the simulation just deleted. Quota admission reads the ResourceQuota's
    `used`, which the quota controller lowers after it has seen the deletion: a refusal for
    quota is tried again until then (the same pod fitted a moment ago). How long that takes
    depends only on how busy the machine is (a CI run saw more than 15 s), so the wait is
    bounded by SETTLE_TIMEOUT, the bound of every other wait for the control plane's own
    controllers, not by a guess at their speed."""
    refusal: list[str] = []

    def created() -> bool:
        try:
            api.create(pod)
        except ApiError as exc:
            if exc.status != 403 or "exceeded quota" not in exc.message:
                raise
            refusal[:] = [exc.message]
            return False
        return True

    name = pod["metadata"]["name"]
    try:
        wait(created, f"pod {name} made again", SETTLE_TIMEOUT)
    except ApiError as exc:
        if exc.reason != "Timeout":
            raise
        raise ApiError(0, "Timeout", f"{exc.message}; the quota still says: {refusal[-1]}") from exc


# For a Job's first pods to appear. Past it the next job goes anyway and the pod checks report
# what became of this one. As a bound, not a guess at the Job controller's speed: a job started
# before the one ahead of it has its pods could take devices or quota in a different order.
CREATE_TIMEOUT = SETTLE_TIMEOUT


def run_jobs(
    api: ApiClient,
    jobs: list[tuple[BuiltUnit, Obj]],
    schedulers: frozenset[str] | None = None,
) -> tuple[JobOutcome, list[Refusal]]:
    """Start the jobs one after another in a stable order (namespace, name), each once its pods
    exist or their creation was refused. Started all at once, which job got the last of a quota
    or of a node's devices was a race, and the report named a different job from run to run;
    in order, pods enter the quota and the scheduler's queue (priority, then arrival) in the
    same order every time. What the driver saw, and what the API server refused."""
    outcome = JobOutcome()
    refusals: list[Refusal] = []
    for unit, obj in sorted(jobs, key=lambda j: _job_id(j[1])):
        found, _ = apply_all(api, unit, [obj])
        refusals += found
        if (obj.get("apiVersion"), obj.get("kind")) == VOLCANO_JOB:
            _expand_volcano(api, obj, outcome)  # creates the pods itself, in order
            if not found:
                # kube-scheduler has placed what it can of the gang
                settle(api, schedulers=schedulers)
                hold_gang(api, obj, outcome)
        elif not found:
            _wait_pods_created(api, obj)
    settle(api, schedulers=schedulers)
    workloads = workloads_by_owner(api)
    for _, obj in jobs:
        ns, name = _job_id(obj)
        why = pending(workloads.get((ns, "Job", name), {}))
        if why:
            outcome.queued[(ns, name)] = why
    return outcome, refusals


def _job_id(obj: Obj) -> tuple[str, str]:
    return obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def _wait_pods_created(api: ApiClient, obj: Obj) -> None:
    """Until the Job controller made the job's first pods (spec.parallelism, at most
    spec.completions; both default to 1) or failed to (a FailedCreate event: quota, Pod
    Security), or Kueue said why it does not admit the job. A job still without any of these
    after CREATE_TIMEOUT does not hold the others up."""
    ns, name = _job_id(obj)
    spec = obj.get("spec") or {}
    parallelism = int(spec.get("parallelism", 1))
    want = min(parallelism, int(spec.get("completions", parallelism)))

    def created() -> bool:
        if len(api.list(CORE, "Pod", ns, selector=f"job-name={name}")) >= want:
            return True
        if pending(workloads_by_owner(api, ns).get((ns, "Job", name), {})):
            return True  # Kueue tried and does not admit it (yet): it holds the job suspended
        return any(
            e.get("reason") == "FailedCreate"
            and (e.get("involvedObject") or {}).get("kind") == "Job"
            and (e.get("involvedObject") or {}).get("name") == name
            for e in api.list(CORE, "Event", ns)
        )

    try:
        wait(created, f"pods of Job {ns}/{name}", CREATE_TIMEOUT)
    except ApiError as exc:
        if exc.reason != "Timeout":
            raise
        # settle() and the pod checks report what became of it


def delete_jobs(api: ApiClient, jobs: list[tuple[BuiltUnit, Obj]]) -> None:
    for _, obj in jobs:
        api_version, kind = obj["apiVersion"], obj["kind"]
        api.delete(api_version, kind, obj["metadata"]["namespace"], obj["metadata"]["name"])
    names = {(o["metadata"]["namespace"], o["metadata"]["name"]) for _, o in jobs}

    def gone() -> bool:
        for pod in api.list(CORE, "Pod"):
            meta = pod["metadata"]
            job = (meta.get("labels") or {}).get(VOLCANO_JOB_NAME_LABEL) or (
                meta.get("labels") or {}
            ).get("job-name")
            if (meta.get("namespace"), job) in names:
                if (meta.get("labels") or {}).get(VOLCANO_JOB_NAME_LABEL):
                    api.delete(CORE, "Pod", meta["namespace"], meta["name"], grace=0)
                return False
        return True

    wait(gone, "job pods deleted")
