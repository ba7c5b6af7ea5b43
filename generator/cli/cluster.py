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
    output_option,
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
@output_option(
    "text: the tables per environment, then the findings; json: one document; github: the "
    "tables, then the findings as workflow annotations; junit: the findings as JUnit XML."
)
@click.option(
    "--keep",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep each control plane's data and logs in this folder, one subfolder per Kubernetes "
    "minor (for debugging).",
)
@click.option(
    "--argocd/--no-argocd",
    default=True,
    show_default=True,
    help="Also sync each environment through the real Argo CD (a minute or so per cluster); "
    "without it, the run says that Argo CD did not run (SIM011).",
)
@click.option(
    "--monitoring/--no-monitoring",
    default=True,
    show_default=True,
    help="Also run the Prometheus Operator, Prometheus and kube-state-metrics over each "
    "environment and check every series the dashboard and alerts read; without it, the run says "
    "that the monitoring did not run (SIM011).",
)
@click.option(
    "--phases",
    is_flag=True,
    help="Once each environment has settled, walk every migrating service through its phases "
    "(validate, dual-run, shift-10/50/90 and its own, primary-new, fallback) and show each "
    "track in its cluster at each phase; a phase whose pods do not fit is an error (SIM007).",
)
@guarded
def simulate(
    values_dir: Path,
    env: str | None,
    output_format: str,
    keep: Path | None,
    argocd: bool,
    monitoring: bool,
    phases: bool,
) -> int:
    """Apply the fleet to a local control plane with simulated nodes (KWOK) and the real
    scheduler, controllers, quota and nfd-master, then sync it through the real Argo CD; report
    where everything lands and what Argo CD did; 1 on any mismatch (docs/simulation.md)."""
    opts = SimulateOptions(values_dir, env, keep, argocd, monitoring, phases)
    result = run_simulate(opts, ensure_control_plane)
    simreport.write(result, output_format, sys.stdout)
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
@output_option()
@guarded
def preflight(
    values_dir: Path,
    env: str | None,
    kubeconfig: Path,
    kube_context: str | None,
    output_format: str,
) -> int:
    """Read-only: does the cluster of --kubeconfig have what the values say the site provides
    (served APIs, nfd-master and nfd-worker, the Prometheus that loads the fleet's monitoring,
    the pools' nodes)? docs/platform.md; 1 on any error."""
    opts = PreflightOptions(values_dir, kubeconfig, env, kube_context)
    result = run_preflight(opts, ensure_control_plane)
    stats: dict[str, object] = {"environment": result.env, "server": result.version}
    report = reporter.Report("preflight", result.findings, stats)
    reporter.FORMATS[output_format](report, sys.stdout)
    return EXIT_FINDINGS if report.errors else EXIT_OK
