"""Formats of `render.py diff`: text for a terminal, JSON for programs, Markdown for GitHub.

The Markdown is templated (jinja2, templates/diff.md.j2: human-facing text, never manifests) and
always fits `limit` bytes: GitHub caps a job summary at 1 MiB and a pull-request comment at
65,536 characters. When the whole diff does not fit, detail is dropped in steps: first the field
changes of objects that carry no risk, then every field change, then the per-unit sections, and
last the risk rows beyond what fits; a closing line says it was shortened.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

import jinja2

from generator import CONSOLE, Program
from generator.delivery.diff import ABSENT, ADDED, CHANGED, REMOVED, RISKS, DiffResult, ObjectDiff

# GitHub's cap on one step's job summary: a larger $GITHUB_STEP_SUMMARY is dropped whole, not
# cut (source: actions/runner src/Runner.Worker/FileCommandManager.cs v2.336.0,
# CreateStepSummaryCommand.AttachmentSizeLimit = 1024 * 1024, and the UnsupportedSummarySize
# error in src/Runner.Common/Constants.cs).
SUMMARY_LIMIT = 1024 * 1024
# A comment body: GitHub's REST API has refused longer ones with "Body is too long (maximum is
# 65536 characters)" (422, as reported in public issue threads; the service's code is not
# public). Characters, and bytes are never fewer, so the byte budget is the safe side.
COMMENT_LIMIT = 65_536
VALUE_CHARS = 300
MARK = {ADDED: "+", REMOVED: "-", CHANGED: "~"}


def value_text(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def object_lines(obj: ObjectDiff, details: bool = True) -> Iterator[str]:
    """`~ Kind ns/name`, then `- path: old` / `+ path: new` per field and `! risk: ...`."""
    yield f"{MARK[obj.status]} {obj.title} ({obj.key[0]})"
    for risk in obj.risks:
        yield f"!     {risk.code}: {risk.message}"
    if not details:
        return
    for c in obj.changes:
        if c.old is not ABSENT:
            yield f"-     {c.where}: {value_text(c.old)}"
        if c.new is not ABSENT:
            yield f"+     {c.where}: {value_text(c.new)}"


def _units(result: DiffResult) -> list[tuple[str, str, list[ObjectDiff]]]:
    grouped: dict[tuple[str, str], list[ObjectDiff]] = {}
    for obj in result.objects:
        grouped.setdefault((obj.env, obj.unit), []).append(obj)
    return [(env, unit, objs) for (env, unit), objs in sorted(grouped.items())]


def _counts(objs: list[ObjectDiff]) -> str:
    parts = [f"{sum(o.status == s for o in objs)} {s}" for s in (ADDED, REMOVED, CHANGED)]
    risky = sum(len(o.risks) for o in objs)
    return ", ".join(parts) + (f", {risky} risky" if risky else "")


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


def _totals(result: DiffResult) -> str:
    return (
        f"{_n(len(result.objects), 'object')} in {len(result.changed_units)} of "
        f"{_n(result.units, 'unit')} ({result.count(ADDED)} added, {result.count(REMOVED)} "
        f"removed, {result.count(CHANGED)} changed); {_n(len(result.risks), 'risky change')}"
    )


def text(result: DiffResult, out: TextIO) -> None:
    out.write(f"diff: {result.old} -> {result.new}\n")
    for env, unit, objs in _units(result):
        out.write(f"{env}/{unit}: {_counts(objs)}\n")
        for obj in objs:
            for line in object_lines(obj):
                out.write(f"  {line}\n")
    if result.risks:
        out.write("risky changes:\n")
        for obj, risk in result.risks:
            out.write(f"  {risk.code}: {obj.env}/{obj.unit} {obj.title}: {risk.message}\n")
    out.write(f"diff: {_totals(result)}\n" if result.objects else "diff: no change\n")


def as_dict(result: DiffResult) -> dict[str, Any]:
    def change(c: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"path": c.where, "op": c.op}
        if c.old is not ABSENT:
            out["old"] = c.old
        if c.new is not ABSENT:
            out["new"] = c.new
        return out

    def obj(o: ObjectDiff) -> dict[str, Any]:
        api, kind, ns, name = o.key
        out: dict[str, Any] = {
            "environment": o.env,
            "unit": o.unit,
            "apiVersion": api,
            "kind": kind,
            "namespace": ns,
            "name": name,
            "status": o.status,
            "changes": [change(c) for c in o.changes],
            "risks": [{"code": r.code, "message": r.message} for r in o.risks],
        }
        if o.obj is not None:
            out["object"] = o.obj
        return out

    return {
        "old": result.old,
        "new": result.new,
        "summary": {
            "units": result.units,
            "changed_units": len(result.changed_units),
            "added": result.count(ADDED),
            "removed": result.count(REMOVED),
            "changed": result.count(CHANGED),
            "risky": len(result.risks),
        },
        "objects": [obj(o) for o in result.objects],
    }


def as_json(result: DiffResult, out: TextIO) -> None:
    out.write(json.dumps(as_dict(result), indent=2, sort_keys=True, ensure_ascii=False) + "\n")


# ---- Markdown ---------------------------------------------------------------------------------


def _md(value: object) -> str:
    """Text for a Markdown table cell: no table breaks, no HTML, no emphasis by accident."""
    text = str(value)
    for a, b in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"), ("\n", " ")):
        text = text.replace(a, b)
    for ch in "*_`[]":
        text = text.replace(ch, "\\" + ch)
    return text


@dataclass
class _UnitView:
    env: str
    unit: str
    objects: list[ObjectDiff]

    @property
    def risky(self) -> bool:
        return any(o.risks for o in self.objects)

    @property
    def summary(self) -> str:
        return _counts(self.objects)

    @functools.cached_property
    def _lines(self) -> tuple[list[str], list[str]]:
        """(every line, lines with field changes of risky objects only)."""
        full = [line for o in self.objects for line in object_lines(o)]
        brief = [line for o in self.objects for line in object_lines(o, details=bool(o.risks))]
        return full, brief

    def lines(self, level: int) -> list[str]:
        return self._lines[0] if level == 0 else self._lines[1]

    def size(self, level: int) -> int:
        """Bytes of the unit's lines at `level`: a lower bound of what it adds to the text."""
        return sum(len(line.encode()) + 1 for line in self.lines(level)) if level < 2 else 0

    @functools.cached_property
    def fence(self) -> str:
        """A code fence longer than any run of backticks in the block."""
        runs = [len(r) for line in self._lines[0] for r in re.findall("`+", line)]
        return "`" * max(3, max(runs, default=0) + 1)


