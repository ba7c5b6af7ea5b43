"""One view as the checks and the manifest rules read it: its build (builders/fleet.py), and what
several of them derive from it, each worked out once per view: a fleet of 1,000 teams asks for
the same landings, pod problems and team lookups thousands of times.

The checks and rules read the build render made, never a second one: the objects they judge are
the objects that are laid out.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from generator.builders.build import PodRef, TeamBuild
from generator.builders.claims import claimed
from generator.builders.fleet import Build
from generator.builders.monitoring.sources import exporter_namespace, settings
from generator.builders.workloads import queue_name
from generator.policy.placement import (
    Clash,
    PodTemplate,
    Pools,
    Problem,
    pod_problems,
    pod_templates,
    selector_clashes,
)
from generator.values.model import FleetView, Pool, Team, Vendor
from generator.values.quantity import parse_quantity
from generator.vocab.objects import Obj
from generator.vocab.units import Component, Unit
from generator.workloads.model import Workloads

SYSTEM_NAMESPACES = {
    "kube-system": "Kubernetes system components",
    "kube-public": "Kubernetes public cluster information",
    "kube-node-lease": "node heartbeats",
    "default": "objects created without a namespace",
}


@dataclass(frozen=True)
class Landing:
    """A pod template that asks for a vendor's devices, with the pools it may land on."""

    ref: PodRef
    vendor: Vendor
    devices: int
    pools: tuple[Pool, ...]


UnitProblems = list[tuple[Obj, PodTemplate, list[Problem]]]


class Context:
    def __init__(self, build: Build) -> None:
        self.build = build
        self._pools: Pools | None = None
        self._landings: dict[str, list[Landing]] = {}
        self._pod_problems: dict[str, list[tuple[PodRef, Problem]]] = {}
        self._reserved: dict[str, str] | None = None
        self._clashes: list[Clash] | None = None
        self._by_unit: dict[str, Team] | None = None
        self._by_queue: dict[str, Team] | None = None
        self._unit_problems: tuple[list[Obj], UnitProblems] | None = None
        # The queue names `team_of_queue` was asked for: a unit's rules read the values of the
        # teams so named, and a name no team has now is a lookup that another team's values
        # could answer later (policy/memo.RuleMemo keeps a team's unit by its team alone only
        # when its own queue is the one name asked).
        self.queues_asked: set[str] = set()

    @property
    def view(self) -> FleetView:
        return self.build.view

    def of_teams(self, teams: tuple[Team, ...]) -> Context:
        """This view's context as if `teams` were its only teams (one team, or none): what a
        check of each team on its own, or of no team, reads (policy/checks.py). It shares what
        this one worked out, all of it per team or of no team; and the components, made of
        every team, are not in it."""
        part = Context(_TeamsOnly(self.build, teams))
        part._pools = self.pools
        part._landings = self._landings
        part._pod_problems = self._pod_problems
        part._reserved = self.reserved_namespaces()
        part._clashes = self.clashes()
        return part

    @property
    def pools(self) -> Pools:
        """The view's pools and what each pod selection picks of them."""
        if self._pools is None:
            self._pools = Pools(self.view)
        return self._pools

    def landings(self, team: Team) -> list[Landing]:
        """Every pod template of the team that asks for devices, with the pools it may land on."""
        found = self._landings.get(team.name)
        if found is None:
            found = self._landings[team.name] = _landings(self.pools, self.build.team(team).pods)
        return found

    def pod_problems(self, team: Team) -> list[tuple[PodRef, Problem]]:
        """Every placement problem of the team's pods (the five POD checks read them)."""
        found = self._pod_problems.get(team.name)
        if found is None:
            pods = self.build.team(team).pods
            found = [(ref, p) for ref in pods for p in pod_problems(self.pools, ref.spec)]
            self._pod_problems[team.name] = found
        return found

    def clashes(self) -> list[Clash]:
        """The pairs of vendors whose selectors cannot tell them apart (RES001)."""
        if self._clashes is None:
            self._clashes = selector_clashes(self.view)
        return self._clashes

    def reserved_namespaces(self) -> dict[str, str]:
        """Namespaces no team may claim, with what owns them."""
        if self._reserved is None:
            self._reserved = _reserved_namespaces(self.view)
        return self._reserved

    def team_of_unit(self, unit: Unit) -> Team | None:
        """The team whose unit `unit` is (None for the platform's units)."""
        if not unit.name.startswith("team-"):
            return None
        if self._by_unit is None:
            units: dict[str, Team] = {}
            for t in self.view.teams:
                units.setdefault(f"team-{t.name}", t)
            self._by_unit = units
        return self._by_unit.get(unit.name)

    def team_of_queue(self, name: str) -> Team | None:
        """The team whose batch queue is named `name`."""
        if self._by_queue is None:
            self._by_queue = {queue_name(t): t for t in self.view.teams}
        self.queues_asked.add(name)
        return self._by_queue.get(name)

    def reads_alone(self, team: Team | None) -> bool:
        """Whether the last unit's rules (checks.run_rules) read no team's values but `team`'s
        (None: a unit of no team, which reads them all): they looked up no queue but the
        team's own."""
        return team is not None and self.queues_asked <= {queue_name(team)}

    def unit_problems(self, objs: list[Obj]) -> UnitProblems:
        """pod_problems of every pod template of one unit's objects, worked out once for the five
        placement rules: run_rules hands each rule the same list, and the context keeps the
        last."""
        if self._unit_problems is None or self._unit_problems[0] is not objs:
            pools = self.pools
            found = [
                (o, tpl, pod_problems(pools, tpl.spec)) for o in objs for tpl in pod_templates(o)
            ]
            self._unit_problems = (objs, found)
        return self._unit_problems[1]


