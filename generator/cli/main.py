"""The command line: a click group whose commands live one module per group (render, validate,
plan, delivery, report, cluster, tools), loaded when a command runs, so `render --check` does not
import the simulator or the fleet report's charts.
"""

from __future__ import annotations

import importlib
import sys

import click

from generator import Program, __version__
from generator.cli.options import Invocation

# command -> "module:function". The user's interface: names and flags stay as they are.
COMMANDS = {
    "render": "generator.cli.render:render",
    "check": "generator.cli.render:check",
    "validate": "generator.cli.validate:validate",
    "plan": "generator.cli.plan:plan",
    "init": "generator.cli.delivery:init",
    "show": "generator.cli.delivery:show",
    "diff": "generator.cli.delivery:diff",
    "publish": "generator.cli.delivery:publish",
    "report": "generator.cli.report:report_command",
    "simulate": "generator.cli.cluster:simulate",
    "preflight": "generator.cli.cluster:preflight",
    "schema": "generator.cli.tools:schema",
    "rules": "generator.cli.tools:rules",
    "doctor": "generator.cli.tools:doctor",
    "tools": "generator.cli.tools:tools",
}


class Commands(click.Group):
    """A group that imports a command's module only when that command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, name = target.partition(":")
        command = getattr(importlib.import_module(module), name)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Render and validate GitOps manifests for mixed-vendor accelerator fleets."""
    given = ctx.obj if isinstance(ctx.obj, Invocation) else Invocation()
    ctx.obj = Invocation(given.program, debug)


def run(prefix: str = "accel-gitops") -> None:
    """The console script (and render.py, which passes ``python render.py``): messages name
    commands as the user runs them."""
    main(prog_name=prefix, obj=Invocation(Program(prefix)))


if __name__ == "__main__":
    sys.exit(main())
