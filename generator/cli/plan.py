"""`plan`: migration phases, replicas, weights and devices against quota and capacity."""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator import plan as planning
from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    echo_findings,
    guarded,
    values_option,
)


@click.command()
@values_option
@click.option("--env", help="Only this environment.")
@click.option(
    "--output", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@guarded
def plan(values_dir: Path, env: str | None, fmt: str) -> int:
    """Show phases, replicas, weights and devices vs quota and capacity; 1 if it does not fit."""

    result = planning.plan(values_dir, env)
    if fmt == "json":
        click.echo(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        echo_findings(result.findings)
        click.echo(planning.format_text(result), nl=False)
    return EXIT_OK if result.fits else EXIT_FINDINGS
