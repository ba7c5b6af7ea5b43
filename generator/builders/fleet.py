"""Every builder, in order, and the components of a fleet view.

A new capability (monitoring, workloads, ...) is a new module in builders/ plus one line in
BUILDERS.
"""

from __future__ import annotations

from collections.abc import Callable

from generator.builders import device_plugins, node_config, scheduling, teams, workloads
from generator.builders.monitoring import component as monitoring
from generator.values.model import FleetView
from generator.vocab.units import Component

Builder = Callable[[FleetView], list[Component]]

BUILDERS: tuple[Builder, ...] = (
    node_config.build,
    device_plugins.build,
    monitoring.build,
    teams.build,
    workloads.build,
    scheduling.build,
)


def build_all(view: FleetView) -> list[Component]:
    """Every component of the view, built once per view (the NAME008 check and the layout read
    the same components; callers must not change them)."""
    key = "builders.build_all"
    if key not in view.memo:
        out: list[Component] = []
        for builder in BUILDERS:
            out.extend(builder(view))
        view.memo[key] = out
    built: list[Component] = view.memo[key]
    return list(built)
