"""Command line: parse options, call the core, report, map outcomes to exit codes.

0 clean, 1 findings (or drift), 2 usage or internal error. Commands never print tracebacks for
bad input; an unexpected exception is an internal error (exit 2), shown in full with --debug.
"""

from __future__ import annotations

import functools
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from generator import __version__, toolchain
from generator.errors import Finding, FindingsError, GeneratorError, UsageError
from generator.errors import sorted_findings as sort_findings
from generator.render import stage as pipeline
from generator.reporters import findings as report
from generator.values import schema as schemadefs

if TYPE_CHECKING:  # validate is imported only by the commands that run it
    from generator.validate import ValidateResult

F = TypeVar("F", bound=Callable[..., int])

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _echo_findings(findings: list[Finding]) -> None:
    for finding in findings:
        click.echo(finding.format(), err=True)


def guarded(fn: F) -> F:
    """Run a command body; turn expected errors into messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        ctx = click.get_current_context()
        try:
            code = fn(*args, **kwargs)
        except FindingsError as exc:
            _echo_findings(exc.findings)
            summary = report.Report(str(ctx.info_name), exc.findings).summary()
            done = "nothing pushed" if ctx.info_name == "publish" else "nothing written"
            click.echo(f"{summary}; {done}", err=True)
            code = EXIT_FINDINGS
        except (UsageError, toolchain.ToolError) as exc:
            click.echo(f"error: {exc}", err=True)
            code = EXIT_ERROR
        except GeneratorError as exc:
            click.echo(f"error: {exc}", err=True)
            code = EXIT_ERROR
        except KeyboardInterrupt:
            code = 130
        except Exception as exc:  # a bug, not bad input
            if ctx.obj and ctx.obj.get("debug"):
                traceback.print_exc()
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True
            )
            code = EXIT_ERROR
        ctx.exit(code)

    return wrapper  # type: ignore[return-value]


def _beside(values_dir: Path) -> Path:
    """The folder holding the values tree, where caches go by default."""
    try:
        return values_dir.resolve().parent
    except (OSError, RuntimeError):  # a symbolic link loop: loading the values reports it
        return values_dir.absolute().parent


def _default_values() -> Path:
    return Path("values")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Render and validate GitOps manifests for mixed-vendor accelerator fleets."""
    ctx.obj = {"debug": debug}


values_option = click.option(
    "--values",
    "values_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=_default_values,
    show_default="values",
    help="The values tree (fleet.yaml, vendors/, teams/, environments/).",
)


@main.command()
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
    if check and then_validate:
        raise UsageError(
            "--check and --validate exclude each other: validate already compares the "
            "committed output with a fresh render (DRIFT001); run `render.py validate`"
        )
    out = out_dir if out_dir is not None else values_dir.resolve().parent
    recovered = pipeline.recover_output(out)
    if recovered:
        click.echo(f"render: {recovered}", err=True)
    # validate's default cache: files that passed their schema, the YAML text of each object.
    cache = _beside(values_dir) / ".cache" / "validate"
    result = pipeline.render(
        pipeline.RenderOptions(
            values_dir, out, env, check, cache / "values-schema.json", cache / "dump-cache.json"
        )
    )
    if not then_validate:  # else validate's report has them
        _echo_findings(result.findings)
    if result.drift is not None:
        drift = result.drift
        if drift.clean:
            click.echo(f"render --check: {out} is up to date with {values_dir}")
            return EXIT_OK
        for rel in drift.changed:
            click.echo(f"changed: {rel}")
            click.echo(drift.diffs[rel], nl=False)
        for rel in drift.missing:
            click.echo(f"missing: {rel} (a fresh render creates it)")
        for rel in drift.stale:
            click.echo(f"stale: {rel} (not rendered from the values; a fresh render removes it)")
        click.echo(
            f"render --check: {len(drift.changed)} changed, {len(drift.missing)} missing, "
            f"{len(drift.stale)} stale; run `python render.py render` and commit the result"
        )
        return EXIT_FINDINGS
    units = result.rendered.units
    envs = sorted({u.env for u in units if env in (None, u.env)})
    click.echo(
        f"rendered {len(result.rendered.bases)} bases and "
        f"{sum(1 for u in units if u.env in envs)} units for {', '.join(envs)} into {out}"
    )
    if not then_validate:
        return EXIT_OK
    from generator.validate import Prepared, ValidateOptions
    from generator.validate import validate as run_validate
    from generator.validate.progress import Progress, progress_stream

    assert result.values is not None  # a render that wrote its output has its values
    prepared = Prepared(result.values, tuple(result.findings), result.rendered)
    opts = ValidateOptions(values_dir, env, cache, committed=out, prepared=prepared)
    done = run_validate(opts, Progress(progress_stream(False)))
    return _print_validate(done, list(done.findings), _validate_stats(done), "text")


