"""`report`: the fleet on one page."""

from __future__ import annotations

from pathlib import Path

import click

from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    guarded,
    invocation,
    values_option,
)
from generator.errors import UsageError
from generator.fleetreport.report import ReportOptions
from generator.fleetreport.report import report as make_report

FORMATS = ["html", "markdown"]


@click.command(
    "report",
    short_help="The fleet on one page, with charts (HTML or Markdown).",
)
@values_option
@click.option("--env", help="Only this environment.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to this file (all or nothing). Default: print it.",
)
@click.option(
    "--output",
    "output_format",
    type=click.Choice(FORMATS),
    help="html: one self-contained page with charts; markdown: the same tables for a pull "
    "request. Default: markdown when --out ends in .md, else html.",
)
# --output's old name: fleet repositories' workflows written by an older `init` still pass it.
@click.option("--format", "old_format", type=click.Choice(FORMATS), hidden=True)
@click.option(
    "--link-base",
    metavar="URL",
    help="Link findings to URL/<file>#L<line> (e.g. the forge's view of the values commit). "
    "Default: links relative to the report's folder (HTML), plain file:line (Markdown).",
)
@click.option(
    "--baseline",
    default="nvidia",
    show_default=True,
    help="Vendor whose costWeight every device is priced at for the saving.",
)
@guarded
def report_command(
    values_dir: Path,
    env: str | None,
    out: Path | None,
    output_format: str | None,
    old_format: str | None,
    link_base: str | None,
    baseline: str,
) -> int:
    """The fleet on one page: capacity vs. quotas, quota per team, cost weights, migrations and
    the findings; 1 if a check found an error (the report is written all the same)."""

    if old_format is not None:
        click.echo("report: --format is deprecated; use --output (the same formats)", err=True)
        if output_format is not None and output_format != old_format:
            raise UsageError("--format is the old name of --output: give one of them")
        output_format = old_format
    if output_format is None:
        output_format = "markdown" if out is not None and out.suffix == ".md" else "html"
    opts = ReportOptions(
        values_dir, env, out, output_format, link_base, baseline, invocation().program
    )
    result = make_report(opts)
    if out is None:
        click.echo(result.text, nl=False)
    else:
        click.echo(
            f"wrote {out} ({result.errors} error(s), {result.warnings} warning(s))", err=True
        )
    return EXIT_FINDINGS if result.errors else EXIT_OK
