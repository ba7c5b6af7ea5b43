"""`simulate`'s core: the fleet on a local control plane with simulated nodes (its tools built
first when missing)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from generator import toolchain
from generator.cluster import launcher
from generator.cluster import simulate as sim
from generator.cluster.simresult import SimulationResult
from generator.commands import EnsureTools


@dataclass(frozen=True)
class SimulateOptions:
    values_dir: Path
    env: str | None = None  # None: every environment, in turn
    keep: Path | None = None  # keep the control plane's data and logs here


def simulate(opts: SimulateOptions, ensure: EnsureTools) -> SimulationResult:
    def plane() -> contextlib.AbstractContextManager[launcher.ControlPlane]:
        return launcher.local_control_plane(nfd=True, keep_dir=opts.keep)

    ensure("simulate", toolchain.CONTROL_PLANE)
    return sim.simulate(opts.values_dir, opts.env, plane)