@main.command()
@click.option(
    "--out",
    "out_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write <kind>.schema.json files here instead of printing them.",
)
@click.option(
    "--kind", type=click.Choice(schemadefs.USER_KINDS), help="Print only this kind's schema."
)
@guarded
def schema(out_dir: Path | None, kind: str | None) -> int:
    """Write (--out: one <kind>.schema.json per kind) or print the JSON Schemas of the values
    files. Printed without --kind, they are one JSON object keyed by kind."""
    kinds = [kind] if kind else list(schemadefs.USER_KINDS)
    if out_dir is None:
        if kind:
            click.echo(schemadefs.schema_text(kind), nl=False)
        else:
            every = {k: schemadefs.SCHEMAS[k] for k in kinds}
            click.echo(json.dumps(every, indent=2, sort_keys=True))
        return EXIT_OK
    out_dir.mkdir(parents=True, exist_ok=True)
    for k in kinds:
        (out_dir / f"{k}.schema.json").write_text(schemadefs.schema_text(k), encoding="utf-8")
    click.echo(f"wrote {len(kinds)} schema(s) to {out_dir}")
    return EXIT_OK


# The findings report of `check` and `validate` (report.FORMATS: text, json, github, junit).
report_option = click.option(
    "--output",
    "output_format",
    type=click.Choice(sorted(report.FORMATS)),
    default="text",
    show_default=True,
    help="Report format.",
)


@main.command()
@values_option
@report_option
@guarded
def check(values_dir: Path, output_format: str) -> int:
    """Check the values alone: safe YAML, JSON Schema, layering, references and every fleet and
    workload check. No external tool runs (a pre-commit hook); validate does this and more."""
    try:
        _, findings = pipeline.load_and_check(values_dir)
    except FindingsError as exc:
        findings = exc.findings
    rep = report.Report("check", findings)
    report.FORMATS[output_format](rep, click.get_text_stream("stdout"))
    return EXIT_FINDINGS if rep.errors else EXIT_OK


@main.command()
@values_option
@click.option("--env", help="Validate only this environment's units.")
@report_option
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
    quiet: bool,
    dry_run: str | None,
    local_apiserver: bool,
    kubeconfig: Path | None,
    kube_context: str | None,
    reports: tuple[Path, ...],
) -> int:
    """Validate the values and exactly what Argo CD will apply: kustomize, kubeconform, promtool
    and the fleet policy rules on every committed unit, and the committed output against a fresh
    render of the values, in one report. With --dry-run=server, the API server checks every
    object too."""
    from generator.validate import ValidateOptions
    from generator.validate import validate as run_validate
    from generator.validate.progress import Progress, progress_stream
    from generator.validate.shard import parse as parse_shard

    if merge_reports or reports:
        if not (merge_reports and reports):
            raise UsageError("report files are read only with --merge, and --merge needs them")
        rep = report.merge(report.read_reports(reports))
        if output_format != "json":
            rep.stats.pop("timings", None)
        report.FORMATS[output_format](rep, click.get_text_stream("stdout"))
        return EXIT_FINDINGS if rep.errors else EXIT_OK
    if dry_run is None and (local_apiserver or kubeconfig or kube_context):
        raise UsageError("--local-apiserver, --kubeconfig and --context need --dry-run=server")
    if local_apiserver and kubeconfig:
        raise UsageError("--local-apiserver and --kubeconfig exclude each other")

    home = _beside(values_dir)
    if not no_cache and cache_dir is None:
        cache_dir = home / ".cache" / "validate"
    opts = ValidateOptions(
        values_dir,
        env,
        None if no_cache else cache_dir,
        jobs or 0,
        committed,
        not no_drift,
        shard=parse_shard(shard) if shard else None,
    )
    result = run_validate(opts, Progress(progress_stream(quiet)))
    stats = _validate_stats(result)
    findings = list(result.findings)
    if dry_run and not result.not_run:  # nothing to apply when the values do not render
        from generator.cluster import dryrun

        dry = dryrun.dry_run(values_dir, env, kubeconfig=kubeconfig, context=kube_context)
        findings = sort_findings(findings + dry.findings)
        stats["dry-run objects"] = dry.objects
        if dry.skipped:
            stats["dry-run skipped"] = dry.skipped
        result.timings.update({f"dry-run {k}": v for k, v in dry.timings.items()})
    return _print_validate(result, findings, stats, output_format)


