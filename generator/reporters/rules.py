"""`render.py rules`: every code any part of the program can emit, where it runs, what it is.

Each layer says what it emits as data (`CODES`, the policy registry, each validate stage's
`codes`); this module only gathers and prints them. A test finds every code in the source and
compares it with this list, so a code cannot be emitted without being listed.
"""

from __future__ import annotations

from generator.cluster import dryrun, preflight
from generator.delivery import publish
from generator.findings import CodeInfo
from generator.policy import registry
from generator.simulate import gitops as simgitops
from generator.simulate import monitoring as simmonitoring
from generator.simulate import result as simresult
from generator.validate import drift
from generator.validate.stages import registry as stages
from generator.values import clusters, loader, yamlio
from generator.workloads import model


def all_codes() -> list[CodeInfo]:
    """Every code, sorted; a code emitted by two layers is listed once, with both places."""
    found: dict[str, CodeInfo] = {}
    sources = [
        *yamlio.CODES,
        *loader.CODES,
        *clusters.CODES,
        *model.CODES,
        *registry.codes(),
        *drift.CODES,
        *(code for stage in stages.STAGES for code in stage.codes),
        *dryrun.CODES,
        *simresult.CODES,
        *simgitops.CODES,
        *simmonitoring.CODES,
        *preflight.CODES,
        *publish.CODES,
    ]
    for info in sources:
        if info.code in found:
            raise ValueError(f"code {info.code} is declared twice")
        found[info.code] = info
    return [found[code] for code in sorted(found)]


def rules_table() -> str:
    """The Markdown table docs/validate.md carries (a test keeps the two equal)."""
    lines = ["| code | runs in | severity | what it catches |", "|---|---|---|---|"]
    lines += [f"| {c.code} | {c.runs_in} | {c.severity} | {c.summary} |" for c in all_codes()]
    return "\n".join(lines) + "\n"
