"""`render.py simulate`: apply the fleet to a local control plane with simulated nodes and report
what the real kube-scheduler, controllers, admission and nfd-master make of it.

Per environment, on a control plane with no trace of the last one:

1. nodes: one per pool node, a general-purpose server and each CPU-only server type with a PCI
   inventory, registered cordoned, each publishing its PCI inventory as a NodeFeature;
2. units in Argo CD's wave order (generator/cluster/units.py): the argocd unit is dry-run only
   (no Argo CD runs here); node-config, then wait until nfd-master has run every rule on every
   node, then uncordon; a probe pod per node with no tolerations; device plugins, monitoring and
   scheduling units; then every team unit without its Jobs, until the services have settled;
3. then every Job into what the services leave (steady state), one after another in a stable
   order so that the verdict does not depend on a race; a Job that does not run
   is tried again alone, to tell "waits for the team's other jobs" from "never fits"; then,
   the Jobs gone, the JobSets and TrainJobs beside the services: Kueue's verdict on each, and
   the pods of their child Jobs, which JobSet's controller makes (a TrainJob's JobSet is made
   by Trainer's controller first);
4. the report: node labels and taints against the pool's, DaemonSet pods per vendor, every job,
   task and service pod, the probe pods, quota used against hard, ready pods per track against
   `plan`. Any mismatch is an error finding at the values that caused it.

What cannot be simulated is said in the report (SIM011) and in docs/simulation.md: containers do
not run (KWOK marks scheduled pods Running, and no pod ever ends); Volcano does not run (a Volcano
Job's task pods are made here the way Volcano's job controller makes them and placed by
kube-scheduler, all or none as its gang plugin decides). Kueue's, JobSet's, LeaderWorkerSet's
and Kubeflow Trainer's controller managers run as the fleet's charts deploy them
(simcontrollers.py), as processes rather than Deployments.

This module is the run's order; the parts: simrun.py (applying in waves, waiting until quiet,
running jobs), simchecks.py (nodes, DaemonSets, probe pods, quota, tracks), simpods.py (workload
pods against their values), simresult.py (the report's rows and the hints).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from generator.builders.platform import FLEET, SITE
from generator.builders.scheduling import (
    DEFAULT_SCHEDULER,
    KUBE_SCHEDULER_CONF_KEY,
    KUBE_SCHEDULER_CONFIGMAP,
    PACKING_UNIT,
)
from generator.cluster.dryrun import addon_namespaces, load, version_findings
from generator.cluster.plane import CONTROLLER_ADDONS, reset
from generator.cluster.units import ARGOCD_UNIT, BuiltUnit, build
from generator.controlplane.api import ApiClient, Obj
from generator.controlplane.controllers import use_controller
from generator.controlplane.crds import needed_crds
from generator.controlplane.launcher import (
    DEFAULT_NFD_ARGS,
    ControlPlane,
    node_ready,
    sim_labelled,
)
from generator.errors import FindingsError
from generator.findings import Finding, Location, Severity, sorted_findings
from generator.simulate import external as simexternal
from generator.simulate.addons import nfd_applied, nfd_chart, nfd_master, rendered_controller
from generator.simulate.checks import (
    check_nfd_workers,
    check_nodes,
    check_plugins,
    check_quotas,
    check_tracks,
    probe,
)
from generator.simulate.kueue import (
    HELD_KINDS,
    check_admissions,
    integrations,
    jobset_admissions,
)
from generator.simulate.nodes import (
    SimNode,
    node_feature,
    node_object,
    plan_nodes,
    resource_slice,
)
from generator.simulate.pods import SERVICE_KINDS, check_pods, pod_refs, retry_alone
from generator.simulate.result import HINTS, EnvReport, SimulationResult
from generator.simulate.scope import not_simulated
from generator.simulate.sync import (
    JOB_KINDS,
    UNIT_WORKERS,
    JobOutcome,
    delete_jobs,
    parallel,
    run_jobs,
    settle,
    sync,
    wait,
    wait_made,
    wait_node_config,
)
from generator.values.model import Values

# The CLI, tests and benchmarks import the result type from here, beside simulate().
__all__ = ["SimulationResult", "scheduler_config", "simulate"]


def simulate(
    values_dir: Path,
    env: str | None,
    plane_factory: Callable[[], contextlib.AbstractContextManager[ControlPlane]],
) -> SimulationResult:
    try:
        loaded, envs, _ = load(values_dir, env)
    except FindingsError as exc:
        return SimulationResult([], exc.findings)
    findings = version_findings(loaded, None, "simulation", envs)
    if findings:
        return SimulationResult([], findings)
    reports: list[EnvReport] = []
    with plane_factory() as plane:
        api = plane.client()
        try:
            for name in envs:
                reset(plane)  # no trace of the last environment (or run, on a shared plane)
                reports.append(_simulate_env(loaded, name, plane, api))
        finally:
            # A shared plane goes back to one scheduler and no add-on controller.
            plane.use_second_scheduler(None)
            for key in CONTROLLER_ADDONS:
                use_controller(plane, key, None)
    everything = [f for r in reports for f in r.findings]
    return SimulationResult(reports, sorted_findings(everything), plane.started_in)


def _simulate_env(loaded: Values, env: str, plane: ControlPlane, api: ApiClient) -> EnvReport:
    view = loaded.envs[env]
    report = EnvReport(env)
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report.timings[name] = round(now - clock, 3)
        clock = now

    built, build_findings = build(loaded, env)
    report.findings += build_findings
    profile = scheduler_config(built)
    # The fleet's own packing scheduler (a Deployment it renders) runs as a second scheduler
    # process beside an untouched default one, with the rendered profile and name, as on the
    # cluster; a profile for the control plane's own scheduler replaces its configuration.
    beside = profile is not None and _profile_name(profile) != DEFAULT_SCHEDULER
    rendered = any(
        o.get("kind") == "Deployment" for b in built if b.unit.name == PACKING_UNIT for o in b.docs
    )
    # nfd-master as the fleet's NFD chart deploys it; the site's (not rendered) with the flags
    # docs/node-config.md asks of it, which the run says it assumed (SIM011).
    nfd_objs = nfd_chart(built, view.fleet.kubernetes_version)
    nfd = None if nfd_objs is None else nfd_master(nfd_objs)
    site_nfd = nfd is None and view.fleet.node_config_method == "nfd"
    # The add-ons' controller managers (Kueue's, JobSet's, LeaderWorkerSet's) as the fleet's
    # charts deploy them, or with their charts' defaults for the site's.
    controllers = {
        key: rendered_controller(built, key, view.fleet.kubernetes_version)
        for key in CONTROLLER_ADDONS
    }
    kueue = controllers["kueue"][0]
    report.findings += not_simulated(
        view,
        built,
        packing=profile is not None and not rendered,
        site_nfd=site_nfd,
        controllers={k: SITE if site else FLEET for k, (c, site) in controllers.items() if c},
        integrations=tuple(integrations(kueue)) if kueue else (),
    )
    plane.use_scheduler_config(None if beside else profile)
    plane.use_second_scheduler(profile if beside else None)
    plane.use_nfd(*(nfd or (DEFAULT_NFD_ARGS, "")))
    lap("scheduler")
    # Where an add-on's controller manager runs, its CRDs are its chart's (use_controller), with
    # the conversion webhook the chart wires: the pinned copies of the same CRDs are not applied
    # over them.
    crds = needed_crds([o for b in built for o in b.docs])
    charted = {g for c, _ in controllers.values() if c for g in c.groups()}
    api.apply_crds(c for c in crds if c["spec"]["group"] not in charted)
    for addon, (setup, _) in controllers.items():
        use_controller(plane, addon, setup)
    if charted:
        api.refresh()  # the charts' CRDs (Kueue's Workloads) are served now
    for ns in addon_namespaces(loaded, env):
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    report.findings += simexternal.create(api, view)
    nfd_objects = nfd_applied(nfd_objs or [])
    lap("install")

    nodes = plan_nodes(view)
    for node in nodes:
        if node.inventory is None:
            report.findings.append(
                Finding(
                    "SIM009",
                    f"node {node.name} ({node.describe()}): no PCI inventory for its server type, "
                    "so nfd-master has nothing to match: its labels and taints are not simulated",
                    node.location() or Location("values"),
                    hint=HINTS["SIM009"],
                    severity=Severity.WARNING,
                )
            )

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
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node.name,
                    "uid": created["metadata"]["uid"],
                }
            ]
            api.apply(published)

    parallel(register, nodes)
    names = {n.name for n in nodes}

    def all_ready() -> bool:
        live = [n for n in api.list("v1", "Node") if n["metadata"]["name"] in names]
        return sum(node_ready(n) for n in live) == len(names)

    lap("nodes")

    waves = sorted({b.wave for b in built})
    team_jobs: list[tuple[BuiltUnit, Obj]] = []
    jobsets: list[tuple[BuiltUnit, Obj]] = []
    for wave in waves:
        units = [b for b in built if b.wave == wave]
        jobs = {
            b.unit.path: [o for o in b.docs if (o.get("apiVersion"), o.get("kind")) in JOB_KINDS]
            for b in units
        }
        team_jobs += [(b, o) for b in units for o in jobs[b.unit.path]]
        # JobSets wait until the Jobs have had their turn: they are jobs too, and Kueue would
        # otherwise hold their quota through the whole job phase (nothing finishes here).
        for b in units:
            held = [o for o in b.docs if o.get("kind") in HELD_KINDS.values()]
            jobs[b.unit.path] += held
            jobsets += [(b, o) for o in held]

        # No Argo CD runs here: its Applications are checked (dry-run), not acted on. Argo CD
        # syncs the Applications of one wave independently, at the same time.
        syncs = [
            (api, b, b.docs, True)
            if b.unit.name == ARGOCD_UNIT
            else (api, b, [o for o in b.docs if o not in jobs[b.unit.path]], False)
            for b in units
        ]
        for found, count in parallel(sync, syncs, workers=UNIT_WORKERS):
            report.findings += found
            report.objects += count
        node_config = [b for b in units if b.unit.name == "node-config"]
        for unit in node_config:
            wait_node_config(plane, api, unit, nodes)
        if node_config:
            # nfd-master works on nodes that KWOK may not have made Ready yet: wait for both
            # only here, before the nodes take pods.
            wait(all_ready, "nodes Ready")
            check_nodes(plane, api, view, nodes, report)
            parallel(
                lambda n: api.merge_patch(
                    "v1", "Node", "", n.name, {"spec": {"unschedulable": False}}
                ),
                nodes,
            )
            lap("node-config")
            probe(api, nodes, report)
            lap("probes")
            # The rest of the fleet's NFD chart (nfd-worker's DaemonSet among it), once the
            # nodes carry their taints: Argo CD syncs it a wave before every unit, but a taint
            # nfd-master adds later does not evict a running nfd-worker (NoSchedule). Whether
            # nfd-worker runs on a tainted node when it starts again (an upgrade, a reboot) is
            # what its tolerations decide, and what this shows.
            for obj in nfd_objects:
                api.apply(sim_labelled(obj))
    # The schedulers that run here: the control plane's and the fleet's packing scheduler.
    schedulers = frozenset(
        {DEFAULT_SCHEDULER} | ({_profile_name(profile)} if beside and profile else set())
    )
    wait_made(api)  # LeaderWorkerSets' groups
    settle(api, schedulers=schedulers)
    lap("services")
    check_plugins(api, view, nodes, built, report)
    check_nfd_workers(api, view, nodes, nfd_objects, report)

    refs = pod_refs(view)
    node_info = {n.name: n for n in nodes}
    outcome = run_jobs(api, team_jobs, report, schedulers)
    lap("jobs")
    rows, failing = check_pods(api, view, refs, node_info, outcome)
    report.pods = rows
    for key, fs in failing.items():
        if key[1] in SERVICE_KINDS:
            report.findings += fs
    check_admissions(api, refs, report)
    check_quotas(api, view, report)
    check_tracks(api, view, report)
    jobs_failing = {k: fs for k, fs in failing.items() if k[1] not in SERVICE_KINDS}
    if jobs_failing:
        retry_alone(api, view, team_jobs, refs, node_info, jobs_failing, report, schedulers)
        lap("jobs alone")
    if jobsets:
        # Each team's JobSets beside the services alone, as the jobs were tried: Kueue's verdict.
        delete_jobs(api, team_jobs)
        for found, count in parallel(sync, [(api, b, [o], False) for b, o in jobsets]):
            report.findings += found
            report.objects += count
        waiting: set[tuple[str, str]] = set()
        if kueue is not None:
            # Only where Kueue runs in this environment: its CRDs outlive a reset, so that the
            # API serves Workloads says nothing of whether Kueue admits anything here.
            waiting = jobset_admissions(api, view, report)
        # What JobSet's controller made of the rest: child Jobs, whose pods kube-controller-
        # manager makes and kube-scheduler places. A JobSet Kueue holds has its verdict above.
        wait_made(api)
        settle(api, schedulers=schedulers)
        tasks = {
            k: r
            for k, r in refs.items()
            if k[1] in ("JobSet task", "TrainJob") and (k[0], k[2].split("/")[0]) not in waiting
        }
        rows, failing = check_pods(api, view, tasks, node_info, JobOutcome())
        report.pods += rows
        report.findings += [f for fs in failing.values() for f in fs]
        lap("jobsets")
    # Every finding of this run is about this environment: a field, so reporters and the text
    # name it (" in environment 'prod'").
    report.findings = sorted_findings(replace(f, envs=(env,)) for f in report.findings)
    return report


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
