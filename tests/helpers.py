"""Small helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

from generator.errors import Finding, FindingsError
from generator.pipeline import load_and_check


def findings(values_dir: Path) -> list[Finding]:
    """Every finding for a values tree (errors raise inside the pipeline; collect them)."""
    try:
        _, warnings = load_and_check(values_dir)
    except FindingsError as exc:
        return exc.findings
    return warnings


def lines(values_dir: Path) -> list[str]:
    return [f.format() for f in findings(values_dir)]


def codes(values_dir: Path) -> set[str]:
    return {f.code for f in findings(values_dir)}