def _validate_stats(result: ValidateResult) -> dict[str, object]:
    stats: dict[str, object] = {
        "units": result.units,
        "objects": result.objects,
        "cached units": result.cached_units,
    }
    if result.not_run:
        stats["not run"] = "; ".join(result.not_run)
    return stats


def _print_validate(
    result: ValidateResult, findings: list[Finding], stats: dict[str, object], output_format: str
) -> int:
    if output_format == "json":
        stats["timings"] = result.timings
    if result.shard is not None:
        stats["shard"] = {**result.shard, "checked": result.checked}
    rep = report.Report("validate", findings, stats, result.checked)
    report.FORMATS[output_format](rep, click.get_text_stream("stdout"))
    return EXIT_FINDINGS if rep.errors else EXIT_OK


@main.command()
@guarded
def rules() -> int:
    """List every policy check and rule: code, where it runs, what it catches (Markdown)."""
    from generator.policy import registry as policy

    click.echo(policy.rules_table(), nl=False)
    return EXIT_OK


@main.command()
@guarded
def doctor() -> int:
    """List the external tools: version, where each came from, how to install a missing one."""
    ok = True
    statuses = toolchain.doctor()
    width = max(len(st.name) for st in statuses) + 1  # one column, whatever the longest name
    for st in statuses:
        if st.path is None:
            ok = False
            click.echo(
                f"{st.name:{width}} MISSING  pinned {st.pinned or '-'}; install: {st.install_hint}"
            )
            continue
        state = "ok" if st.ok else "MISMATCH"
        ok = ok and st.ok
        pin = f" (pinned {st.pinned})" if st.pinned and not st.ok else ""
        click.echo(
            f"{st.name:{width}} {state:8} {st.version or '?'}{pin}  {st.path}  from {st.source}"
        )
    versions = toolchain.k8s_schema_versions()
    crds = (toolchain.tools_dir() / "schemas" / "crds" / "index.json").is_file()
    click.echo(
        f"{'schemas':{width}} {'ok' if versions else 'MISSING':8} Kubernetes "
        f"{versions[0] + '..' + versions[-1] if versions else '-'}; CRDs "
        f"{'present' if crds else 'missing'}"
        f"  {toolchain.tools_dir() / 'schemas'}"
    )
    ok = ok and bool(versions) and crds
    if not ok:
        click.echo(
            "some tools are missing or not at their pinned version: "
            f"run `{toolchain.INSTALL_COMMAND}`"
        )
    return EXIT_OK if ok else EXIT_ERROR


