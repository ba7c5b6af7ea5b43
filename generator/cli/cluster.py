"""`simulate`: the fleet on a local control plane with simulated nodes; `preflight`: a live
cluster against what the values say the site provides."""

from __future__ import annotations

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
from generator.commands.preflight import PreflightOptions
from generator.commands.preflight import preflight as run_preflight
from generator.commands.simulate import SimulateOptions
from generator.commands.simulate import simulate as run_simulate
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
    result = run_simulate(SimulateOptions(values_dir, env, keep), ensure_control_plane)
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


@click.command()
@values_option
@click.option("--env", help="The environment whose cluster this is (needed with several).")
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="The cluster to read (nothing is written: every request is a GET).",
)
@click.option("--context", "kube_context", help="The kubeconfig context to use.")
@click.option(
    "--output", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@guarded
def preflight(
    values_dir: Path, env: str | None, kubeconfig: Path, kube_context: str | None, fmt: str
) -> int:
    """Read-only: does the cluster of --kubeconfig have what the values say the site provides
    (served APIs, nfd-master and nfd-worker, the Prometheus that loads the fleet's monitoring,
    the pools' nodes)? docs/platform.md; 1 on any error."""
    opts = PreflightOptions(values_dir, kubeconfig, env, kube_context)
    result = run_preflight(opts, ensure_control_plane)
    stats: dict[str, object] = {"environment": result.env, "server": result.version}
    report = reporter.Report("preflight", result.findings, stats)
    if fmt == "json":
        reporter.as_json(report, sys.stdout)
    else:
        reporter.text(report, sys.stdout)
    return EXIT_FINDINGS if any(f.severity.value == "error" for f in result.findings) else EXIT_OK
