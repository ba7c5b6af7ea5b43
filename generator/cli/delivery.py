"""`init`, `show`, `diff` and `publish`: a new fleet repository, the built manifests, what
changes, and the GitOps repository."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.cli.options import (
    EXIT_FINDINGS,
    EXIT_OK,
    cache_folder,
    echo_findings,
    guarded,
    invocation,
    values_option,
)
from generator.commands.diff import DiffOptions
from generator.commands.diff import diff as run_diff
from generator.commands.publish import PublishCommand
from generator.commands.publish import publish as run_publish
from generator.delivery import fleetinit
from generator.delivery import publish as publishing
from generator.delivery.show import show as run_show
from generator.reporters import diff as diffreport


@click.command()
@values_option
@click.option(
    "--env",
    required=True,
    help="The environment whose units to show; of an environment with clusters, one cluster "
    "(prod/main).",
)
@click.option("--unit", help="Only this unit (for example team-ml-team); default: every unit.")
@guarded
def show(values_dir: Path, env: str, unit: str | None) -> int:
    """Print the manifests exactly as kustomize builds them from a fresh render of the values
    (one unit, or every unit of the environment or cluster as one YAML stream), never several
    clusters' in one. Pipe it to `kubectl diff -f -` to compare with that cluster."""

    shown = run_show(values_dir, env, unit)
    echo_findings(shown.findings)
    click.echo(shown.text, nl=False)
    return EXIT_OK


@click.command()
@values_option
@click.argument("environments", nargs=-1, metavar="[OLD_ENV NEW_ENV]")
@click.option(
    "--base",
    metavar="REF",
    help="Compare the working tree with this git ref (branch, tag or commit) instead of two "
    "environments.",
)
@click.option("--env", help="With --base: only this environment.")
@click.option(
    "--output",
    "output_format",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=4096),
    default=1024 * 1024,
    show_default=True,
    help="Markdown: shorten to fit (GitHub: 1 MiB job summary, 65536 for a comment).",
)
@click.option("--exit-code", is_flag=True, help="Exit 1 when anything changed.")
@guarded
def diff(
    values_dir: Path,
    environments: tuple[str, ...],
    base: str | None,
    env: str | None,
    output_format: str,
    max_bytes: int,
    exit_code: bool,
) -> int:
    """What changes in the built manifests, per environment, unit and object, with field-level
    changes and risky changes flagged: between two environments (`diff staging prod`), or
    between a git ref and the working tree (`diff --base main`)."""

    result = run_diff(DiffOptions(values_dir, environments, base, env))
    echo_findings(result.findings)
    stdout = sys.stdout
    if output_format == "json":
        diffreport.as_json(result, stdout)
    elif output_format == "markdown":
        stdout.write(diffreport.markdown(result, max_bytes, invocation().program))
    else:
        diffreport.text(result, stdout)
    return EXIT_FINDINGS if exit_code and result.objects else EXIT_OK


@click.command()
@values_option
@click.option(
    "--repo", required=True, help="The GitOps repository: a path or a URL git can push to."
)
@click.option("--branch", required=True, help="The branch to commit to (created if missing).")
@click.option(
    "--path",
    "repo_path",
    help="Folder of the repository that holds base/ and overlays/. Default: git.path of "
    "values/fleet.yaml (the Argo CD Applications look there).",
)
@click.option("--message", help="Subject line of the commit (the body names source and units).")
@click.option(
    "--allow-delete",
    is_flag=True,
    help="Publish even when a unit loses more than --max-delete-share of its objects, or a "
    "Namespace is deleted.",
)
@click.option(
    "--max-delete-share",
    type=click.FloatRange(0.0, 1.0),
    default=0.5,
    show_default=True,
    help="Share of a unit's objects a publish may delete without --allow-delete.",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 20),
    default=3,
    show_default=True,
    help="Times to render onto the new head when the branch moved during the publish.",
)
@click.option("--no-cache", is_flag=True, help="Run every validate tool on every unit.")
@guarded
def publish(
    values_dir: Path,
    repo: str,
    branch: str,
    repo_path: str | None,
    message: str | None,
    allow_delete: bool,
    max_delete_share: float,
    retries: int,
    no_cache: bool,
) -> int:
    """Render and validate, then commit the rendered tree to BRANCH of the GitOps repository and
    push it: one commit naming the source commit and the changed units, none when the branch
    already has this render, nothing pushed when a check fails."""

    cache = None if no_cache else cache_folder(values_dir)
    opts = publishing.PublishOptions(
        values_dir,
        repo,
        branch,
        repo_path,
        message,
        allow_delete,
        max_delete_share,
        retries,
        invocation().program,
    )
    result = run_publish(PublishCommand(opts, cache))
    echo_findings(result.findings)
    for note in result.notes:
        click.echo(note, err=True)
    if result.commit is None:
        click.echo(f"publish: {branch} of {repo} already has the render of {result.source[:12]}")
        return EXIT_OK
    click.echo(
        f"publish: pushed {result.commit[:12]} to {branch} of {repo}: render of "
        f"{result.source[:12]}, {len(result.units)} units changed"
    )
    return EXIT_OK


@click.command()
@click.argument("dest", type=click.Path(path_type=Path, file_okay=False))
@click.option("--name", help="The fleet's name (default: the folder's, as a DNS label).")
@click.option(
    "--repo-url",
    help="The Git repository Argo CD syncs the rendered tree from (fleet.yaml git.repoURL; "
    "default: a placeholder to replace).",
)
@click.option(
    "--requirement",
    help="The pip requirement that pins accel-gitops in CI and pre-commit "
    "(default: this version; a wheel's path or URL works too).",
)
@click.option(
    "--ci",
    type=click.Choice(sorted(fleetinit.CI_FOLDERS)),
    default=fleetinit.DEFAULT_CI,
    show_default=True,
    help="The forge whose CI to write: GitHub's workflows (.github/workflows/) or GitLab's "
    "pipeline (.gitlab-ci.yml), doing the same jobs.",
)
@guarded
def init(
    dest: Path, name: str | None, repo_url: str | None, requirement: str | None, ci: str
) -> int:
    """Start a fleet repository in DEST: values for one vendor and one team, schemas for
    editors, .gitignore, pre-commit, CI (GitHub or GitLab) and a README (nothing is
    overwritten)."""
    fleet = name or fleetinit.default_name(dest)
    spec = fleetinit.Scaffold(
        dest=dest,
        name=fleet,
        repo_url=repo_url or f"https://git.example.com/{fleet}.git",
        requirement=requirement or fleetinit.default_requirement(),
        ci=ci,
    )
    written = fleetinit.init(spec)
    command = invocation().program.command
    click.echo(f"init: wrote {len(written)} files in {dest}. Next:")
    for step in (
        f"cd {dest}",
        command("render") + "      # base/ and overlays/ from values/",
        command("validate") + "    # every check (`" + command("tools install") + "` first)",
        "git add -A && git commit -m 'start the fleet'",
    ):
        click.echo(f"  {step}")
    return EXIT_OK
