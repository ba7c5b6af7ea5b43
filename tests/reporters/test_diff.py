"""The diff report as Markdown (generator/reporters/diff.py): table cells escaped, and within
GitHub's size caps for a job summary and a comment."""

from __future__ import annotations

import io

from generator.delivery.diff import (
    DiffResult,
    ObjectDiff,
    Risk,
    field_changes,
)
from generator.reporters import diff as diffreport

# ---- Markdown: escaping and GitHub's size caps --------------------------------------------------


def _big_result(n: int) -> DiffResult:
    objects = []
    for i in range(n):
        d = ObjectDiff("prod", f"team-t{i % 50}", ("v1", "ConfigMap", "ns", f"cm-{i}"), "changed")
        d.changes = field_changes({"data": {"k": "a|b <x>" * 20}}, {"data": {"k": "c" * 200}})
        if i % 10 == 0:
            d.risks = [Risk("object-deleted", f"risk | {i} <b>")]
        objects.append(d)
    return DiffResult("main", "working tree", objects, 60)


def test_markdown_fits_a_job_summary_and_a_comment() -> None:
    result = _big_result(20_000)
    full = diffreport.markdown(_big_result(50))
    assert "Shortened" not in full and "cm-49" in full
    # GitHub's caps on a job summary (1 MiB) and a comment (65536), and a smaller one.
    for limit in (1024 * 1024, 65_536, 8192):
        md = diffreport.markdown(result, limit)
        assert len(md.encode()) <= limit
        assert f"Shortened to fit {limit} bytes" in md
        assert "**2000 risky changes**" in md  # the totals always stay
    # By default it fits a job summary, and units survive at 1 MiB.
    summary = diffreport.markdown(result)
    assert "Shortened to fit 1048576 bytes" in summary
    assert "<summary><code>prod/team-t0</code>" in summary


def test_markdown_escapes_table_cells() -> None:
    md = diffreport.markdown(_big_result(1))
    assert "| `object-deleted` | `prod/team-t0` | ConfigMap ns/cm-0 | risk \\| 0 &lt;b&gt; |" in md


def test_the_text_totals_say_one_thing_in_the_singular() -> None:
    one = _big_result(1)
    out = io.StringIO()
    diffreport.text(DiffResult("main", "working tree", one.objects, 1), out)
    assert out.getvalue().splitlines()[-1] == (
        "diff: 1 object in 1 of 1 unit (0 added, 0 removed, 1 changed); 1 risky change"
    )
    out = io.StringIO()
    diffreport.text(_big_result(20), out)
    assert out.getvalue().splitlines()[-1] == (
        "diff: 20 objects in 20 of 60 units (0 added, 0 removed, 20 changed); 2 risky changes"
    )
