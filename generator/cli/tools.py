"""`tools install`, `doctor`, `schema` and `rules`: the external tools, the values schemas,
every code."""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator.cli.options import (
    EXIT_ERROR,
    EXIT_OK,
    guarded,
    invocation,
)
from generator.errors import GeneratorError
from generator.reporters.doctor import chart_lines, doctor_lines
from generator.reporters.rules import rules_table
from generator.toolchain import doctor as tool_doctor
from generator.toolchain import install as tool_install
from generator.toolchain import registry
from generator.toolchain import schemas as tool_schemas
from generator.values import schema as values_schema
from generator.vocab import addons


@click.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write <kind>.schema.json files here instead of printing them.",
)
@click.option(
    "--kind",
    type=click.Choice(values_schema.SCHEMA_KINDS),
    help="Print only this kind's schema.",
)
@guarded
def schema(out_dir: Path | None, kind: str | None) -> int:
    """Write (--out: one <kind>.schema.json per kind) or print the JSON Schemas of the values
    files, and of the traffic file render writes. Printed without --kind, they are one JSON
    object keyed by kind."""
    kinds = [kind] if kind else list(values_schema.SCHEMA_KINDS)
    if out_dir is None:
        if kind:
            click.echo(values_schema.schema_text(kind), nl=False)
        else:
            every = {k: values_schema.SCHEMAS[k] for k in kinds}
            click.echo(json.dumps(every, indent=2, sort_keys=True))
        return EXIT_OK
    out_dir.mkdir(parents=True, exist_ok=True)
    for k in kinds:
        (out_dir / f"{k}.schema.json").write_text(values_schema.schema_text(k), encoding="utf-8")
    click.echo(f"wrote {len(kinds)} schema(s) to {out_dir}")
    return EXIT_OK


@click.command()
@guarded
def rules() -> int:
    """List every code the program can emit: where it runs, its severity, what it catches
    (Markdown)."""

    click.echo(rules_table(), nl=False)
    return EXIT_OK


@click.command()
@guarded
def doctor() -> int:
    """List the external tools: version, where each came from, how to install a missing one."""
    schemas = registry.tools_dir() / "schemas"
    program = invocation().program
    lines, ok = doctor_lines(
        tool_doctor.doctor(program),
        tool_schemas.k8s_schema_versions(),
        (schemas / "crds" / "index.json").is_file(),
        schemas,
        registry.install_command(program),
    )
    for line in [*lines, *chart_lines(addons.ADDONS)]:
        click.echo(line)
    return EXIT_OK if ok else EXIT_ERROR


@click.group()
def tools() -> None:
    """The pinned external tools (kustomize, kubeconform, promtool, the control plane...)."""


@tools.command("install")
@click.option(
    "--only",
    "only",
    default="validate",
    show_default=True,
    help="Comma-separated tools or sets to build: validate (what render, validate, diff, report "
    "and publish run), cluster (simulate's control plane), dev (this project's tests), all.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Go modules built side by side.",
)
@guarded
def install(only: str, jobs: int) -> int:
    """Build the pinned tools from the Go module proxy into the tools dir (doctor says where);
    each step is skipped while its inputs' content is unchanged."""
    names = [n.strip() for n in only.split(",") if n.strip()]
    try:
        steps = tool_install.resolve(names)
    except ValueError as exc:
        raise GeneratorError(str(exc)) from None
    built = tool_install.install(steps, jobs=jobs, say=lambda line: click.echo(line, err=True))
    fresh = len(steps) - len(built)
    click.echo(f"tools: {len(built)} built, {fresh} already up to date, in {registry.tools_dir()}")
    return EXIT_OK
