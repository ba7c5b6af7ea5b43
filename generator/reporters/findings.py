"""Reporters: one function per output format, all fed the same findings.

text: `file:line:col: CODE message`; json: one document; github: workflow annotations plus a
Markdown summary appended to $GITHUB_STEP_SUMMARY when set; junit: XML for CI test reports.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from generator.errors import GeneratorError
from generator.findings import Finding, Location, Place, Severity, sorted_findings, split_layer
from generator.validate.stages.kustomize import unserved_once


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
        "environments": list(f.environments),
        "clusters": list(f.clusters),
        # What the finding says without the environments (those are the field above): a merge
        # of shard reports rebuilds the finding from the fields, never from the text.
        "message_only": f.message,
        "unit": f.unit,
    }
    if f.detail:
        out["detail"] = f.detail
    if f.also:
        out["also"] = [_place(p) for p in f.also]
    if f.last_line:
        out["last_line"] = f.last_line
    return out


def _place(p: Place) -> dict[str, object]:
    where = p.location
    return {
        "file": where.file,
        "line": where.line,
        "column": where.column,
        "path": p.path,
        "last_line": p.last_line,
    }


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
    """One test case per checked unit (failed by the findings about its objects: their `unit`),
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
        if f.unit in by_unit:
            by_unit[f.unit].append(f)
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


# ---- merging shard reports (validate --shard K/N ... validate --merge) -------------------------


class MergeError(GeneratorError):
    """The reports cannot be merged (not JSON, not shards of one run, a shard missing)."""


def _finding(item: dict[str, object]) -> Finding:
    """The finding a JSON report item was written from (`_as_dict` in reverse)."""
    envs = item.get("environments") or []
    clusters = item.get("clusters") or []
    in_clusters = [str(c) for c in clusters] if isinstance(clusters, list) else []
    # An environment that declares clusters is a layer only through them (findings.layer_key).
    whole = {split_layer(c)[0] for c in in_clusters}
    plain = [str(e) for e in envs if str(e) not in whole] if isinstance(envs, list) else []
    layers = tuple(sorted(in_clusters + plain))
    return Finding(
        str(item["code"]),
        str(item["message_only"]),
        Location(str(item["file"]), int(str(item["line"])), int(str(item["column"]))),
        str(item.get("path") or ""),
        str(item.get("hint") or ""),
        Severity(str(item["severity"])),
        layers,
        str(item.get("detail") or ""),
        str(item.get("unit") or ""),
        _also(item.get("also")),
        int(str(item.get("last_line") or 0)),
    )


def _also(items: object) -> tuple[Place, ...]:
    out = []
    for item in items if isinstance(items, list) else []:
        where = Location(str(item["file"]), int(str(item["line"])), int(str(item["column"])))
        out.append(Place(where, str(item["path"]), int(str(item["last_line"]))))
    return tuple(out)


Named = list[tuple[str, dict[str, object]]]  # (where a report came from, its JSON document)


def read_reports(paths: Iterable[Path]) -> Named:
    docs: Named = []
    for path in paths:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MergeError(f"{path}: not a JSON report ({exc})") from None
        if not isinstance(doc, dict):
            raise MergeError(f"{path}: not a JSON report")
        docs.append((str(path), doc))
    return docs


def merge(docs: Named) -> Report:
    """One report from the JSON reports of shards 1..N of one validate run.

    Every shard repeats the global findings (values, drift): identical findings are kept once,
    so the result is the report an unsharded run gives. Counts add up; timings are the slowest
    shard's.
    """
    shards: dict[int, str] = {}
    keys: set[tuple[object, ...]] = set()
    for name, doc in docs:
        stats = doc.get("stats")
        info = stats.get("shard") if isinstance(stats, dict) else None
        if doc.get("command") != "validate" or not isinstance(info, dict):
            raise MergeError(f"{name} is not a report of `validate --shard K/N --output json`")
        keys.add((info.get("count"), info.get("fingerprint"), info.get("scope")))
        index = int(str(info.get("index")))
        if index in shards:
            raise MergeError(f"{name} and {shards[index]} are both shard {index}")
        shards[index] = name
    if len(keys) != 1:
        raise MergeError(
            "the reports are not shards of one run: their shard count, committed output, values, "
            "--env or --no-drift differ"
        )
    count = int(str(next(iter(keys))[0]))
    missing = sorted(set(range(1, count + 1)) - set(shards))
    if missing:
        raise MergeError(
            "missing shard(s) " + ", ".join(f"{i}/{count}" for i in missing) + " of the run"
        )
    findings: list[Finding] = []
    checked: set[str] = set()
    totals = {"units": 0, "objects": 0, "cached units": 0}
    not_run: dict[str, None] = {}
    timings: dict[str, float] = {}
    for name, doc in docs:
        stats = doc["stats"]
        items = doc.get("findings")
        if not isinstance(stats, dict) or not isinstance(items, list):
            raise MergeError(f"{name} is not a report of `validate --shard K/N --output json`")
        for key in totals:
            totals[key] += int(stats.get(key, 0))
        info = stats.get("shard")
        if isinstance(info, dict) and isinstance(info.get("checked"), list):
            checked.update(str(unit) for unit in info["checked"])
        if stats.get("not run"):
            not_run[str(stats["not run"])] = None
        for stage, seconds in dict(stats.get("timings") or {}).items():
            timings[stage] = max(timings.get(stage, 0.0), float(seconds))
        try:
            findings.extend(_finding(item) for item in items)
        except (KeyError, ValueError, TypeError) as exc:
            raise MergeError(f"{name}: a finding lacks {exc}") from None
    merged: dict[str, object] = dict(totals)
    if not_run:
        merged["not run"] = "; ".join(not_run)
    if timings:
        merged["timings"] = timings
    # A kind the clusters' minor does not serve is one finding of every shard's objects.
    try:
        findings = unserved_once(findings)
    except (KeyError, ValueError, TypeError) as exc:
        raise MergeError(f"a KVER002 finding's detail does not list its objects ({exc})") from None
    return Report("validate", sorted_findings(findings), merged, sorted(checked))


FORMATS: dict[str, Callable[[Report, TextIO], None]] = {
    "text": text,
    "json": as_json,
    "github": github,
    "junit": junit,
}
