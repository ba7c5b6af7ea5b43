"""`plan`: migration phases, replicas, weights and devices against quota and capacity."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator import plan as planning
from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    guarded,
    output_option,
    values_option,
)
from generator.reporters import plan as planreport


@click.command()
@values_option
@click.option("--env", help="Only this environment.")
@output_option(
    "text: the tables (the findings on stderr); json: the plan as one document; github: the "
    "tables, then the findings as workflow annotations; junit: the findings as JUnit XML."
)
@guarded
def plan(values_dir: Path, env: str | None, output_format: str) -> int:
    """Show phases, replicas, weights and devices vs quota and capacity; 1 if it does not fit."""

    result = planning.plan(values_dir, env)
    planreport.write(result, output_format, sys.stdout, sys.stderr)
    return EXIT_OK if result.fits else EXIT_FINDINGS
