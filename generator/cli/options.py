"""What every command shares: how it was invoked, exit codes, the error guard, the values and
--output options.

0 clean, 1 findings (or drift), 2 usage or tool error (any other GeneratorError), 3 internal
error, 130 interrupted. Commands never print tracebacks for bad input; an exception that is not
a GeneratorError is a bug (exit 3), shown in full with --debug.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from generator import CONSOLE, Program
from generator.errors import FindingsError, GeneratorError
from generator.findings import Finding
from generator.reporters import findings as reporter
from generator.toolchain import install as tool_install
from generator.toolchain import registry

F = TypeVar("F", bound=Callable[..., int])

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass(frozen=True)
class Invocation:
    """How the command line was run: the program's name as the user typed it (the console
    script's, or ``python render.py``: messages name commands so), and --debug. `run` gives it
    to the click group, which keeps it as the context's object."""

    program: Program = CONSOLE
    debug: bool = False


def invocation() -> Invocation:
    """The running command's invocation (the default one for a command run on its own)."""
    obj = click.get_current_context().find_root().obj
    return obj if isinstance(obj, Invocation) else Invocation()


def echo_findings(findings: list[Finding]) -> None:
    for finding in findings:
        click.echo(finding.format(), err=True)


def guarded(fn: F) -> F:
    """Run a command body; turn expected errors into messages and exit codes."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> int:
        ctx = click.get_current_context()
        run = invocation()
        try:
            code = fn(*args, **kwargs)
        except FindingsError as exc:
            echo_findings(exc.findings)
            summary = reporter.Report(str(ctx.info_name), exc.findings).summary()
            done = "nothing pushed" if ctx.info_name == "publish" else "nothing written"
            click.echo(f"{summary}; {done}", err=True)
            code = EXIT_FINDINGS
        except GeneratorError as exc:
            click.echo(f"error: {exc.message_for(run.program)}", err=True)
            code = EXIT_ERROR
        except KeyboardInterrupt:
            code = EXIT_INTERRUPTED
        except Exception as exc:  # a bug, not bad input
            if run.debug:
                traceback.print_exc()
            click.echo(
                f"internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True
            )
            code = EXIT_INTERNAL
        ctx.exit(code)

    return wrapper  # type: ignore[return-value]


def beside(values_dir: Path) -> Path:
    """The folder holding the values tree, where caches go by default."""
    try:
        return values_dir.resolve().parent
    except (OSError, RuntimeError):  # a symbolic link loop: loading the values reports it
        return values_dir.absolute().parent


def cache_folder(values_dir: Path) -> Path:
    """validate's cache folder, which render and check share: values files parsed, each view's
    check findings, each object's YAML text, each unit's tool verdicts."""
    return beside(values_dir) / ".cache" / "validate"


values_option = click.option(
    "--values",
    "values_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=lambda: Path("values"),
    show_default="values",
    help="The values tree (fleet.yaml, vendors/, teams/, environments/, inventories/).",
)


def output_option(help: str = "Report format.") -> Callable[[F], F]:
    """--output of every command that reports findings: the findings formats
    (reporters/findings.py FORMATS: text, json, github, junit), where a command's own text or
    JSON (plan's tables, its JSON document) may stand for the findings' text and JSON."""
    return click.option(
        "--output",
        "output_format",
        type=click.Choice(sorted(reporter.FORMATS)),
        default="text",
        show_default=True,
        help=help,
    )


def ensure_control_plane(command: str, needed: tuple[str, ...] = registry.CONTROL_PLANE) -> None:
    """Build the control-plane tools a command needs before its first use, saying what and why
    on stderr."""
    absent = registry.missing(needed)
    if not absent:
        return
    sets = sorted({registry.install_for(name).only for name in absent} - {""})
    install = registry.install_command(invocation().program, ",".join(sets))
    click.echo(
        f"{command}: building {', '.join(absent)} first (`{install}`, from the pinned Go "
        f"modules): {command} runs the real Kubernetes control plane, which `tools install` does "
        "not build by default; a cold build takes several minutes, once.",
        err=True,
    )
    tool_install.build_missing(needed, say=lambda line: click.echo(line, err=True))
