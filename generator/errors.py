"""The one error root: every expected failure is a GeneratorError; the CLI maps them to exit codes.

FindingsError (exit 1) carries findings; UsageError and every tool failure (exit 2) say what to do.
An exception that is not a GeneratorError is a bug: exit 3, with a traceback under --debug.
"""

from __future__ import annotations

from generator import Program
from generator.findings import Finding, sorted_findings


class GeneratorError(Exception):
    """Base class for expected failures; the CLI maps them to exit codes."""

    def message_for(self, program: Program) -> str:
        """What the user reads, naming a command as `program` runs it (the CLI prints this, so
        an error raised far below it needs no program of its own)."""
        return str(self)


class FindingsError(GeneratorError):
    """The input has problems; exit code 1."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(f"{len(findings)} finding(s)")
        self.findings = sorted_findings(findings)


class UsageError(GeneratorError):
    """Wrong invocation or environment (missing directory, tool); exit code 2."""
