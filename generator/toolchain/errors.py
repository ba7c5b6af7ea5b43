"""Every failure to run an external tool: a GeneratorError, mapped to exit 2 by the CLI."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from generator import CONSOLE, Program
from generator.errors import GeneratorError


@dataclass(frozen=True)
class Install:
    """How to get a missing tool: this program's `tools install` (`--only` a set or some tools;
    `why` a set is not built by default), or `system`, another installer's command. The program's
    name is filled in where the hint is printed, as the user runs it."""

    only: str = ""
    why: str = ""
    system: str = ""

    def text(self, program: Program) -> str:
        if self.system:
            return self.system
        run = program.command(f"tools install --only {self.only}" if self.only else "tools install")
        return f"{run} ({self.why})" if self.why else run


class ToolError(GeneratorError):
    """Base class of every failure to run an external tool."""


class ToolMissing(ToolError):
    """The tool (or the schema set) is not installed where it is looked for."""

    def __init__(self, tool: str, install: Install, looked_in: Sequence[str] = ()) -> None:
        self.tool = tool
        self.install = install
        self.looked_in = tuple(looked_in)
        super().__init__(self.message_for(CONSOLE))

    def message_for(self, program: Program) -> str:
        where = f" (looked in {', '.join(self.looked_in)})" if self.looked_in else ""
        return f"{self.tool} not found{where}; install it with: {self.install.text(program)}"


class ToolFailed(ToolError):
    """The tool ran and exited with a non-zero code."""

    def __init__(self, argv: Sequence[str], returncode: int, stdout: bytes, stderr: bytes) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        detail = (
            stderr.decode("utf-8", "replace").strip() or stdout.decode("utf-8", "replace").strip()
        )
        if len(detail) > 2000:
            detail = detail[:2000] + " [...]"
        super().__init__(f"{' '.join(self.argv)} exited with {returncode}: {detail}")


class ToolTimeout(ToolError):
    """The tool ran longer than its timeout and was killed."""

    def __init__(self, argv: Sequence[str], timeout: float, stdout: bytes, stderr: bytes) -> None:
        self.argv = tuple(argv)
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"{' '.join(self.argv)} timed out after {timeout:g} s")


class ToolExited(ToolError):
    """A long-running tool (a control-plane component) exited when it should still run."""

    def __init__(self, argv: Sequence[str], returncode: int, log_tail: str) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.log_tail = log_tail
        super().__init__(f"{Path(argv[0]).name} exited with {returncode}: {log_tail}")
