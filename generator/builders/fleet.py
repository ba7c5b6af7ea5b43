"""Every builder, in order, and the build of a fleet view.

A new capability (monitoring, workloads, ...) is a new module in builders/ plus one line in
BUILDERS.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from generator.builders import (
    device_plugins,
    node_config,
    scheduling,
    security,
    teams,
    workloads,
)
from generator.builders.build import Parts, PodRef, TeamBuild
from generator.builders.monitoring import component as monitoring
from generator.values.model import FleetView, Team, Values
from generator.vocab.units import Component
from generator.workloads.model import Workloads

Builder = Callable[[Parts], list[Component]]


def of_view(build: Callable[[FleetView], list[Component]]) -> Builder:
    """A builder that reads the view alone."""
    return lambda parts: build(parts.view)


BUILDERS: tuple[Builder, ...] = (
    of_view(node_config.build),
    of_view(device_plugins.build),
    of_view(monitoring.build),
    of_view(teams.build),
    of_view(security.build),
    workloads.build,  # each team's workload objects, made once by the build
    scheduling.build,  # the queues and the chart values that read the workload model
)


class Build:
    """What the builders make of one view: the workload model of its teams, each team's workload
    objects and pod templates, and every component, each made once when first asked for.

    Render makes one per view and hands it on: the checks, `plan`, the report and `simulate` read
    the objects that are deployed, never a second build of them. What it holds is shared: nobody
    changes it. `components` raises MonitoringError when the exporter facts cannot give the
    unified series (MON001 says which), as building them does.
    """

    def __init__(self, view: FleetView) -> None:
        self._view = view
        self._workloads = Workloads(view)
        self._teams: dict[str, TeamBuild] = {}
        self._components: tuple[Component, ...] | None = None
        self._remember: Callable[[tuple[Component, ...]], None] | None = None

    def recall(
        self,
        components: tuple[Component, ...] | None,
        remember: Callable[[tuple[Component, ...]], None] | None = None,
    ) -> None:
        """The components an earlier run made of the same view (render/buildmemo.py), or None;
        `remember` is handed them when made here, before anyone reads them."""
        if components is not None:
            self._components = components
        self._remember = remember

    @property
    def view(self) -> FleetView:
        return self._view

    @property
    def workloads(self) -> Workloads:
        return self._workloads

    def team(self, team: Team) -> TeamBuild:
        """The team's workload objects and their pod templates."""
        found = self._teams.get(team.name)
        if found is None:
            found = self._teams[team.name] = workloads.team_build(self._workloads, team)
        return found

    def pods(self) -> Iterator[PodRef]:
        """Every pod template of the view's workloads, team by team."""
        for team in self._view.teams:
            yield from self.team(team).pods

    @property
    def components(self) -> tuple[Component, ...]:
        if self._components is None:
            self._components = tuple(c for builder in BUILDERS for c in builder(self))
            if self._remember is not None:
                self._remember(self._components)
        return self._components


def build_values(values: Values) -> dict[str, Build]:
    """A build of the base layer, of every cluster view and of every environment's hub, by
    layer key (FleetView.key). Each part is made when first read: a hub's (the view of an
    environment with clusters, where only its argocd unit comes from) only when a rule reads
    it."""
    views = (values.base, *values.envs.values(), *values.hubs.values())
    return {view.key: Build(view) for view in {v.key: v for v in views}.values()}
