"""The driver: a plan (plan.py) applied to a running control plane, step by step, waiting as
Argo CD and the cluster's controllers would, and what the API server served at each point the
judge reads it, returned as data (snapshot.py). No verdict is reached here but one: which jobs
did not fully run beside the others, and so run again alone (pods.failing_jobs, the judge's own
function, on the snapshot of the jobs run together).

The order of one environment, on a control plane with no trace of the last one:

1. the schedulers (the fleet's profile), nfd-master with the fleet's flags, the CRDs, the add-on
   controller managers, the add-ons' namespaces and the stand-ins for the teams' own objects;
2. nodes: one per pool node, a general-purpose server and each CPU-only server type with a PCI
   inventory, registered cordoned, each publishing its PCI inventory as a NodeFeature;
3. units in Argo CD's wave order: the argocd unit is dry-run only (no Argo CD runs here);
   node-config, then wait until nfd-master has run every rule on every node (the nodes are
   taken), then uncordon; a probe pod per node with no tolerations (taken); device plugins,
   monitoring and scheduling units; then every team unit without its Jobs, until the services
   have settled (every pod taken);
4. then every Job into what the services leave (steady state), one after another in a stable
   order so that the verdict does not depend on a race (taken); a Job that does not run is
   tried again alone (taken), to tell "waits for the team's other jobs" from "never fits";
   then, the Jobs gone, the JobSets and TrainJobs beside the services: Kueue's verdict on each
   (its Workloads taken), and the pods of their child Jobs, which JobSet's controller makes (a
   TrainJob's JobSet is made by Trainer's controller first; taken);
5. with --phases, every job gone, each migrating service walked through its phases (plan.walks)
   beside the other services: each phase's objects applied, the cluster settled and taken; then
   the service put back at the environment's phase.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from generator.controlplane.api import ApiClient, Obj
from generator.controlplane.controllers import use_controller
from generator.controlplane.launcher import (
    DEFAULT_NFD_ARGS,
    ControlPlane,
    node_ready,
    sim_labelled,
)
from generator.findings import Finding
from generator.simulate.checks import IGNORED_TAINT, PROBE_NAMESPACE, probe_objects
from generator.simulate.kueue import (
    JOBSET_DECIDED_TIMEOUT,
    WORKLOAD_API,
    jobsets_decided,
)
from generator.simulate.nodes import SimNode, node_feature, node_object, resource_slice
from generator.simulate.plan import SimPlan
from generator.simulate.pods import SERVICE_KINDS, failing_jobs, pod_verdicts
from generator.simulate.snapshot import EnvRun, JobsRun, Kind, PhaseRun, Snapshot
from generator.simulate.sync import (
    BATCH_JOB,
    JOBSET,
    LWS,
    TRAINJOB,
    UNIT_WORKERS,
    VOLCANO_JOB,
    apply_all,
    delete_jobs,
    parallel,
    recount_quotas,
    run_jobs,
    settle,
    sync,
    wait,
    wait_made,
    wait_node_config,
)
from generator.vocab.api import APPS, CORE, RESOURCE
from generator.vocab.kube import JOBSET_NAME_LABEL as JOBSET_NAME

# What the judge reads of the workloads once they settled (pods.py, kueue.py, checks.py: the
# quotas and the tracks).
WORKLOAD_KINDS: tuple[Kind, ...] = (
    (CORE, "Pod"),
    (CORE, "Event"),
    (CORE, "ResourceQuota"),
    (APPS, "Deployment"),
    (APPS, "ReplicaSet"),
    BATCH_JOB,
    VOLCANO_JOB,
    JOBSET,
    LWS,
    TRAINJOB,
    (WORKLOAD_API, "Workload"),
    (RESOURCE, "ResourceClaim"),
)


def take(api: ApiClient) -> Snapshot:
    """The workloads as the API server serves them now (of the Events, the FailedCreate ones:
    all the judge reads), each ResourceQuota's `used` as its controller counts it at steady
    state (recount_quotas)."""
    recount_quotas(api)
    return Snapshot.take(api, WORKLOAD_KINDS, events="FailedCreate")


def drive(
    plane: ControlPlane, plan: SimPlan, at_steady: Callable[[], None] | None = None
) -> EnvRun:
    """Apply `plan` to `plane` (reset beforehand) and return what the judge needs; `at_steady`
    is called once every service and job runs beside the others (what a cluster's monitoring
    sees day to day), before any job is tried alone."""
    api = plane.client()
    run = EnvRun(plan.env)
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        run.timings[name] = round(now - clock, 3)
        clock = now

    install(plane, plan)
    lap("install")
    nodes = plan.nodes
    register_nodes(api, nodes)
    names = {n.name for n in nodes}

    def all_ready() -> bool:
        live = [n for n in api.list(CORE, "Node") if n["metadata"]["name"] in names]
        return sum(node_ready(n) for n in live) == len(names)

    lap("nodes")

    for wave in plan.waves:
        # Argo CD syncs the Applications of one wave independently, at the same time.
        syncs = [(api, unit, docs, dry) for unit, docs, dry in wave.syncs]
        for found, count in parallel(sync, syncs, workers=UNIT_WORKERS):
            run.refusals += found
            run.objects += count
        for unit in wave.node_config:
            wait_node_config(plane, api, unit, nodes)
        if wave.node_config:
            # nfd-master works on nodes that KWOK may not have made Ready yet: wait for both
            # only here, before the nodes take pods.
            wait(all_ready, "nodes Ready")
            run.nodes = Snapshot.take(api, [(CORE, "Node")]).list(CORE, "Node")
            run.ignored_taints = ignored_taints(plane.workdir)
            parallel(
                lambda n: api.merge_patch(
                    CORE, "Node", "", n.name, {"spec": {"unschedulable": False}}
                ),
                nodes,
            )
            lap("node-config")
            run.probes = probe(api, nodes)
            lap("probes")
            # The rest of the fleet's NFD chart (nfd-worker's DaemonSet among it), once the
            # nodes carry their taints: Argo CD syncs it a wave before every unit, but a taint
            # nfd-master adds later does not evict a running nfd-worker (NoSchedule). Whether
            # nfd-worker runs on a tainted node when it starts again (an upgrade, a reboot) is
            # what its tolerations decide, and what this shows.
            for obj in plan.nfd_objects:
                api.apply(sim_labelled(obj))
            # The components the fleet relies on but does not run (its operator's operands,
            # a DRA driver's kubelet plugin), likewise started on the tainted nodes: where
            # their pods land is what their tolerations and node selection decide.
            for daemon in plan.site_daemons:
                api.apply(sim_labelled(daemon.obj))
    wait_made(api)  # LeaderWorkerSets' groups
    settle(api, schedulers=plan.schedulers)
    lap("services")
    run.services = Snapshot.take(api, [(CORE, "Pod")])

    outcome, refused = run_jobs(api, plan.team_jobs, plan.schedulers)
    run.refusals += refused
    run.objects += len(plan.team_jobs)
    lap("jobs")
    run.jobs = JobsRun(outcome, take(api))
    if at_steady is not None:
        at_steady()
        lap("monitoring")
    _, failing = pod_verdicts(run.jobs.state, plan.view, plan.refs, plan.node_info, outcome)
    jobs_failing = {k: fs for k, fs in failing.items() if k[1] not in SERVICE_KINDS}
    if jobs_failing:
        run.alone = retry_alone(api, plan, jobs_failing, run)
        lap("jobs alone")
    if plan.jobsets:
        # Each team's JobSets beside the services alone, as the jobs were tried: Kueue's verdict.
        delete_jobs(api, plan.team_jobs)
        for found, count in parallel(sync, [(api, b, [o], False) for b, o in plan.jobsets]):
            run.refusals += found
            run.objects += count
        if plan.kueue:
            # Only where Kueue runs in this environment: its CRDs outlive a reset, so that the
            # API serves Workloads says nothing of whether Kueue admits anything here.
            run.jobset_workloads = wait_decided(api, plan)
        # What JobSet's controller made of the rest: child Jobs, whose pods kube-controller-
        # manager makes and kube-scheduler places. A JobSet Kueue holds has its verdict above.
        wait_made(api)
        settle(api, schedulers=plan.schedulers)
        run.jobsets = take(api)
        lap("jobsets")
    if plan.walks:
        run.phases = walk_phases(api, plan, run)
        lap("phases")
    return run


def clear_jobs(api: ApiClient, plan: SimPlan) -> None:
    """Every job gone, and their pods: the services alone, as between two jobs."""
    delete_jobs(api, plan.team_jobs)
    spaces = set()
    for _, obj in plan.jobsets:
        meta = obj["metadata"]
        api.delete(obj["apiVersion"], obj["kind"], meta["namespace"], meta["name"])
        spaces.add(meta["namespace"])

    def gone() -> bool:
        # Every JobSet of those namespaces is the fleet's (a TrainJob's one made for it).
        return not any(
            p["metadata"].get("namespace") in spaces
            and (p["metadata"].get("labels") or {}).get(JOBSET_NAME)
            for p in api.list(CORE, "Pod")
        )

    if spaces:
        wait(gone, "JobSet pods deleted")


def walk_phases(api: ApiClient, plan: SimPlan, run: EnvRun) -> list[PhaseRun]:
    """Each migrating service through the phases of its walk (plan.walks), one service at a
    time beside the others at the environment's phase and no job: each phase's objects applied
    as Argo CD would sync that values change, the cluster settled and taken; then the service
    put back at the environment's phase."""
    clear_jobs(api, plan)
    out: list[PhaseRun] = []
    for walk in plan.walks:
        for step in walk.steps:
            refused, count = apply_all(api, walk.unit, step.objects)
            run.refusals += refused
            run.objects += count
            wait_made(api)
            settle(api, schedulers=plan.schedulers)
            out.append(PhaseRun(walk.team.name, walk.service.name, step.phase, take(api)))
        refused, count = apply_all(api, walk.unit, walk.back)
        run.refusals += refused
        wait_made(api)
        settle(api, schedulers=plan.schedulers)
    return out


