"""The report of a values tree: its figures, drawn and filled into the page."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator import CONSOLE, Program
from generator.findings import Severity
from generator.fleetreport import inputs, numbers, page


@dataclass(frozen=True)
class ReportOptions:
    values_dir: Path
    env: str | None = None
    out: Path | None = None  # None: return the text only
    fmt: str = "html"
    link_base: str | None = None
    baseline: str = "nvidia"
    program: Program = CONSOLE  # how the user runs this program: the page names its commands


@dataclass(frozen=True)
class ReportResult:
    text: str
    errors: int
    warnings: int


def report(opts: ReportOptions) -> ReportResult:
    figures = numbers.compute(opts.values_dir, opts.env, opts.baseline)
    # A Markdown summary is read on a forge: relative paths lead nowhere there.
    links = page.Links(opts.values_dir, opts.link_base, opts.out, relative=opts.fmt == "html")
    text = page.render(figures, inputs.gather(opts.values_dir), links, opts.fmt, opts.program)
    if opts.out is not None:
        page.write(text, opts.out)
    errors = sum(f.severity is Severity.ERROR for f in figures.findings)
    return ReportResult(text, errors, len(figures.findings) - errors)
