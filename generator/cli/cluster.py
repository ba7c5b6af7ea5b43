"""`simulate`: the fleet on a local control plane with simulated nodes."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import click

from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    ensure_control_plane,
    guarded,
    values_option,
)
from generator.cluster import launcher
from generator.cluster import simulate as sim
from generator.reporters import findings as reporter
from generator.reporters import simulation as simreport


@click.command()
@values_option
@click.option("--env", help="Only this environment (default: every environment, in turn).")
@click.option(
    "--output", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--keep",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep the control plane's data and logs in this folder (for debugging).",
)
@guarded
def simulate(values_dir: Path, env: str | None, fmt: str, keep: Path | None) -> int:
    """Apply the fleet to a local control plane with simulated nodes (KWOK) and the real
    scheduler, controllers, quota and nfd-master; report where everything lands; 1 on any
    mismatch (docs/simulation.md)."""

    def plane() -> contextlib.AbstractContextManager[launcher.ControlPlane]:
        return launcher.local_control_plane(nfd=True, keep_dir=keep)

    ensure_control_plane("simulate")
    result = sim.simulate(values_dir, env, plane)
    out = sys.stdout
    stats: dict[str, object] = {"environments": len(result.envs)}
    if fmt == "json":
        stats.update(simreport.as_json(result))
        reporter.as_json(reporter.Report("simulate", result.findings, stats), out)
    else:
        for rep in result.envs:
            out.write(simreport.env_text(rep))
        reporter.text(reporter.Report("simulate", result.findings, stats), out)
    return EXIT_FINDINGS if result.errors else EXIT_OK