class _TeamsOnly(Build):
    """A view's build seen through the same view holding only `teams`: each team's build and
    workload model are the whole build's (each is a function of its team and of the view's data
    that is not a team's), and its components, which every team makes, are refused."""

    def __init__(self, whole: Build, teams: tuple[Team, ...]) -> None:
        self._whole = whole
        self._view = dataclasses.replace(whole.view, teams=teams)  # what Build.view gives
        # The workload model of the part's view (its `view` holds the part's teams alone),
        # sharing the teams the whole's has resolved: each is a function of its team and of the
        # view's data that is not a team's.
        self._workloads = Workloads(self._view)
        self._workloads._teams = whole.workloads._teams

    def team(self, team: Team) -> TeamBuild:
        return self._whole.team(team)

    @property
    def components(self) -> tuple[Component, ...]:
        raise TypeError("a check of each team on its own reads no component: make it WHOLE")


def _landings(pools: Pools, pods: list[PodRef]) -> list[Landing]:
    view = pools.view
    out = []
    for ref in pods:
        limits: dict[str, Any] = {}
        for container in ref.spec.get("containers") or []:
            limits.update((container.get("resources") or {}).get("limits") or {})
        found: dict[str, tuple[Vendor, int, list[Pool]]] = {}
        dra = {v.id: n for v, _, n in claimed(view, ref.spec).values()}
        for vendor, pool in pools.picked(ref.spec):
            devices = parse_quantity(dra.get(vendor.id, limits.get(vendor.resource_name, 0)))
            if devices and devices.denominator == 1:
                found.setdefault(vendor.id, (vendor, int(devices), []))[2].append(pool)
        out += [Landing(ref, v, n, tuple(pools)) for v, n, pools in found.values()]
    return out


def _reserved_namespaces(view: FleetView) -> dict[str, str]:
    out = dict(SYSTEM_NAMESPACES)
    out.setdefault(view.fleet.argocd_namespace, "Argo CD")
    out.setdefault(settings(view).namespace, "the fleet's monitoring")
    for vendor in view.vendors:
        out.setdefault(vendor.device_plugin.namespace, f"{vendor.id}'s device plugin")
        installed = vendor.exporter.get("namespace")  # an exporter installed another way
        if installed:
            out.setdefault(installed, f"{vendor.id}'s exporter")
    if view.vendors:
        out.setdefault(exporter_namespace(view), "the rendered exporters")
    return out
