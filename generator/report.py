"""Reporters: one function per output format, all fed the same findings.

text: `file:line:col: CODE message`; json: one document; github: workflow annotations plus a
Markdown summary appended to $GITHUB_STEP_SUMMARY when set; junit: XML for CI test reports.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from .errors import Finding, Severity


@dataclass
class Report:
    command: str
    findings: list[Finding]
    stats: dict[str, object] = field(default_factory=dict)
    # What was checked (validate: unit paths), one JUnit case each, so a clean run shows it.
    cases: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return sum(f.severity is Severity.ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return len(self.findings) - self.errors

    def summary(self) -> str:
        extra = ", ".join(f"{k} {v}" for k, v in self.stats.items() if not isinstance(v, dict))
        text = f"{self.command}: {self.errors} error(s), {self.warnings} warning(s)"
        return f"{text} ({extra})" if extra else text


def text(report: Report, out: TextIO) -> None:
    for f in report.findings:
        out.write(f.format() + "\n")
    out.write(report.summary() + "\n")


def _as_dict(f: Finding) -> dict[str, object]:
    out: dict[str, object] = {
        "code": f.code,
        "severity": f.severity.value,
        "message": f.text,
        "file": f.location.file,
        "line": f.location.line,
        "column": f.location.column,
        "path": f.path,
        "hint": f.hint,
        "environments": list(f.envs),
    }
    if f.detail:
        out["detail"] = f.detail
    return out


def as_json(report: Report, out: TextIO) -> None:
    doc = {
        "command": report.command,
        "errors": report.errors,
        "warnings": report.warnings,
        "stats": report.stats,
        "findings": [_as_dict(f) for f in report.findings],
    }
    out.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github(report: Report, out: TextIO) -> None:
    for f in report.findings:
        level = "error" if f.severity is Severity.ERROR else "warning"
        props = [f"file={_escape_prop(f.location.file)}"]
        if f.location.line:
            props += [f"line={f.location.line}", f"col={f.location.column}"]
        props.append(f"title={_escape_prop(f.code)}")
        message = f.text + (f" (at {f.path})" if f.path else "") + (f"; {f.hint}" if f.hint else "")
        out.write(f"::{level} {','.join(props)}::{_escape_data(message)}\n")
    out.write(report.summary() + "\n")
    summary_file = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_file:
        with open(summary_file, "a", encoding="utf-8") as fh:
            fh.write(markdown(report))


def markdown(report: Report) -> str:
    lines = [f"### {report.command}: {report.errors} error(s), {report.warnings} warning(s)", ""]
    if report.findings:
        lines += ["| | code | where | message |", "|---|---|---|---|"]
        for f in report.findings:
            icon = "❌" if f.severity is Severity.ERROR else "⚠️"
            msg = f.text.replace("|", "\\|")
            lines.append(f"| {icon} | {f.code} | `{f.location}` | {msg} |")
    lines.append("")
    return "\n".join(lines) + "\n"


def junit(report: Report, out: TextIO) -> None:
    """One test case per checked unit (failed by the findings about its objects, which name it),
    and one per code and file for the other findings; a clean run without units still has one
    passing case."""
    suite = ET.Element(
        "testsuite",
        name=report.command,
        tests="0",
        failures="0",
        errors="0",
        skipped="0",
    )
    by_unit: dict[str, list[Finding]] = {name: [] for name in report.cases}
    cases: dict[tuple[str, str], list[Finding]] = {}
    for f in report.findings:
        unit = next((u for u in report.cases if f"({u})" in f.message), None)
        if unit is not None:
            by_unit[unit].append(f)
        else:
            cases.setdefault((f.code, f.location.file), []).append(f)
    failures = 0
    for unit, found in sorted(by_unit.items()):
        failures += _case(suite, report.command, unit, found, "no finding")
    for (code, file), found in sorted(cases.items()):
        failures += _case(suite, code, file, found, "")
    if not len(suite):
        ET.SubElement(suite, "testcase", classname=report.command, name="all checks")
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suites = ET.Element("testsuites")
    suites.append(suite)
    ET.indent(suites)
    out.write(ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def _case(suite: ET.Element, classname: str, name: str, found: list[Finding], ok: str) -> int:
    """Add a test case; 1 if it failed (an error among `found`), else 0."""
    case = ET.SubElement(suite, "testcase", classname=classname, name=name)
    errors = [f for f in found if f.severity is Severity.ERROR]
    body = "\n".join(f.format() for f in found)
    if errors:
        fail = ET.SubElement(case, "failure", message=errors[0].text, type=errors[0].code)
        fail.text = body
        return 1
    if body or ok:
        ET.SubElement(case, "system-out").text = body or ok
    return 0


FORMATS: dict[str, Callable[[Report, TextIO], None]] = {
    "text": text,
    "json": as_json,
    "github": github,
    "junit": junit,
}
