"""`simulate`'s core: the fleet on a local control plane with simulated nodes (its tools built
first when missing)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from generator.cluster import plane as fleet_plane
from generator.commands import EnsureTools
from generator.controlplane import launcher
from generator.simulate import run as sim
from generator.simulate.result import SimulationResult
from generator.toolchain import registry


@dataclass(frozen=True)
class SimulateOptions:
    values_dir: Path
    env: str | None = None  # None: every environment, in turn
    keep: Path | None = None  # keep the control plane's data and logs here
    argocd: bool = True  # also sync through the real Argo CD
    monitoring: bool = True  # also run the site's monitoring over what it built
    phases: bool = False  # walk each migrating service through its phases, once settled


def simulate(opts: SimulateOptions, ensure: EnsureTools) -> SimulationResult:
    argocd = registry.ARGOCD_TOOLS if opts.argocd else ()
    watch = registry.MONITORING_TOOLS if opts.monitoring else ()

    def plane(minor: str) -> contextlib.AbstractContextManager[launcher.ControlPlane]:
        # The tools of the plane of each cluster's minor, built when the first cluster of that
        # minor needs them (another minor's plane takes minutes to build).
        ensure("simulate", (*registry.control_plane_tools(minor), *argocd, *watch))
        keep = opts.keep / minor if opts.keep is not None else None
        return fleet_plane.control_plane(keep_dir=keep, minor=minor)

    return sim.simulate(
        opts.values_dir,
        opts.env,
        plane,
        argocd=opts.argocd,
        watch_metrics=opts.monitoring,
        phases=opts.phases,
    )
