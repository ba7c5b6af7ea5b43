"""The judge: a plan (plan.py) and what the driver took (snapshot.py) -> the environment's report,
its rows and findings, each at the values that caused it. Pure: no API call, no process, no
file; tests/simulate/test_judge.py judges runs recorded on a real control plane.

The report is built here, once, from what each check returns (checks.py: nodes, probe pods,
DaemonSets, quotas, tracks; pods.py: workload pods, and the jobs tried alone; kueue.py: Kueue's
admissions)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from generator.cluster.units import BuiltUnit
from generator.findings import Finding, Location, sorted_findings
from generator.policy.manifest import describe, origin
from generator.simulate.checks import (
    nfd_workers,
    node_verdicts,
    plugin_verdicts,
    probe_verdicts,
    quota_rows,
    site_daemon_verdicts,
    track_verdicts,
    worker_verdicts,
)
from generator.simulate.kueue import (
    admission_verdicts,
    jobset_verdicts,
    lws_groups,
    workloads_by_owner,
)
from generator.simulate.migration import phase_verdicts
from generator.simulate.plan import SimPlan, ident
from generator.simulate.pods import SERVICE_KINDS, alone_verdicts, pod_verdicts
from generator.simulate.result import EnvReport, NodeResult
from generator.simulate.snapshot import EnvRun, JobOutcome, Refusal
from generator.vocab.api import CORE

REFUSED_HINT = "validate --dry-run=server shows the details"


def judge(plan: SimPlan, run: EnvRun) -> EnvReport:
    """The report of one environment: `run`, what the driver took of `plan` applied."""
    view, refs, nodes = plan.view, plan.refs, plan.node_info
    findings = list(plan.findings)
    findings += [refused(plan.built, r) for r in run.refusals]

    node_rows: list[NodeResult] = []
    probes: list[dict[str, Any]] = []
    if run.nodes is not None:
        node_rows, found = node_verdicts(view, plan.nodes, run.nodes, run.ignored_taints)
        findings += found
        probes, found = probe_verdicts(plan.nodes, run.probes)
        findings += found

    plugins: list[dict[str, Any]] = []
    if run.services is not None:
        pods = run.services.list(CORE, "Pod")
        rows, found = plugin_verdicts(view, plan.nodes, plan.built, pods)
        plugins += rows
        findings += found
        rows, found = worker_verdicts(view, plan.nodes, nfd_workers(plan.nfd_objects), pods)
        plugins += rows
        findings += found
        rows, found = site_daemon_verdicts(plan.nodes, plan.site_daemons, pods)
        plugins += rows
        findings += found

    assert run.jobs is not None, "every run starts the jobs (none, at the least)"
    state = run.jobs.state
    pod_rows, failing = pod_verdicts(state, view, refs, nodes, run.jobs.outcome)
    findings += [f for key, fs in failing.items() if key[1] in SERVICE_KINDS for f in fs]
    admissions = admission_verdicts(workloads_by_owner(state), refs, pod_rows, lws_groups(state))
    quotas = quota_rows(view, state.list(CORE, "ResourceQuota"))
    # The JobSets run after the Jobs, beside the services: their devices count as used only then.
    jobset_quotas = (
        [] if run.jobsets is None else quota_rows(view, run.jobsets.list(CORE, "ResourceQuota"))
    )
    tracks, found = track_verdicts(plan.build.workloads, state.list(CORE, "Pod"), nodes)
    findings += found
    jobs_failing = {k: fs for k, fs in failing.items() if k[1] not in SERVICE_KINDS}
    if jobs_failing:
        alone = [(r.job, r.outcome, r.state) for r in run.alone]
        found, waiting = alone_verdicts(view, refs, nodes, jobs_failing, alone)
        findings += found
        pod_rows = [replace(p, waits=True) if p.workload in waiting else p for p in pod_rows]

    if run.jobsets is not None:
        held: set[tuple[str, str]] = set()
        if run.jobset_workloads is not None:
            rows, found, held = jobset_verdicts(run.jobset_workloads, plan.queued)
            admissions += rows
            findings += found
        tasks = {
            k: r
            for k, r in refs.items()
            if k[1] in ("JobSet task", "TrainJob") and (k[0], k[2].split("/")[0]) not in held
        }
        rows_of_tasks, failing = pod_verdicts(run.jobsets, view, tasks, nodes, JobOutcome())
        pod_rows += rows_of_tasks
        findings += [f for fs in failing.values() for f in fs]

    phases, found = phase_verdicts(view, plan.walks, run.phases, refs, nodes)
    findings += found

    return EnvReport(
        plan.env,
        nodes=node_rows,
        plugins=plugins,
        probes=probes,
        pods=pod_rows,
        quotas=quotas,
        jobset_quotas=jobset_quotas,
        tracks=tracks,
        phases=phases,
        admissions=admissions,
        # Every finding of this run is about this environment: a field, so reporters and the
        # text name it (" in environment 'prod'").
        findings=sorted_findings(replace(f, envs=(plan.env,)) for f in findings),
        timings=dict(run.timings),
        objects=run.objects,
    )


def refused(built: list[BuiltUnit], refusal: Refusal) -> Finding:
    """SIM012: an object the API server refused to apply, at the values that made it."""
    key = (refusal.api_version, refusal.kind, refusal.namespace, refusal.name)
    for unit in built:
        if unit.unit.path != refusal.unit:
            continue
        for obj in unit.docs:
            if ident(obj) == key:
                return Finding(
                    "SIM012",
                    f"{describe(unit.unit, obj)}: the API server refuses it: {refusal.message}",
                    origin(unit.unit, obj),
                    hint=REFUSED_HINT,
                )
    # An object of no unit the plan built: said where the unit is.
    return Finding(
        "SIM012",
        f"{refusal.kind} {refusal.namespace}/{refusal.name}: the API server refuses it: "
        f"{refusal.message}",
        Location(refusal.unit),
        hint=REFUSED_HINT,
    )
