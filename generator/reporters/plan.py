"""How `plan` reads: its tables (text; its findings on stderr), its JSON document, or its tables
and findings in a findings format (github annotations, JUnit XML)."""

from __future__ import annotations

import json
from typing import TextIO

from generator import plan as planning
from generator.reporters import findings as reporter


def write(result: planning.Plan, output: str, out: TextIO, err: TextIO) -> None:
    if output == "json":
        out.write(json.dumps(result.as_json(), indent=2, sort_keys=True) + "\n")
        return
    if output == "text":
        for finding in result.findings:
            err.write(finding.format() + "\n")
        err.flush()  # before the tables, wherever both streams go
        out.write(planning.format_text(result))
        return
    if output == "github":  # the tables for the workflow's log; GitHub reads the annotations
        out.write(planning.format_text(result))
    # A quota or capacity row that does not fit fails the plan with no finding of its own:
    # the stats say so.
    stats: dict[str, object] = {
        "environments": len(result.envs),
        "fits": "yes" if result.fits else "no",
    }
    reporter.FORMATS[output](reporter.Report("plan", result.findings, stats), out)