def install(plane: ControlPlane, plan: SimPlan) -> None:
    """What is in place before the fleet's units: the schedulers (the fleet's profile),
    nfd-master with the fleet's flags, the CRDs, the add-on controller managers, the add-ons'
    namespaces and the stand-ins for the teams' own objects."""
    api = plane.client()
    profile = plan.profile
    plane.use_scheduler_config(None if plan.beside else profile)
    plane.use_second_scheduler(profile if plan.beside else None)
    plane.use_nfd(*(plan.nfd or (DEFAULT_NFD_ARGS, "")))
    api.apply_crds(plan.crds)
    for addon, setup in plan.controllers.items():
        use_controller(plane, addon, setup)
    if plan.charted:
        api.refresh()  # the charts' CRDs (Kueue's Workloads) are served now
    for ns in plan.namespaces:
        api.apply({"apiVersion": CORE, "kind": "Namespace", "metadata": {"name": ns}})
    for obj in plan.stand_ins:
        api.apply(obj)


def register_nodes(api: ApiClient, nodes: list[SimNode]) -> None:
    """Each node's PCI inventory as a NodeFeature, then the Node (cordoned), and what the site's
    DRA driver would publish for it."""

    def register(node: SimNode) -> None:
        # Features first, then the Node: nfd-master labels a node as soon as it sees both.
        api.apply(node_feature(node))
        created = api.create(node_object(node))
        published = resource_slice(node)
        if published is not None:
            # What the site's DRA driver would publish for the node, owned by it as the driver's
            # slices are: deleted with the node between runs. Applied: a slice of an earlier
            # run's node may still be there, its owner gone and the garbage collector not yet.
            published["metadata"]["ownerReferences"] = [
                {
                    "apiVersion": CORE,
                    "kind": "Node",
                    "name": node.name,
                    "uid": created["metadata"]["uid"],
                }
            ]
            api.apply(published)

    parallel(register, nodes)


