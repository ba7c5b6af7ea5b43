"""The report as text: one self-contained HTML page, or Markdown tables for a pull request.

Jinja2 templates (package data under templates/), autoescaped for HTML; the charts' SVG and the
stylesheet are the only markup passed through unescaped, and both come from this package.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from generator import CONSOLE, Program
from generator.findings import Finding, Severity
from generator.fleetreport import charts
from generator.fleetreport.inputs import Inputs
from generator.fleetreport.numbers import PHASE_STEPS, EnvReport, FleetNumbers

FORMATS = ("html", "markdown")


@dataclass(frozen=True)
class FindingView:
    finding: Finding
    href: str  # "" when the finding has no file to link to

    @property
    def error(self) -> bool:
        return self.finding.severity is Severity.ERROR


@dataclass(frozen=True)
class EnvView:
    env: EnvReport
    charts: list[charts.Chart]
    cap_findings: list[FindingView]


class Links:
    """file:line links: under `base` (a forge URL of the values' commit) with a #L<line> anchor;
    else, when `relative`, relative to the folder the report is written to (a file the browser
    can open); else none."""

    def __init__(
        self, values_dir: Path, base: str | None, out: Path | None, relative: bool = True
    ) -> None:
        self.root = values_dir.resolve().parent  # findings name files relative to this folder
        self.base = base.rstrip("/") + "/" if base else None
        self.here = (out.resolve().parent if out else Path.cwd()).as_posix()
        self.relative = relative

    def href(self, f: Finding) -> str:
        if not f.location.file or (self.base is None and not self.relative):
            return ""
        if self.base is not None:
            anchor = f"#L{f.location.line}" if f.location.line else ""
            return self.base + f.location.file + anchor
        return os.path.relpath((self.root / f.location.file).as_posix(), self.here)


def _num(value: float) -> str:
    """Devices and weighted devices: at most two decimals, no trailing zeros."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _cell(value: object) -> str:
    """A Markdown table cell: pipes escaped, and no raw HTML (GitHub renders it)."""
    text = str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("generator.fleetreport", "templates"),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html",), default=False),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = _num
    env.filters["cell"] = _cell
    return env


def _stylesheet() -> Markup:
    text = (resources.files("generator.fleetreport") / "templates" / "report.css").read_text(
        encoding="utf-8"
    )
    return Markup(text)  # our own stylesheet, package data


def render(
    numbers: FleetNumbers,
    inputs: Inputs,
    links: Links,
    fmt: str = "html",
    program: Program = CONSOLE,
) -> str:
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    views = []
    vendors_seen: list[str] = []
    for env in numbers.envs:
        # A migration across clusters names a track whose vendor is in another cluster's view.
        tracks = [t.vendor for m in env.migrations for t in m.row.tracks]
        vendors_seen += [v for v in (*env.vendor_ids, *tracks) if v not in vendors_seen]
    colors = charts.vendor_colors(vendors_seen)
    for env in numbers.envs:
        drawn = []
        if fmt == "html":
            drawn = [charts.capacity(env), charts.heatmap(env), charts.cost(env, colors)]
            # the traffic chart only where there is traffic to show (the page shows it then)
            drawn += [charts.traffic(env, colors)] if env.migrations else []
        views.append(EnvView(env, drawn, [FindingView(f, links.href(f)) for f in env.cap_findings]))
    context: dict[str, Any] = {
        "fleet": numbers.fleet,
        "envs": views,
        "findings": [FindingView(f, links.href(f)) for f in numbers.findings],
        "errors": sum(f.severity is Severity.ERROR for f in numbers.findings),
        "warnings": sum(f.severity is Severity.WARNING for f in numbers.findings),
        "inputs": inputs,
        "phases": PHASE_STEPS,
        "colors": colors,
        "max_rows": charts.MAX_ROWS,
        "command": program.command,  # as the user runs it: accel-gitops, or render.py
    }
    if fmt == "html":
        context["stylesheet"] = _stylesheet()
        context["svg"] = lambda chart: Markup(chart.svg)  # Matplotlib's output
        return _environment().get_template("report.html").render(context)
    return _environment().get_template("report.md").render(context)


def write(text: str, out: Path) -> None:
    """Write all or nothing: a temporary file beside `out`, then one rename."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for reading
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
