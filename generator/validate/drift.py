"""Drift: what Argo CD syncs is the committed output, and it must be what the values render to.

DRIFT001 names each committed file that differs from a fresh render (at its first differing
line, with the unified diff as the finding's detail); DRIFT002 says when the comparison could
not be made (the values have errors), so a clean run never covers a check that did not run.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from generator import Program
from generator.findings import CodeInfo, Finding, Location, Severity, split_layer
from generator.render import traffic
from generator.render.writer import compare

DRIFT001 = CodeInfo(
    "DRIFT001",
    "drift",
    "error",
    "a committed file of base/ or overlays/ is not what the values render to",
)
DRIFT002 = CodeInfo(
    "DRIFT002",
    "drift",
    "warning",
    "the committed output was not compared with a fresh render (the values have errors, or their "
    "checks fail)",
)
CODES = (DRIFT001, DRIFT002)


def not_compared(values_dir: Path, why: str) -> Finding:
    return Finding(
        "DRIFT002",
        f"the committed output was not compared with a fresh render: {why}",
        Location(values_dir.name),
        hint="fix the errors the values report, then render; the tools still checked the "
        "committed output",
        severity=Severity.WARNING,
    )


MAX_DRIFT_FINDINGS = 20


def drift_findings(
    tree: Mapping[str, str],
    committed: Mapping[str, str],
    env: str | None,
    program: Program,
    sums: Mapping[str, bytes] | None = None,
) -> list[Finding]:
    """What Argo CD syncs is the committed output: it must be what the values render to (the
    hint names the render command as `program` runs it). `sums`: the digests of some of
    `tree`'s files (Rendered.sums), not hashed again."""

    def mine(rel: str) -> bool:
        if env is None:
            return True
        found = traffic.env_of(rel)
        if found is not None:
            return found == split_layer(env)[0]
        return not rel.startswith("overlays/") or rel.startswith(f"overlays/{env}/")

    drift = compare(tree, committed, only=mine, sums=sums)
    hint = f"run `{program.command('render')}` and commit the result"
    found = [(rel, "differs from a fresh render of the values") for rel in drift.changed]
    found += [(rel, "is rendered from the values but not committed") for rel in drift.missing]
    found += [(rel, "is committed but no longer rendered from the values") for rel in drift.stale]
    out = [
        Finding(
            "DRIFT001",
            f"committed {rel} {what}",
            Location(rel, *drift_line(committed.get(rel), tree.get(rel))),
            hint=hint,
            detail=drift.diffs.get(rel, ""),
        )
        for rel, what in found[:MAX_DRIFT_FINDINGS]
    ]
    if len(found) > MAX_DRIFT_FINDINGS:
        out.append(
            Finding(
                "DRIFT001",
                f"{len(found) - MAX_DRIFT_FINDINGS} more committed files "
                "differ from a fresh render",
                Location("overlays"),
                hint=hint,
            )
        )
    return out


def drift_line(committed: str | None, rendered: str | None) -> tuple[int, int]:
    """(line, column) of the committed file where it first differs from the render; (1, 1) for
    a file no longer rendered, (0, 0) for one not committed at all."""
    if committed is None:
        return 0, 0
    old, new = committed.splitlines(), (rendered or "").splitlines()
    if rendered is None or not old:
        return 1, 1
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    return min(first, len(old) - 1) + 1, 1
