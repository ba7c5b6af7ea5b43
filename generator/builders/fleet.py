"""Every builder, in order, and the build of a fleet view.

A new capability (monitoring, workloads, ...) is a new module in builders/ plus one line in
BUILDERS.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator

from generator.builders import (
    device_plugins,
    node_config,
    scheduling,
    security,
    teams,
    workloads,
)
from generator.builders.build import KeptTeams, Parts, PodRef, TeamBuild
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
        self._recalled: Callable[[], tuple[Component, ...] | None] | None = None
        self._remember: Callable[[tuple[Component, ...]], None] | None = None
        self._then: list[Callable[[tuple[Component, ...]], None]] = []
        self._as_made: tuple[Component, ...] | None = None
        # The view's digest when a cache knows it (render/buildmemo.py sets it): what the layout
        # keeps the view's units by (render/layoutmemo.py).
        self.digest: str | None = None
        # The team builds an earlier run made of the same teams in the same view but for its
        # teams (render/teammemo.py), when a cache keeps them.
        self.kept_teams: KeptTeams | None = None
        # Each unit's components as made, encoded once for the component memo and the layout's
        # (render/buildmemo.py unit_blobs), when a cache encodes them.
        self.encoded: dict[str, bytes] | None = None

    def recall(
        self,
        recalled: Callable[[], tuple[Component, ...] | None] | None,
        remember: Callable[[tuple[Component, ...]], None] | None = None,
    ) -> None:
        """How to read back the components an earlier run made of the same view (render/
        buildmemo.py; called when they are first asked for, None when it has none), or None;
        `remember` is handed them when made here, before anyone reads them."""
        self._recalled = recalled
        self._remember = remember

    def then(self, finish: Callable[[tuple[Component, ...]], None]) -> None:
        """Have `finish` complete the components: when they are made or read back, or now (on
        copies: `as_made` keeps them as made) when they were. The layout keeps the base's
        provenance on them so (render/layout.py), and lays out an unchanged view without
        reading them."""
        if self._components is None:
            self._then.append(finish)
            return
        if self._components is self._as_made:
            self._components = _copies(self._components)
        finish(self._components)

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
            kept = self.kept_teams
            found = kept.get(team) if kept is not None else None
            if found is None:
                found = workloads.team_build(self._workloads, team)
                if kept is not None:
                    kept.put(team, found)
            self._teams[team.name] = found
        return found

    def pods(self) -> Iterator[PodRef]:
        """Every pod template of the view's workloads, team by team."""
        for team in self._view.teams:
            yield from self.team(team).pods

    @property
    def components(self) -> tuple[Component, ...]:
        if self._components is None:
            made = self._recalled() if self._recalled is not None else None
            if made is None:
                made = tuple(c for builder in BUILDERS for c in builder(self))
                if self._remember is not None:
                    self._remember(made)
            self._as_made = self._components = made
            if self._then:
                self._components = _copies(made)
            for finish in self._then:
                finish(self._components)
            self._then = []
        return self._components

    @property
    def as_made(self) -> tuple[Component, ...]:
        """The components as the builders made them (or as read back), before what `then`
        changed of them: what a cache keeps, for a later run whose base may differ."""
        self.components  # noqa: B018 (made or read back when first asked for)
        assert self._as_made is not None
        return self._as_made


def _copies(comps: tuple[Component, ...]) -> tuple[Component, ...]:
    """Each component as a new one holding the same lists: what `then` replaces in a copy (a
    component's objects, by assignment) stays as made in the original."""
    return tuple(copy.copy(c) for c in comps)


def build_values(values: Values) -> dict[str, Build]:
    """A build of the base layer, of every cluster view and of every environment's hub, by
    layer key (FleetView.key). Each part is made when first read: a hub's (the view of an
    environment with clusters, where only its argocd unit comes from) only when a rule reads
    it."""
    views = (values.base, *values.envs.values(), *values.hubs.values())
    return {view.key: Build(view) for view in {v.key: v for v in views}.values()}
