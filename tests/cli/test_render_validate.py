"""`render --validate`: render, then validate what was written in the same process, the values
read and checked once. Its report must be the one `validate` gives on the same tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator.render import treeindex
from generator.validate import run as core
from generator.values import loader as values
from tests.fixtures import cli, spied_view_digests, two_teams

# A third team over-commits NVIDIA (fixtures.two_teams: 8 GPUs, overcommit allowed) further in
# every environment: one more values warning.
EXTRA_TEAM = "owners: [x@example.com]\nquota: {nvidia: 8}\n"


def findings_and_counts(report: str) -> tuple[list[str], str]:
    """The finding lines, and the units and objects of the closing line (cached units differ:
    the second run finds the first one's results)."""
    lines = [ln for ln in report.splitlines() if re.match(r"\S+:\d+:\d+: [A-Z]+\d+ ", ln)]
    counts = re.search(r"\(units (\d+), objects (\d+)", report)
    assert counts, report
    return lines, counts.group(0)


@pytest.mark.parametrize("env", [None, "prod"])
def test_render_validate_reports_what_validate_reports(tmp_path: Path, env: str | None) -> None:
    values_dir = two_teams(tmp_path)
    (values_dir / "teams/extra.yaml").write_text(EXTRA_TEAM)
    scope = ["--env", env] if env else []
    code, together = cli("render", "--values", str(values_dir), "--validate", *scope)
    assert code == 0, together
    assert together.startswith("rendered "), together
    code2, alone = cli("validate", "--values", str(values_dir), *scope)
    assert code2 == 0, alone
    got, want = findings_and_counts(together), findings_and_counts(alone)
    assert got == want
    assert any("CAP001" in ln and "extra 8" in ln for ln in got[0]), got
    assert got[1] != "(units 0, objects 0", got


def test_render_validate_reads_and_checks_the_values_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values_dir = two_teams(tmp_path)
    loads = []
    real_load = values.load_all  # what render's values stage reads the tree with

    def counting(*args: object, **kwargs: object) -> object:
        loads.append(1)
        return real_load(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(values, "load_all", counting)

    def refuse(*args: object) -> None:
        raise AssertionError("validate loaded or rendered the values again")

    monkeypatch.setattr(core, "_load", refuse)
    monkeypatch.setattr(core, "_render", refuse)
    # ... nor read back the tree render has just written: the committed tree is scanned once,
    # by render (render/treeindex.py), and validate takes what render wrote.
    scans = []
    real_scan = treeindex.scan

    def counting_scan(*args: object, **kwargs: object) -> object:
        scans.append(1)
        return real_scan(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(treeindex, "scan", counting_scan)
    code, out = cli("render", "--values", str(values_dir), "--validate")
    assert code == 0, out
    assert loads == [1]
    assert scans == [1]
    # One warning: NVIDIA quotas (12) over its 8 GPUs in prod, overcommit allowed (CAP001).
    assert "validate: 0 error(s), 1 warning(s)" in out


def test_render_validate_digests_each_view_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The views' digests render made for the checks' memo are the rules' memo's too: a view's
    canonical form (megabytes at 500 teams) is made once per run, not once more by validate."""
    values_dir = two_teams(tmp_path)
    made = spied_view_digests(monkeypatch)
    code, out = cli("render", "--values", str(values_dir), "--validate")
    assert code == 0, out
    # fixtures.two_teams: the base layer and the environments staging and prod
    assert sorted(made) == ["", "prod", "staging"]


def test_render_validate_stops_at_values_errors(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    (values_dir / "teams/extra.yaml").write_text("quota: {nvidia: -1}\n")
    code, out = cli("render", "--values", str(values_dir), "--validate")
    assert code == 1, out
    assert "values/teams/extra.yaml" in out
    assert "validate:" not in out  # nothing was written, so there is nothing new to validate


def test_render_check_and_validate_exclude_each_other(tmp_path: Path) -> None:
    values_dir = two_teams(tmp_path)
    code, out = cli("render", "--values", str(values_dir), "--check", "--validate")
    assert code == 2
    assert "--check and --validate exclude each other" in out