@functools.cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("generator.reporters", "templates"),
        autoescape=jinja2.select_autoescape(["html"]),  # on for HTML; Markdown escapes by _md
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md"] = _md
    return env.get_template("diff.md.j2")


def markdown(result: DiffResult, limit: int = SUMMARY_LIMIT, program: Program = CONSOLE) -> str:
    units = [_UnitView(env, unit, objs) for env, unit, objs in _units(result)]
    order = list(RISKS)  # the gravest first: they stay when rows must go
    risks = sorted(result.risks, key=lambda pair: order.index(pair[1].code))

    def render(level: int, risk_rows: int) -> str:
        return _template().render(
            result=result,
            units=units,
            risks=risks,
            level=level,
            risk_rows=risk_rows,
            limit=limit,
            command=program.command,  # as the user runs it: accel-gitops, or render.py
        )

    for level in range(4):
        if sum(u.size(level) for u in units) > limit:
            continue  # cannot fit: do not render it
        text = render(level, len(risks))
        if len(text.encode()) <= limit:
            return text
    lo, hi = 0, len(risks)  # the most risk rows that fit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(render(3, mid).encode()) <= limit:
            lo = mid
        else:
            hi = mid - 1
    text = render(3, lo)
    if len(text.encode()) > limit:
        raise ValueError(f"a diff summary does not fit in {limit} bytes")
    return text
