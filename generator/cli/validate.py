"""`validate`: every check on exactly what Argo CD will apply (and `--dry-run=server`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    cache_folder,
    ensure_control_plane,
    guarded,
    invocation,
    output_option,
    values_option,
)
from generator.commands.validate import DryRun, ValidateCommand, ValidateOutcome
from generator.commands.validate import validate as run_validate
from generator.errors import UsageError
from generator.reporters import findings as reporter
from generator.validate import shard as shards
from generator.validate.progress import Progress, progress_stream
from generator.validate.run import ValidateOptions, skippable
from generator.validate.shard import parse as parse_shard


@click.command()
@values_option
@click.option("--env", help="Validate only this environment's units.")
@output_option()
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where tool results are cached per unit. Default: .cache/validate beside the values tree.",
)
@click.option("--no-cache", is_flag=True, help="Run every tool on every unit.")
@click.option(
    "--jobs", type=click.IntRange(min=1), help="Units built at once. Default: the CPU count."
)
@click.option(
    "--committed",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where base/ and overlays/ are committed: what the tools check and what is compared "
    "with a fresh render. Default: the folder holding the values tree.",
)
@click.option(
    "--no-drift",
    is_flag=True,
    help="Do not compare the committed output with a fresh render (the tools still check it).",
)
@click.option(
    "--shard",
    metavar="K/N",
    help="Check only shard K of N of the units (stable by unit name); join the shards' "
    "`--output json` reports with --merge.",
)
@click.option(
    "--merge",
    "merge_reports",
    is_flag=True,
    help="Join the JSON reports of `validate --shard K/N` given as REPORTS into one report.",
)
@click.option(
    "--matrix",
    metavar="RUNNERS",
    help="Validate nothing: print the --shard argument of each CI runner as a JSON list, for "
    "RUNNERS runners or, with 'auto', by the committed units (docs/validate.md); [] means one "
    "runner, unsharded.",
)
@click.option(
    "--quiet", is_flag=True, help="No progress line on stderr (shown only on a terminal anyway)."
)
@click.option(
    "--dry-run",
    "dry_run",
    type=click.Choice(["server"]),
    help="Also server-side apply every unit with dry-run (docs/simulation.md): on a local "
    "control plane (default, or --local-apiserver) or on the cluster of --kubeconfig.",
)
@click.option("--local-apiserver", is_flag=True, help="Dry-run on a throwaway local control plane.")
@click.option(
    "--kubeconfig",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Dry-run on this cluster; it changes nothing there (every request is a dry-run).",
)
@click.option("--context", "kube_context", help="The kubeconfig context to use.")
@click.option(
    "--changed-since",
    metavar="REF",
    help="A pull request's base (e.g. origin/main): a finding about a sum (quotas over "
    "capacity) is reported at the values line the change made since REF, when it made one.",
)
@click.option(
    "--skip",
    "skip",
    multiple=True,
    metavar="STAGE",
    help=f"Do not run this stage ({', '.join(skippable())}; repeat it or give a comma list): its "
    "tools need not be built, and the report says it did not run.",
)
@click.argument("reports", nargs=-1, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@guarded
def validate(
    values_dir: Path,
    env: str | None,
    output_format: str,
    cache_dir: Path | None,
    no_cache: bool,
    jobs: int | None,
    committed: Path | None,
    no_drift: bool,
    shard: str | None,
    merge_reports: bool,
    matrix: str | None,
    quiet: bool,
    dry_run: str | None,
    local_apiserver: bool,
    kubeconfig: Path | None,
    kube_context: str | None,
    changed_since: str | None,
    skip: tuple[str, ...],
    reports: tuple[Path, ...],
) -> int:
    """Validate the values and exactly what Argo CD will apply: kustomize, kubeconform, promtool
    and the fleet policy rules on every committed unit, and the committed output against a fresh
    render of the values, in one report. With --dry-run=server, the API server checks every
    object too."""

    if matrix is not None:
        if shard or merge_reports or reports:
            raise UsageError("--matrix plans the shards: it takes no --shard, --merge or reports")
        home = committed if committed is not None else values_dir.resolve().parent
        count = shards.runners(matrix, shards.committed_unit_count(home, env))
        click.echo(json.dumps(shards.matrix(count)))
        return EXIT_OK
    if merge_reports or reports:
        if not (merge_reports and reports):
            raise UsageError("report files are read only with --merge, and --merge needs them")
        rep = reporter.merge(reporter.read_reports(reports))
        if output_format != "json":
            rep.stats.pop("timings", None)
        reporter.FORMATS[output_format](rep, sys.stdout)
        return EXIT_FINDINGS if rep.errors else EXIT_OK
    if dry_run is None and (local_apiserver or kubeconfig or kube_context):
        raise UsageError("--local-apiserver, --kubeconfig and --context need --dry-run=server")
    if local_apiserver and kubeconfig:
        raise UsageError("--local-apiserver and --kubeconfig exclude each other")
    if not no_cache and cache_dir is None:
        cache_dir = cache_folder(values_dir)
    cmd = ValidateCommand(
        ValidateOptions(
            values_dir,
            env,
            None if no_cache else cache_dir,
            jobs or 0,
            committed,
            not no_drift,
            shard=parse_shard(shard) if shard else None,
            program=invocation().program,
            skip=frozenset(name.strip() for given in skip for name in given.split(",")),
        ),
        dry_run=DryRun(kubeconfig, kube_context) if dry_run else None,
        changed_since=changed_since,
    )
    done = run_validate(cmd, Progress(progress_stream(quiet)), ensure_control_plane)
    return report_validate(done, output_format)


def report_validate(done: ValidateOutcome, output_format: str) -> int:
    """Print validate's report in `output_format` (render --validate's too): its exit code."""
    stats = dict(done.stats)
    if output_format == "json":
        stats["timings"] = done.result.timings
    if done.result.shard is not None:
        stats["shard"] = {**done.result.shard, "checked": done.result.checked}
    rep = reporter.Report("validate", done.findings, stats, done.result.checked)
    reporter.FORMATS[output_format](rep, sys.stdout)
    return EXIT_FINDINGS if rep.errors else EXIT_OK
