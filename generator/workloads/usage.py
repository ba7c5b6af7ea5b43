"""Devices a team's workloads hold per namespace and vendor, against its quota and its cluster.

Services run all the time, so their devices add up. A team's jobs run at once as far as its quota
lets them: the ResourceQuota refuses the pods beyond it (the Job controller retries), Kueue and
Volcano admit up to the team's queue. So a team must have quota for its services and its largest
job (MIG004); the cluster must hold every service and the largest job, or that job never runs
(MIG005); and when every team runs its jobs up to its quota at once, the cluster holds each
team's services and jobs added over the teams: where that is more than the pools, teams' jobs
wait for each other's (MIG007, a warning: queueing is what a batch cluster does, but plan and
report say so instead of "fits").
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from generator.values.merge import Doc
from generator.values.model import FleetView, Team
from generator.values.yamlio import YamlPath
from generator.workloads.model import Workloads
from generator.workloads.phases import local_plans, plan_service


@dataclass(frozen=True)
class Usage:
    vendor: str
    namespace: str
    services: int
    largest_job: int
    quota: int
    jobs_total: int  # every job's devices together
    detail: str
    blame: YamlPath  # the values path to point at when it does not fit
    team_doc: Doc

    @property
    def needed(self) -> int:
        """What the team needs to run its services and any one of its jobs."""
        return self.services + self.largest_job

    @property
    def jobs_at_once(self) -> int:
        """Job devices that run at the same time: all the jobs, as far as the quota left by the
        services lets them, and never less than the largest job (MIG004 says when the quota
        does not hold that one)."""
        room = max(self.largest_job, self.quota - self.services)
        return min(self.jobs_total, room)

    @property
    def at_once(self) -> int:
        """What the team holds of the vendor when everything it may run runs."""
        return self.services + self.jobs_at_once


class _Teams(Protocol):
    """What the usage is read from: a view's build (builders/fleet.py Build), whose team builds
    hold each team's usage (builders/build.py TeamBuild), made with its workload objects or kept
    with them (render/teammemo.py: a team's usage reads what its build reads). A protocol, not
    builders/build.py's Parts: workloads/ sits below builders/ (tests/project/test_layers.py
    refuses that import, even for types only)."""

    @property
    def view(self) -> FleetView: ...

    def team(self, team: Team) -> _HasUsage: ...


class _HasUsage(Protocol):
    @property
    def usage(self) -> tuple[Usage, ...]: ...


# Each view's fleet needs: MIG005, MIG007 and plan read the same ones.
_NEEDS: weakref.WeakKeyDictionary[_Teams, Mapping[str, FleetNeed]]
_NEEDS = weakref.WeakKeyDictionary()


def vendor_usage(build: _Teams, team: Team) -> tuple[Usage, ...]:
    """What the team's workloads hold of each vendor in each of its namespaces, by namespace
    and vendor: the team build's (worked out once per team and view, and kept with the build:
    at 1,000 teams, working it out for every team of a changed view was a fifth of a render
    after one team's edit)."""
    return build.team(team).usage


def team_usage(workloads: Workloads, team: Team) -> tuple[Usage, ...]:
    """vendor_usage worked out from the team's workload model (builders/workloads.py
    team_build)."""
    loaded = workloads.of(team)
    # (namespace, vendor) -> [(devices, what, path, is_job)]
    parts: dict[tuple[str, str], list[tuple[int, str, YamlPath, bool]]] = {}
    for svc in loaded.services:
        for plan in local_plans(svc):
            if plan.devices:
                parts.setdefault((svc.namespace, plan.vendor), []).append(
                    (
                        plan.devices,
                        f"service {svc.name} {plan.replicas}x{plan.devices // plan.replicas}",
                        plan.replicas_path,
                        False,
                    )
                )
    for job in loaded.jobs:
        for vendor, n in job.devices().items():
            if n:
                parts.setdefault((job.namespace, vendor), []).append(
                    (n, f"job {job.name}", job.path, True)
                )
    out = []
    for (ns, vendor), items in sorted(parts.items()):
        services = [i for i in items if not i[3]]
        jobs = [i for i in items if i[3]]
        largest = max(jobs, key=lambda i: i[0]) if jobs else None
        shown = [*services, *([largest] if largest else [])]
        detail = ", ".join(f"{what}={n}" for n, what, _, _ in shown)
        if largest and len(jobs) > 1:
            detail += " (the largest of its jobs)"
        blame_item = max(shown, key=lambda i: i[0])
        out.append(
            Usage(
                vendor=vendor,
                namespace=ns,
                services=sum(i[0] for i in services),
                largest_job=largest[0] if largest else 0,
                quota=team.quota.get(vendor, 0),
                jobs_total=sum(i[0] for i in jobs),
                detail=detail,
                blame=blame_item[2],
                team_doc=team.doc,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Pinned:
    """A workload part pinned to pool models: its devices, and where it is declared."""

    team: Team
    vendor: str
    models: tuple[str, ...]
    devices: int
    is_job: bool
    path: YamlPath
    label: str


def team_pinned(workloads: Workloads, team: Team) -> tuple[Pinned, ...]:
    """Each workload part of the team pinned to pool models (SCH006 sums them per model), worked
    out once per team and view and kept with its build, as its usage is."""
    loaded = workloads.of(team)
    out = []
    for job in loaded.jobs:
        for task in job.tasks:
            models = tuple(m for m in (task.pod.model, task.pod.fallback_model) if m)
            if models and task.pod.devices:
                devices = task.replicas * task.pod.devices
                label = f"job {job.name}" + (f"/{task.name}" if job.has_tasks else "")
                out.append(Pinned(team, task.pod.vendor, models, devices, True, task.path, label))
    for svc in loaded.services:
        plans = {p.vendor: p for p in plan_service(svc)}
        for track in svc.local_tracks:
            models = tuple(m for m in (track.pod.model, track.pod.fallback_model) if m)
            if models and plans[track.vendor].devices:
                path = (*svc.path, "tracks", track.vendor)
                label = f"service {svc.name}/{track.vendor}"
                out.append(
                    Pinned(
                        team, track.vendor, models, plans[track.vendor].devices, False, path, label
                    )
                )
    return tuple(out)


@dataclass(frozen=True)
class FleetNeed:
    """Devices of one vendor that all teams' workloads need in a cluster: `needed`, what must fit
    for everything to run at all (every service, and the largest job); `at_once`, what they hold
    when every team runs its jobs side by side up to its quota (Usage.at_once)."""

    vendor: str
    uses: tuple[Usage, ...]

    @property
    def services(self) -> int:
        return sum(u.services for u in self.uses)

    @property
    def largest_job(self) -> int:
        return max(u.largest_job for u in self.uses)

    @property
    def needed(self) -> int:
        return self.services + self.largest_job

    @property
    def jobs(self) -> int:
        return sum(u.jobs_at_once for u in self.uses)

    @property
    def at_once(self) -> int:
        return self.services + self.jobs


def fleet_needs(build: _Teams) -> Mapping[str, FleetNeed]:
    """vendor id -> what the fleet's workloads need of it (vendors no workload uses are absent).

    The one computation behind MIG005 and the capacity rows of `plan` and the fleet report."""
    found = _NEEDS.get(build)
    if found is None:
        uses: dict[str, list[Usage]] = {}
        for team in build.view.teams:
            for use in vendor_usage(build, team):
                uses.setdefault(use.vendor, []).append(use)
        found = _NEEDS[build] = {v: FleetNeed(v, tuple(each)) for v, each in uses.items()}
    return found
