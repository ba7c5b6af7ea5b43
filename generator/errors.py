"""Findings are data: every problem a run sees, with where it is and how to fix it."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, order=True)
class Location:
    """A place in a values file; line and column are 1-based (0 when unknown)."""

    file: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line:
            return f"{self.file}:{self.line}:{self.column}"
        return self.file


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    location: Location
    path: str = ""  # JSON path inside the values file, e.g. $.quota.nvidia
    hint: str = ""  # how to fix it
    severity: Severity = Severity.ERROR
    detail: str = ""  # more for a program or a log (DRIFT001: the unified diff); not in text

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        return (loc.file, loc.line, loc.column, self.code, self.message)

    def format(self) -> str:
        level = "warning: " if self.severity is Severity.WARNING else ""
        text = f"{self.location}: {self.code} {level}{self.message}"
        if self.path:
            text += f" (at {self.path})"
        if self.hint:
            text += f"; {self.hint}"
        return text


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    unique = {(f.sort_key(), f.path, f.hint): f for f in findings}
    return [unique[k] for k in sorted(unique)]


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)


class GeneratorError(Exception):
    """Base class for expected failures; the CLI maps them to exit codes."""


class FindingsError(GeneratorError):
    """The input has problems; exit code 1."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(f"{len(findings)} finding(s)")
        self.findings = sorted_findings(findings)


class UsageError(GeneratorError):
    """Wrong invocation or environment (missing directory, tool); exit code 2."""
