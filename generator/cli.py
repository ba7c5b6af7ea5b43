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
from typing import Any, TypeVar

import click

from . import pipeline, report, schemadefs, toolchain
from .errors import Finding, FindingsError, GeneratorError, UsageError

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
            click.echo(f"{summary}; nothing written", err=True)
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


def _default_values() -> Path:
    return Path("values")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
@guarded
def render(values_dir: Path, env: str | None, out_dir: Path | None, check: bool) -> int:
    """Render kustomize bases and overlays from the values tree."""
    out = out_dir if out_dir is not None else values_dir.resolve().parent
    recovered = pipeline.recover_output(out)
    if recovered:
        click.echo(f"render: {recovered}", err=True)
    # validate's default cache: files that passed their schema, the YAML text of each object.
    cache = values_dir.resolve().parent / ".cache" / "validate"
    result = pipeline.render(
        pipeline.RenderOptions(
            values_dir, out, env, check, cache / "values-schema.json", cache / "dump-cache.json"
        )
    )
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
    return EXIT_OK


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
    """Write or print the JSON Schemas of the values files."""
    kinds = [kind] if kind else list(schemadefs.USER_KINDS)
    if out_dir is None:
        for k in kinds:
            click.echo(schemadefs.schema_text(k), nl=False)
        return EXIT_OK
    out_dir.mkdir(parents=True, exist_ok=True)
    for k in kinds:
        (out_dir / f"{k}.schema.json").write_text(schemadefs.schema_text(k), encoding="utf-8")
    click.echo(f"wrote {len(kinds)} schema(s) to {out_dir}")
    return EXIT_OK


@main.command()
@values_option
@click.option("--env", help="Validate only this environment's units.")
@click.option(
    "--output",
    "output_format",
    type=click.Choice(sorted(report.FORMATS)),
    default="text",
    show_default=True,
    help="Report format.",
)
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
    reports: tuple[Path, ...],
) -> int:
    """Validate the values and exactly what Argo CD will apply: kustomize, kubeconform, promtool
    and the fleet policy rules on every committed unit, and the committed output against a fresh
    render of the values, in one report."""
    from .validate import ValidateOptions
    from .validate import validate as run_validate
    from .validate.progress import Progress, progress_stream
    from .validate.shard import parse as parse_shard

    if merge_reports or reports:
        if not (merge_reports and reports):
            raise UsageError("report files are read only with --merge, and --merge needs them")
        rep = report.merge(report.read_reports(reports))
        if output_format != "json":
            rep.stats.pop("timings", None)
        report.FORMATS[output_format](rep, click.get_text_stream("stdout"))
        return EXIT_FINDINGS if rep.errors else EXIT_OK
    home = values_dir.resolve().parent
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
    stats: dict[str, object] = {
        "units": result.units,
        "objects": result.objects,
        "cached units": result.cached_units,
    }
    if result.not_run:
        stats["not run"] = "; ".join(result.not_run)
    if output_format == "json":
        stats["timings"] = result.timings
    if result.shard is not None:
        stats["shard"] = result.shard
    rep = report.Report("validate", result.findings, stats)
    report.FORMATS[output_format](rep, click.get_text_stream("stdout"))
    return EXIT_FINDINGS if rep.errors else EXIT_OK


@main.command()
@guarded
def rules() -> int:
    """List every policy check and rule: code, where it runs, what it catches (Markdown)."""
    from . import policy

    click.echo(policy.rules_table(), nl=False)
    return EXIT_OK


@main.command()
@guarded
def doctor() -> int:
    """List the external tools: version, where each came from, how to install a missing one."""
    ok = True
    for st in toolchain.doctor():
        if st.path is None:
            ok = False
            click.echo(
                f"{st.name:12} MISSING  pinned {st.pinned or '-'}; install: {st.install_hint}"
            )
            continue
        state = "ok" if st.ok else "MISMATCH"
        ok = ok and st.ok
        pin = f" (pinned {st.pinned})" if st.pinned and not st.ok else ""
        click.echo(f"{st.name:12} {state:8} {st.version or '?'}{pin}  {st.path}  from {st.source}")
    versions = toolchain.k8s_schema_versions()
    crds = (toolchain.tools_dir() / "schemas" / "crds" / "index.json").is_file()
    click.echo(
        f"{'schemas':12} {'ok' if versions else 'MISSING':8} Kubernetes "
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
    from . import plan as planning

    result = planning.plan(values_dir, env)
    if fmt == "json":
        click.echo(json.dumps(result.as_json(), indent=2, sort_keys=True))
    else:
        _echo_findings(result.findings)
        click.echo(planning.format_text(result), nl=False)
    return EXIT_OK if result.fits else EXIT_FINDINGS


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
    from .fleetreport import ReportOptions
    from .fleetreport import report as make_report

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
