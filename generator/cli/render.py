"""`render` (values to the committed tree; --check, --validate) and `check` (the values alone)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    cache_folder,
    echo_findings,
    ensure_control_plane,
    guarded,
    invocation,
    output_option,
    values_option,
)
from generator.cli.validate import report_validate
from generator.commands.render import validate_render
from generator.errors import FindingsError, UsageError
from generator.render import stage
from generator.render.writer import interrupted
from generator.reporters import findings as reporter
from generator.reporters.render import drift_text, rendered_text
from generator.validate.progress import Progress, progress_stream


@click.command()
@values_option
@click.option("--env", help="Render only this environment's overlays (base is always whole).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write OUT/base and OUT/overlays. Default: the folder holding the values tree.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 if the committed output differs from a fresh render.",
)
@click.option(
    "--validate",
    "then_validate",
    is_flag=True,
    help="Then validate what was written, as `validate` does, reusing this render's values "
    "stage (one process, the values read and checked once).",
)
@guarded
def render(
    values_dir: Path, env: str | None, out_dir: Path | None, check: bool, then_validate: bool
) -> int:
    """Render kustomize bases and overlays from the values tree."""
    program = invocation().program
    if check and then_validate:
        raise UsageError(
            "--check and --validate exclude each other: validate already compares the "
            f"committed output with a fresh render (DRIFT001); run `{program.command('validate')}`"
        )
    out = out_dir if out_dir is not None else values_dir.resolve().parent
    if check:  # writes nothing, so an interrupted render is reported, not rolled back
        left = interrupted(out)
        if left:
            click.echo(
                f"render --check: an interrupted render left {out} half-changed "
                f"({', '.join(left)}); run `{program.command('render')}` to roll it back and "
                "render again"
            )
            return EXIT_FINDINGS
    else:
        recovered = stage.recover_output(out)
        if recovered:
            click.echo(f"render: {recovered}", err=True)
    opts = stage.RenderOptions(values_dir, out, env, check, cache_folder(values_dir))
    result = stage.render(opts)
    if not then_validate:  # else validate's report has them
        echo_findings(result.findings)
    if result.drift is not None:
        click.echo(drift_text(result.drift, out, values_dir, program), nl=False)
        return EXIT_OK if result.drift.clean else EXIT_FINDINGS
    click.echo(rendered_text(result.rendered, env, out), nl=False)
    if not then_validate:
        return EXIT_OK
    # what was rendered is printed before validate runs (minutes on a cold cache)
    progress = Progress(progress_stream(False))
    done = validate_render(opts, result, program, progress, ensure_control_plane)
    return report_validate(done, "text")


@click.command()
@values_option
@output_option()
@guarded
def check(values_dir: Path, output_format: str) -> int:
    """Check the values alone: safe YAML, JSON Schema, layering, references and every fleet and
    workload check. No external tool runs (a pre-commit hook); validate does this and more."""
    try:
        # validate's cache: a hook after one team's edit parses one file and checks the views
        # that hold it (at 20 clusters x 500 teams, seconds saved on every commit).
        findings = stage.load_and_check(values_dir, cache_folder(values_dir)).findings
    except FindingsError as exc:
        findings = exc.findings
    rep = reporter.Report("check", findings)
    reporter.FORMATS[output_format](rep, sys.stdout)
    return EXIT_FINDINGS if rep.errors else EXIT_OK