def ignored_taints(workdir: Path) -> list[str]:
    """nfd-master's log lines about the taints it refused to set (pkg/nfd-master/nfd-master.go,
    filterTaints: 'ignoring taint' with the validation error), in the control plane's workdir."""
    log = workdir / "logs" / "nfd-master.log"
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if IGNORED_TAINT.search(line)]


def probe(api: ApiClient, nodes: list[SimNode]) -> list[Obj]:
    """One pod per node with no tolerations (checks.probe_objects), placed by the scheduler:
    the probe pods as the API server lists them once it has, and the probe's namespace gone."""
    namespace, *pods = probe_objects(nodes)
    api.apply(namespace)
    wait(lambda: api.exists(CORE, "ServiceAccount", PROBE_NAMESPACE, "default"), "probe namespace")
    for pod in pods:
        api.apply(pod)
    settle(api)
    placed = Snapshot.take(api, [(CORE, "Pod")]).list(CORE, "Pod", PROBE_NAMESPACE)
    api.delete(CORE, "Namespace", "", PROBE_NAMESPACE)
    return placed


def retry_alone(
    api: ApiClient, plan: SimPlan, failing: dict[tuple[str, str, str], list[Finding]], run: EnvRun
) -> list[JobsRun]:
    """Each job that did not fully run beside all the others, run again alone beside the
    services: what the driver saw and what the API server served then, job by job."""
    jobs = plan.team_jobs
    ids = [(o["metadata"]["namespace"], o["metadata"]["name"]) for _, o in jobs]
    retried = failing_jobs(failing, ids)
    out: list[JobsRun] = []
    for (unit, obj), job in zip(jobs, ids, strict=True):
        if job not in retried:
            continue
        delete_jobs(api, jobs)
        outcome, refused = run_jobs(api, [(unit, obj)], plan.schedulers)
        run.refusals += refused
        run.objects += 1
        out.append(JobsRun(outcome, take(api), job))
    delete_jobs(api, jobs)
    return out


def wait_decided(api: ApiClient, plan: SimPlan) -> Snapshot | None:
    """Until Kueue has admitted every JobSet and TrainJob or said why not, or
    JOBSET_DECIDED_TIMEOUT seconds (what is undecided then is reported as such); Kueue's
    Workloads then. None when there is nothing for Kueue to decide."""
    kind = (WORKLOAD_API, "Workload")
    if not plan.queued or not api.serves(*kind):
        return None
    deadline = time.monotonic() + JOBSET_DECIDED_TIMEOUT
    while not jobsets_decided(api, plan.queued) and time.monotonic() < deadline:
        time.sleep(0.2)
    return Snapshot.take(api, [kind])