@main.command()
@values_option
@click.option("--env", help="Only this environment.")
@click.option(
    "--output", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@guarded
def plan(values_dir: Path, env: str | None, fmt: str) -> int:
    """Show phases, replicas, weights and devices vs quota and capacity; 1 if it does not fit."""
    from generator import plan as planning

    result = planning.plan(values_dir, env)
    if fmt == "json":
        click.echo(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        _echo_findings(result.findings)
        click.echo(planning.format_text(result), nl=False)
    return EXIT_OK if result.fits else EXIT_FINDINGS


@main.command()
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
    import contextlib

    from generator.cluster import launcher
    from generator.cluster import simulate as sim
    from generator.reporters import simulation as simreport

    def plane() -> contextlib.AbstractContextManager[launcher.ControlPlane]:
        return launcher.local_control_plane(nfd=True, keep_dir=keep)

    result = sim.simulate(values_dir, env, plane)
    out = click.get_text_stream("stdout")
    stats: dict[str, object] = {"environments": len(result.envs)}
    if fmt == "json":
        stats.update(simreport.as_json(result))
        report.as_json(report.Report("simulate", result.findings, stats), out)
    else:
        for rep in result.envs:
            out.write(simreport.env_text(rep))
        report.text(report.Report("simulate", result.findings, stats), out)
    return EXIT_FINDINGS if result.errors else EXIT_OK


@main.command()
@values_option
@click.option("--env", required=True, help="The environment whose units to show.")
@click.option("--unit", help="Only this unit (for example team-ml-team); default: every unit.")
@guarded
def show(values_dir: Path, env: str, unit: str | None) -> int:
    """Print the manifests exactly as kustomize builds them from a fresh render of the values
    (one unit, or every unit of the environment as one YAML stream). Pipe it to
    `kubectl diff -f -` to compare with a cluster."""
    from generator.delivery.show import show as run_show

    shown = run_show(values_dir, env, unit)
    _echo_findings(shown.findings)
    click.echo(shown.text, nl=False)
    return EXIT_OK


@main.command()
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
    "fmt",
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
    fmt: str,
    max_bytes: int,
    exit_code: bool,
) -> int:
    """What changes in the built manifests, per environment, unit and object, with field-level
    changes and risky changes flagged: between two environments (`diff staging prod`), or
    between a git ref and the working tree (`diff --base main`)."""
    from generator.delivery import diff as differ
    from generator.reporters import diff as diffreport

    if base is not None and environments:
        raise UsageError("give either two environments or --base REF, not both")
    if base is not None:
        result = differ.against_ref(values_dir, base, env)
    elif len(environments) == 2:
        if env is not None:
            raise UsageError("--env goes with --base; two environments are compared whole")
        result = differ.between_envs(values_dir, *environments)
    else:
        raise UsageError("give two environments (diff staging prod) or --base REF")
    _echo_findings(result.findings)
    stdout = click.get_text_stream("stdout")
    if fmt == "json":
        diffreport.as_json(result, stdout)
    elif fmt == "markdown":
        stdout.write(diffreport.markdown(result, max_bytes))
    else:
        diffreport.text(result, stdout)
    return EXIT_FINDINGS if exit_code and result.objects else EXIT_OK


@main.command()
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
    from generator.delivery import publish as publishing

    cache = None if no_cache else values_dir.resolve().parent / ".cache" / "validate"
    opts = publishing.PublishOptions(
        values_dir,
        repo,
        branch,
        repo_path,
        message,
        allow_delete,
        max_delete_share,
        retries,
        cache,
    )
    result = publishing.publish(opts)
    _echo_findings(result.findings)
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


@main.command("report")
@values_option
@click.option("--env", help="Only this environment.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to this file (all or nothing). Default: print it.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "markdown"]),
    help="html: one self-contained page with charts; markdown: the same tables for a pull "
    "request. Default: markdown when --out ends in .md, else html.",
)
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
    fmt: str | None,
    link_base: str | None,
    baseline: str,
) -> int:
    """The fleet on one page: capacity vs. quotas, quota per team, cost weights, migrations and
    the findings; 1 if a check found an error (the report is written all the same)."""
    from generator.fleetreport import ReportOptions
    from generator.fleetreport import report as make_report

    if fmt is None:
        fmt = "markdown" if out is not None and out.suffix == ".md" else "html"
    result = make_report(ReportOptions(values_dir, env, out, fmt, link_base, baseline))
    if out is None:
        click.echo(result.text, nl=False)
    else:
        click.echo(
            f"wrote {out} ({result.errors} error(s), {result.warnings} warning(s))", err=True
        )
    return EXIT_FINDINGS if result.errors else EXIT_OK


def run() -> None:
    main(prog_name=Path(sys.argv[0]).name or "render.py")


if __name__ == "__main__":
    sys.exit(main())
