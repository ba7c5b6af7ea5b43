"""`render --check` writes nothing: not the output, not validate's caches, not a roll-back."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fixtures import cli, snapshot, tree


def rendered(tmp_path: Path) -> Path:
    values = tree(tmp_path)
    code, out = cli("render", "--values", str(values))
    assert code == 0, out
    return values


def test_check_of_an_up_to_date_tree_writes_nothing(tmp_path: Path) -> None:
    values = rendered(tmp_path)
    shutil.rmtree(tmp_path / ".cache")  # the render's caches: --check must not write them
    before = snapshot(tmp_path)
    code, out = cli("render", "--check", "--values", str(values))
    assert code == 0, out
    assert "is up to date" in out
    assert snapshot(tmp_path) == before
    assert not (tmp_path / ".cache").exists()


def test_check_with_caches_leaves_them_as_they_were(tmp_path: Path) -> None:
    values = rendered(tmp_path)
    # A change the caches have not seen: a warm render would add entries for it.
    team = values / "teams" / "ml.yaml"
    team.write_text("quota:\n  nvidia: 2\n", encoding="utf-8")
    before = snapshot(tmp_path)
    code, out = cli("render", "--check", "--values", str(values))
    assert code == 1, out  # drift: the committed quota says 4
    assert "changed: base/teams/ml/" in out
    assert snapshot(tmp_path) == before


def test_check_reports_an_interrupted_render_without_rolling_it_back(tmp_path: Path) -> None:
    values = rendered(tmp_path)
    staging = tmp_path / ".render-interrupted"
    staging.mkdir()
    # The journal of a change that was about to create one file (writer.py's format).
    journal = '{"format": 1, "replace": [], "create": ["base/x.yaml"], "remove": [], '
    journal += '"mkdirs": [], "rmdirs": []}'
    (staging / "journal.json").write_text(journal, encoding="utf-8")
    (tmp_path / "base" / "x.yaml").write_text("half-written\n", encoding="utf-8")
    before = snapshot(tmp_path)
    code, out = cli("render", "--check", "--values", str(values))
    assert code == 1, out
    assert "an interrupted render left" in out and ".render-interrupted" in out
    assert snapshot(tmp_path) == before
    # A render (not --check) rolls it back and goes on.
    code, out = cli("render", "--values", str(values))
    assert code == 0, out
    assert not staging.exists()
    assert not (tmp_path / "base" / "x.yaml").exists()
