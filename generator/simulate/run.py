"""`render.py simulate`: apply the fleet to a local control plane with simulated nodes and report
what the real kube-scheduler, controllers, admission and nfd-master make of it.

Per environment, on a control plane with no trace of the last one, in three steps:

1. plan (plan.py, nothing runs): the units as kustomize builds them, and from them and the
   values what to install, which nodes, which workloads, what is expected where and what is not
   simulated (SIM011);
2. drive (drive.py): the plan applied, waiting as Argo CD and the cluster's controllers would,
   and what the API server served at each point the judge reads it, as data (snapshot.py);
3. judge (judge.py, pure): plan and snapshots -> the report: node labels and taints against the
   pool's, DaemonSet pods per vendor, every job, task and service pod, the probe pods, quota used
   against hard, ready pods per track against `plan`, Kueue's admissions. Any mismatch is an
   error finding at the values that caused it.

What cannot be simulated is said in the report (SIM011) and in docs/simulation.md: containers do
not run (KWOK marks scheduled pods Running, and no pod ever ends); Volcano does not run (a Volcano
Job's task pods are made here the way Volcano's job controller makes them and placed by
kube-scheduler, all or none as its gang plugin decides). Kueue's, JobSet's, LeaderWorkerSet's
and Kubeflow Trainer's controller managers run as the fleet's charts deploy them
(controlplane/controllers.py), as processes rather than Deployments.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

from generator.cluster.dryrun import by_minor, load, version_findings
from generator.cluster.plane import CONTROLLER_ADDONS, reset
from generator.cluster.units import build
from generator.controlplane.controllers import use_controller
from generator.controlplane.launcher import ControlPlane, ControlPlaneError
from generator.controlplane.target import server_version
from generator.errors import FindingsError
from generator.findings import Finding, sorted_findings
from generator.render.layout import Rendered, render_tree
from generator.render.stage import Checked
from generator.simulate import monitoring
from generator.simulate.drive import drive
from generator.simulate.gitops import argocd_not_run, drive_argocd, judge_argocd
from generator.simulate.judge import judge
from generator.simulate.plan import SimPlan, make_plan
from generator.simulate.result import EnvReport, SimulationResult
from generator.simulate.snapshot import EnvRun
from generator.values.model import Values

# The CLI, tests and benchmarks import the result type from here, beside simulate().
__all__ = ["SimulationResult", "simulate"]


def simulate(
    values_dir: Path,
    env: str | None,
    plane_factory: Callable[[str], contextlib.AbstractContextManager[ControlPlane]],
    *,
    runs: list[EnvRun] | None = None,
    argocd: bool = True,
    watch_metrics: bool = True,
    phases: bool = False,
) -> SimulationResult:
    """Simulate `env` (None: every environment), each cluster on the control plane of its own
    Kubernetes minor that `plane_factory(minor)` gives (one per minor, in turn), and
    (`argocd`) sync each environment through the real Argo CD on it too; (`watch_metrics`) run
    the site's monitoring over what each environment built and judge its series; (`phases`)
    walk each migrating service through its phases once the environment has settled.
    `runs`: where to put what the driver took of each environment too (tests record them)."""
    try:
        checked, envs = load(values_dir, env)
    except FindingsError as exc:
        return SimulationResult([], exc.findings)
    loaded = checked.values
    findings = version_findings(loaded, None, "simulation", envs)
    if findings:
        return SimulationResult([], findings)
    reports: dict[str, EnvReport] = {}
    started_in = 0.0
    # What Argo CD syncs: the tree render writes (and publish pushes), once for every environment.
    rendered = render_tree(loaded, builds=checked.builds) if argocd else None
    for minor, views in by_minor(loaded, envs).items():
        with plane_factory(minor) as plane:
            _on_plane(
                plane,
                loaded,
                checked,
                views,
                rendered,
                runs,
                argocd,
                watch_metrics,
                reports,
                phases,
            )
        started_in += plane.started_in
    ordered = [reports[name] for name in envs]
    everything = [f for r in ordered for f in r.findings]
    return SimulationResult(ordered, sorted_findings(everything), started_in)


def _minor_of(loaded: Values, name: str) -> str:
    return next(iter(by_minor(loaded, [name])))


def _on_plane(
    plane: ControlPlane,
    loaded: Values,
    checked: Checked,
    envs: list[str],
    rendered: Rendered | None,
    runs: list[EnvRun] | None,
    argocd: bool,
    watch_metrics: bool,
    reports: dict[str, EnvReport],
    phases: bool = False,
) -> None:
    """The clusters `envs`, all of the plane's minor, one after another on `plane`."""
    if plane.minor != _minor_of(loaded, envs[0]):
        # A plane of another minor would prove nothing of these clusters (KVER001's reason).
        raise ControlPlaneError(
            f"a control plane of Kubernetes {plane.minor} was given for clusters of "
            f"{_minor_of(loaded, envs[0])}"
        )
    version = server_version(plane.client())
    try:
        for name in envs:
            reset(plane)  # no trace of the last environment (or run, on a shared plane)
            # The units render lays out from the cluster's build, and what the plan expects
            # of them from that same build.
            built, build_findings = build(loaded, name, builds=checked.builds)
            plan = make_plan(loaded, checked.builds[name], built, build_findings, phases=phases)
            watched: list[monitoring.MonRun] = []

            def watch(plan: SimPlan = plan, out: list[monitoring.MonRun] = watched) -> None:
                mon = monitoring.drive(plane, plan)
                out.extend([mon] if mon is not None else [])

            run = drive(plane, plan, watch if watch_metrics else None)
            if runs is not None:
                runs.append(run)
            report = judge(plan, run)
            report.kubernetes = version
            found: list[Finding] = []
            if watched:
                report.metrics, found = monitoring.judge(plan, watched[0])
            else:
                why = "--no-monitoring" if not watch_metrics else "no monitoring.prometheus"
                found = [monitoring.not_run(plan, why)]
            if argocd:
                # The same environment again, on a clean plane, synced by Argo CD itself.
                reset(plane)
                assert rendered is not None
                argo = drive_argocd(plane, plan, rendered)
                report.applications, synced = judge_argocd(argo, plan)
                report.timings["argocd"] = argo.seconds
            else:
                synced = [argocd_not_run(plan)]
            found += synced
            report.findings = sorted_findings([*report.findings, *found])
            reports[name] = report
    finally:
        # A shared plane goes back to one scheduler and no add-on controller.
        plane.use_second_scheduler(None)
        for key in CONTROLLER_ADDONS:
            use_controller(plane, key, None)
